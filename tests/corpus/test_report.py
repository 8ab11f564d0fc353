"""The table: one row per file with its failure classes, totals per application and for all."""

from __future__ import annotations

from cadmcp.corpus.report import as_json, failure_classes, row, totals, totals_table
from cadmcp.corpus.runner import FileResult, Picture


def _good(path: str, app: str) -> FileResult:
    r = FileResult(path, app, 2048, launched=True, opened=True, listed=True, changed=True)
    r.pictures = [Picture("default", ok=True, blank=False, share=0.2, cells=120)]
    r.undo_exact = r.reopen_exact = True
    return r


def test_a_file_that_passed_every_step_has_no_failure_class() -> None:
    r = _good("/m/plan.dxf", "dxf")
    assert r.failures() == []
    assert row(r).split()[:7] == ["dxf", "plan.dxf", "2", "ok", "1/1", "ok", "ok"]


def test_each_failure_is_a_class_and_counts_in_its_application() -> None:
    refused = FileResult("/m/road.ifc", "ifc", 10, launch_error="Unsupported schema IFC4X3_RC2")
    ready_not_open = FileResult("/m/b.ifc", "ifc", 10, launched=True, context_error="no model")
    blank = _good("/m/far.dxf", "dxf")
    blank.pictures = [Picture("default", ok=True, blank=True, share=0.0, cells=0)]
    explained = _good("/m/acis.dxf", "dxf")
    explained.pictures = [Picture("default", ok=True, blank=True, note="3 ACIS solids cannot be drawn")]
    stale = _good("/m/arch.FCStd", "freecad")
    stale.undo_exact, stale.undo_diff = False, "1 changed (objects:Sketch)"
    results = [refused, ready_not_open, blank, explained, stale]

    assert refused.failures() == ["launch refused"]
    assert ready_not_open.failures() == ["ready but failed"]
    assert blank.failures() == ["blank default picture"]
    assert explained.failures() == []
    assert stale.failures() == ["undo inexact"]
    by_app = totals(results)
    assert (by_app["ifc"].refused, by_app["ifc"].ready_but_failed, by_app["ifc"].opened) == (1, 1, 0)
    assert (by_app["dxf"].blank_unexplained, by_app["dxf"].blank_explained) == (1, 1)
    assert (by_app["freecad"].changed, by_app["freecad"].undo_exact) == (1, 0)
    assert by_app["all"].files == 5
    assert failure_classes(results)["freecad: undo inexact"] == ["/m/arch.FCStd"]
    assert "ready-but-failed" in totals_table(by_app)
    data = as_json(results)
    assert data["totals"]["dxf"]["blank_unexplained"] == 1
    assert data["files"][0]["failures"] == ["launch refused"]
    assert "Unsupported schema" in row(refused)


def test_a_file_opened_with_a_warning_is_rated_warn_and_counted() -> None:
    cut = _good("/m/cut.dxf", "dxf")
    cut.warnings = ["cut.dxf looks cut short: it ends without the closing EOF tag of DXF"]
    whole = _good("/m/plan.dxf", "dxf")

    assert row(cut).split()[3] == "warn" and "warned: cut.dxf looks cut short" in row(cut)
    assert row(whole).split()[3] == "ok"
    assert cut.failures() == []  # the product said so: a fault of the file, not of cadmcp
    assert (totals([cut, whole])["dxf"].opened, totals([cut, whole])["dxf"].warned) == (2, 1)
    assert "opened, warned" in totals_table(totals([cut, whole]))

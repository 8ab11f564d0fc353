"""Each failure class the corpus found, reproduced on a generated file of the same shape and run
through the corpus runner (real daemon, real hosts). A test marked xfail is a class still open on
main: when it is fixed, the strict mark fails and is to be removed."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cadmcp.corpus.files import find
from cadmcp.corpus.runner import FileResult, Settings, run_all
from tests.conftest import require_component
from tests.corpus import shapes

pytestmark = pytest.mark.timeout(900)  # the module's files are generated and run once, in the first test

CLASSES: dict[str, tuple[str, Callable[[Path], Path], bool]] = {
    # name: (file name, maker, needs FreeCAD)
    "freecad-undo-dependent-sketch": ("dependent.FCStd", shapes.dependent_sketch, True),
    "freecad-undo-saved-outputs": ("saved-outputs.FCStd", shapes.saved_outputs, True),
    "freecad-reopen-included-template": ("drawing.FCStd", shapes.drawing_template, True),
    "dxf-acis-only-picture": ("solids.dxf", shapes.acis_solids, False),
    "dxf-points-only-picture": ("points.dxf", shapes.points_only, False),
    "dxf-entity-without-layer": ("section-object.dxf", shapes.entity_without_layer, False),
    "dxf-release-before-r12-save": ("r2-10.dxf", shapes.release_before_r12, False),
    "ifc-no-project-context": ("geometry-only.ifc", shapes.ifc_without_project, False),
    "ifc-4x3-rc2-launch": ("road-rc2.ifc", shapes.ifc4x3_rc2_road, False),
}


@pytest.fixture(scope="module")
def results() -> Iterator[dict[str, FileResult]]:
    """Every class file, generated and run once for the module."""
    folder = Path(tempfile.mkdtemp(prefix="cadmcp-classes-"))
    runtime = Path(tempfile.mkdtemp(prefix="cmt"))
    runtime.chmod(0o700)
    has_freecad = shutil.which("freecadcmd") is not None
    made: dict[str, Path] = {}
    for name, (file_name, make, needs_freecad) in CLASSES.items():
        if needs_freecad and not has_freecad:
            continue
        made[name] = make(folder / file_name).resolve()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CADMCP_RUNTIME_DIR", str(runtime))
        ran = run_all(find(list(made.values())), Settings(launch_timeout=120, call_timeout=180, jobs=2))
    by_path = {Path(r.path): r for r in ran}
    yield {name: by_path[path] for name, path in made.items()}
    shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree(runtime, ignore_errors=True)


def _result(results: dict[str, FileResult], name: str) -> FileResult:
    if name not in results:
        require_component("freecad", "FreeCAD is not installed (bash .ci/deps/freecad.sh)")
    return results[name]


def test_undo_restores_a_sketch_that_follows_another_sketchs_edge(results: dict[str, FileResult]) -> None:
    r = _result(results, "freecad-undo-dependent-sketch")
    assert r.opened and r.changed, r
    assert r.undo_exact, r.undo_diff
    assert r.failures() == []


def test_undo_gives_back_saved_values_that_a_recompute_would_change(results: dict[str, FileResult]) -> None:
    r = _result(results, "freecad-undo-saved-outputs")
    assert r.opened and r.changed, r
    assert r.undo_exact, r.undo_diff
    assert r.reopen_exact, r.reopen_diff
    assert r.failures() == []


def test_a_reopened_drawing_page_names_its_template_the_same_way(results: dict[str, FileResult]) -> None:
    r = _result(results, "freecad-reopen-included-template")
    assert r.opened and r.save_error is None, r
    assert r.reopen_exact, r.reopen_diff


def test_a_drawing_of_acis_solids_is_drawn_or_says_why_not(results: dict[str, FileResult]) -> None:
    r = _result(results, "dxf-acis-only-picture")
    assert r.opened, r
    assert not any(p.unexplained_blank for p in r.pictures), r.pictures
    assert r.failures() == []


def test_a_drawing_of_points_only_is_drawn_or_says_why_not(results: dict[str, FileResult]) -> None:
    r = _result(results, "dxf-points-only-picture")
    assert r.opened, r
    assert not any(p.unexplained_blank for p in r.pictures), r.pictures
    assert r.failures() == []


def test_a_drawing_with_an_entity_that_has_no_layer_answers_every_step(
    results: dict[str, FileResult],
) -> None:
    r = _result(results, "dxf-entity-without-layer")
    assert r.launched and r.opened, r.launch_error or r.context_error
    assert r.context_error is None, r.context_error
    assert r.failures() == []


def test_a_drawing_of_release_r2_10_saves_and_reopens_as_it_was(results: dict[str, FileResult]) -> None:
    r = _result(results, "dxf-release-before-r12-save")
    assert r.opened and r.changed and r.undo_exact, r
    assert r.save_error is None, r.save_error
    assert r.reopen_exact, r.reopen_diff
    assert r.failures() == []


def test_an_ifc_without_a_project_answers_its_model_context(results: dict[str, FileResult]) -> None:
    r = _result(results, "ifc-no-project-context")
    assert r.launched and r.listed, r
    assert r.context_error is None, r.context_error
    assert not any(p.unexplained_blank for p in r.pictures), r.pictures


def test_an_ifc4x3_release_candidate_model_opens_and_passes_every_step(
    results: dict[str, FileResult],
) -> None:
    r = _result(results, "ifc-4x3-rc2-launch")
    assert r.launched and r.opened, r.launch_error or r.context_error or r.dump_error
    assert r.failures() == []

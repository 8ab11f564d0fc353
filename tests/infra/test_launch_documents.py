"""launch_host answers per document through a real daemon and real hosts: a document that did not
open is never `ready`, a schema variant opens with its release's schema and says so, and a file
already open in a host answers that host unless a second copy is asked for."""

from __future__ import annotations

import json
import re
import shutil
import zipfile
from pathlib import Path
from typing import Any

import anyio
import ezdxf
import pytest

from tests.core.helpers import call, find, structured, wait_gone

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


def _ifc(path: Path, schema: str, extra: str = "") -> Path:
    """A small IFC4X3 road-like model whose header names ``schema`` (plus raw ``extra`` instances)."""
    import ifcopenshell.api

    f = ifcopenshell.api.run("project.create_file", version="IFC4X3_ADD2")
    project = ifcopenshell.api.run("root.create_entity", f, ifc_class="IfcProject", name="Road")
    ifcopenshell.api.run("unit.assign_unit", f)
    site = ifcopenshell.api.run("root.create_entity", f, ifc_class="IfcSite", name="Site")
    ifcopenshell.api.run("aggregate.assign_object", f, products=[site], relating_object=project)
    for name in ("Barrier 1", "Barrier 2"):
        wall = ifcopenshell.api.run("root.create_entity", f, ifc_class="IfcWall", name=name)
        ifcopenshell.api.run("spatial.assign_container", f, products=[wall], relating_structure=site)
    text = f.to_string().replace("'IFC4X3_ADD2'", f"'{schema}'")
    text = text.replace("ENDSEC;\nEND-ISO", f"{extra}ENDSEC;\nEND-ISO", 1)
    path.write_text(text)
    return path


async def _python(session: Any, host: str, code: str) -> str:
    (run,) = [
        i
        for i in await find(session, "execute python code", hostInstanceId=host)
        if i["target"] == "execute_python_code"
    ]
    result = await call(session, "invoke_dynamic", {"id": run["id"], "arguments": {"code": code}})
    assert not result.is_error, _text(result)
    return _text(result)


async def _tool(session: Any, host: str, target: str, arguments: dict[str, Any]) -> Any:
    items = await find(session, target.replace("_", " "), hostInstanceId=host, limit=32)
    (item,) = [i for i in items if i["target"] == target]
    return await call(session, "invoke_dynamic", {"id": item["id"], "arguments": arguments})


async def test_a_release_variant_of_ifc4x3_opens_with_its_release_and_says_what_was_mapped(
    infra_daemon: Any, tmp_path: Path
) -> None:
    road = _ifc(tmp_path / "road.ifc", "IFC4X3_RC2", "#9000=IFCALIGNMENT2DHORIZONTAL($,$);\n")
    async with infra_daemon() as session:
        answer = await structured(session, "launch_host", {"filePath": str(road)})
        assert answer["phase"] == "ready" and answer["hostApp"] == "IFC"
        (document,) = answer["documents"]
        assert document["opened"] is True and document["title"] == "road.ifc"
        (warning,) = document["warnings"]
        assert "IFC4X3_RC2" in warning and "read as IFC4X3_ADD2" in warning
        assert "IFCALIGNMENT2DHORIZONTAL x1" in warning and "Saving writes it as IFC4X3_ADD2" in warning
        assert "it is not saved over the file" in warning
        # the model answers, with what was read
        host = answer["hostInstanceId"]
        out = await _python(session, host, "sorted(w.Name for w in model.by_type('IfcWall'))")
        assert "['Barrier 1', 'Barrier 2']" in out
        # KIT's road model: a save over it wrote none of its 66 style assignments, said nothing
        before = road.read_bytes()
        refused = await _tool(session, host, "save_document", {})
        said = _text(refused)
        assert refused.is_error and "read without part of it" in said and "1 instance(s) not loaded" in said
        assert road.read_bytes() == before
        elsewhere = await _tool(session, host, "save_document", {"filePath": str(tmp_path / "road-2.ifc")})
        assert not elsewhere.is_error and "Not written: 1 instance(s) not loaded" in _text(elsewhere)


async def test_a_schema_no_library_reads_is_refused_naming_what_is_read_and_the_host_stops(
    infra_daemon: Any, tmp_path: Path
) -> None:
    old = _ifc(tmp_path / "bridge.ifc", "IFC4X1")
    async with infra_daemon() as session:
        result = await call(session, "launch_host", {"filePath": str(old)})
        assert result.is_error
        body = result.structured_content
        assert body["type"] == "document_not_opened" and body["hostRunning"] is False
        assert body["supported"] == ["IFC2X3", "IFC4", "IFC4X3_ADD2"]
        (document,) = body["documents"]
        assert document["opened"] is False and document["supported"] == ["IFC2X3", "IFC4", "IFC4X3_ADD2"]
        assert "IFC4X1" in body["message"] and "not damaged" in body["message"]
        assert "Export the model again as IFC2X3 or IFC4 or IFC4X3_ADD2" in document["fix"]
        assert "ready" not in body.get("phase", "")
        assert wait_gone(body["pid"]), "a host with nothing open was left running"
        with anyio.fail_after(10):
            while (await structured(session, "list_host_instances"))["count"]:
                await anyio.sleep(0.1)


async def test_a_drawing_that_fails_to_load_is_an_error_not_ready(infra_daemon: Any, tmp_path: Path) -> None:
    broken = tmp_path / "broken.dxf"
    broken.write_bytes(b"  0\nSECTION\n  2\nHEADER\n" + b"X" * 5000 + b"\n0\nEOF\n")
    async with infra_daemon() as session:
        result = await call(session, "launch_host", {"filePath": str(broken)})
        assert result.is_error, _text(result)
        body = result.structured_content
        assert body["type"] == "document_not_opened" and body["hostApp"] == "DXF"
        (document,) = body["documents"]
        assert document["opened"] is False and "not a readable DXF file" in document["problem"]
        assert "broken.dxf" in body["message"] and "The host was stopped" in body["message"]
        assert wait_gone(body["pid"])


async def test_a_file_refused_before_loading_is_document_not_opened_naming_what_the_host_opens(
    infra_daemon: Any, tmp_path: Path
) -> None:
    fake = tmp_path / "notes.ifc"
    fake.write_text("these are my notes, not a model\n" * 20)
    async with infra_daemon() as session:
        result = await call(session, "launch_host", {"filePath": str(fake)})
        assert result.is_error
        body = result.structured_content
        assert body["type"] == "document_not_opened" and body["hostRunning"] is False
        (document,) = body["documents"]
        assert document["opened"] is False and "not an IFC-SPF file" in document["problem"]
        assert body["supported"] == [".ifc"] and "notes.ifc" in body["message"]


@pytest.mark.skipif(
    shutil.which("freecadcmd") is None, reason="FreeCAD is not installed (bash .ci/deps/freecad.sh)"
)
async def test_a_freecad_document_that_does_not_open_is_an_error_not_ready(
    infra_daemon: Any, tmp_path: Path
) -> None:
    part = tmp_path / "part.FCStd"
    with zipfile.ZipFile(part, "w") as archive:  # a zip with Document.xml, but no FreeCAD document
        archive.writestr("Document.xml", "<Document><Properties Count='")
    async with infra_daemon() as session:
        result = await call(session, "launch_host", {"filePath": str(part), "timeoutSeconds": 300})
        assert result.is_error, _text(result)
        body = result.structured_content
        assert body["type"] == "document_not_opened" and body["hostApp"] == "FreeCAD"
        (document,) = body["documents"]
        assert document["opened"] is False and "damaged" in document["problem"]
        assert "part.FCStd" in body["message"] and ".fcstd" in body["supported"]
        assert wait_gone(body["pid"], 30)


async def test_one_host_per_file_unless_a_second_copy_is_asked_for_and_saves_never_overwrite_silently(
    infra_daemon: Any, tmp_path: Path
) -> None:
    drawing = ezdxf.new("R2018")
    drawing.modelspace().add_line((0, 0), (5, 0))
    plan = tmp_path / "plan.dxf"
    drawing.saveas(plan)
    (tmp_path / "link").mkdir()
    alias = tmp_path / "link" / "plan.dxf"
    alias.symlink_to(plan)
    async with infra_daemon() as session:
        answers: list[dict[str, Any]] = []

        async def launch(path: Path) -> None:
            answers.append(await structured(session, "launch_host", {"filePath": str(path)}))

        async with anyio.create_task_group() as tg:  # at once: the second waits and finds the first
            tg.start_soon(launch, plan)
            tg.start_soon(launch, alias)
        first = next(a for a in answers if not a.get("alreadyOpen"))
        again = next(a for a in answers if a.get("alreadyOpen"))
        assert again["hostInstanceId"] == first["hostInstanceId"] and again["pid"] == first["pid"]
        assert "already open" in again["note"] and "newInstance" in again["note"]
        assert (await structured(session, "list_host_instances"))["count"] == 1

        second = await structured(session, "launch_host", {"filePath": str(plan), "newInstance": True})
        assert second["pid"] != first["pid"] and second["otherCopies"] == [first["hostInstanceId"]]
        assert "second copy" in second["warning"]
        assert (await structured(session, "list_host_instances"))["count"] == 2

        # the first copy saves a change; the second copy's save in place is refused, nothing written
        await _python(session, first["hostInstanceId"], "msp.add_circle((0, 0), 1)")
        saved = await _tool(session, first["hostInstanceId"], "save_document", {})
        assert not saved.is_error, _text(saved)
        await _python(session, second["hostInstanceId"], "msp.add_line((0, 0), (0, 9))")
        refused = await _tool(session, second["hostInstanceId"], "save_document", {})
        assert refused.is_error and "changed on disk" in _text(refused)
        assert "CIRCLE" in {e.dxftype() for e in ezdxf.readfile(plan).modelspace()}
        forced = await _tool(session, second["hostInstanceId"], "save_document", {"filePath": str(plan)})
        assert not forced.is_error, _text(forced)
        kinds = [e.dxftype() for e in ezdxf.readfile(plan).modelspace()]
        assert kinds.count("LINE") == 2 and "CIRCLE" not in kinds  # replaced on purpose
        assert re.search(r"Saved as .*plan\.dxf", _text(forced))


async def test_a_dwg_cut_short_is_not_opened_and_the_launch_says_so_for_certain(
    infra_daemon: Any, infra_env: Any, tmp_path: Path
) -> None:
    """The DXF host's converter fails on a cut DWG and can only say it "may be damaged or cut short";
    the daemon checks the file's length as read_file_info does and says what it found."""
    from tests.hosts.dxf.dwg_helpers import READER_ENV, require_reader, write_pair

    infra_env.extra[READER_ENV] = str(require_reader())
    dwg, _ = write_pair(tmp_path)
    half = tmp_path / "half.dwg"
    half.write_bytes(dwg.read_bytes()[: dwg.stat().st_size // 2])
    async with infra_daemon() as session:
        failed = await call(session, "launch_host", {"filePath": str(half), "timeoutSeconds": 90})
        body = failed.structured_content
        assert failed.is_error and body["type"] == "document_not_opened", body
        (document,) = body["documents"]
        assert (
            document["cutShort"] is True
            and "is a DWG drawing (R2000, AC1015) cut short" in document["problem"]
        )
        assert "may be damaged" not in body["message"] and "cut short: it is " in body["message"], body


async def test_a_fresh_daemons_first_call_launching_an_open_file_finds_the_running_host(
    infra_daemon: Any, tmp_path: Path
) -> None:
    """Each AI client starts its own daemon, and its first call is often launch_host: the file some
    host already has open is found there, not opened in a second copy before discovery caught up."""
    plan = tmp_path / "plan.dxf"
    ezdxf.new("R2018").saveas(plan)
    async with infra_daemon() as first_client:
        first = await structured(first_client, "launch_host", {"filePath": str(plan)})
        for _ in range(3):
            async with infra_daemon() as second_client:
                again = await structured(second_client, "launch_host", {"filePath": str(plan)})
                assert again.get("alreadyOpen") and again["pid"] == first["pid"], again
                assert (await structured(second_client, "list_host_instances"))["count"] == 1


async def _screenshot(session: Any, host: str) -> tuple[bytes, str]:
    result = await _tool(session, host, "view_screenshot", {"width": 400})
    assert not result.is_error, _text(result)
    image = next(c for c in result.content if c.type == "image")
    return image.data, _text(result)


async def test_a_view_asked_before_the_geometry_is_prepared_answers_at_once_and_names_what_it_lacks(
    infra_daemon: Any, infra_env: Any, tmp_path: Path
) -> None:
    from cadmcp.hosts.ifc.modelgen import build_office

    office = tmp_path / "office.ifc"
    build_office(1, 4).write(str(office))
    infra_env.extra = {"CADMCP_SCREENSHOT_BUDGET": "0", "CADMCP_WARM_UP": "0"}  # nothing prepared, no time
    async with infra_daemon() as session:
        host = (await structured(session, "launch_host", {"filePath": str(office)}))["hostInstanceId"]
        blank, said = await _screenshot(session, host)
        assert "[INCOMPLETE VIEW]" in said and "IfcWall" in said and "IfcDoor" in said
        assert "Call view_screenshot again" in said and "CADMCP_SCREENSHOT_BUDGET" in said
    infra_env.extra = {"CADMCP_SCREENSHOT_BUDGET": "0"}  # no time, but the warm-up prepares it
    async with infra_daemon() as session:
        host = (await structured(session, "launch_host", {"filePath": str(office)}))["hostInstanceId"]
        with anyio.fail_after(120):
            while True:
                (entry,) = (await structured(session, "list_host_instances"))["hosts"]
                if entry["state"]["phase"] == "ready" and "warmingUp" not in entry["state"]:
                    break
                await anyio.sleep(0.2)
        whole, said = await _screenshot(session, host)
        assert "[INCOMPLETE VIEW]" not in said and whole != blank


def _cut_short(source: Path, target: Path, share: float) -> Path:
    """A copy of `source` that stops part way, as a copy or a download that broke off does: at the
    start of the line where `share` of it is reached, and for DXF at the start of a group (a group
    cut in half is refused as unreadable, which is another test's)."""
    data = source.read_bytes()
    cut = data.rfind(b"\n", 0, int(len(data) * share)) + 1
    if source.suffix == ".dxf":
        cut = data.rfind(b"\n  0\n", 0, cut) + 1  # a group starts with its code line
    target.write_bytes(data[:cut])
    return target


@pytest.mark.parametrize("kind", ["dxf", "ifc"])
async def test_a_file_cut_short_opens_saying_so_and_is_never_saved_over(
    infra_daemon: Any, tmp_path: Path, kind: str
) -> None:
    """The reader takes what is there, so a cut-short file opens; the launch says it looks cut short,
    and a save in place (which would throw away what could not be read) is refused."""
    if kind == "dxf":
        drawing = ezdxf.new("R2018")
        for n in range(400):
            drawing.modelspace().add_line((0, n), (10, n))
        whole = tmp_path / "whole.dxf"
        drawing.saveas(whole)
    else:
        from cadmcp.hosts.ifc.modelgen import build_office

        whole = tmp_path / "whole.ifc"
        build_office(1, 4).write(str(whole))
    cut = _cut_short(whole, tmp_path / f"cut.{kind}", 0.8)
    size = cut.stat().st_size
    async with infra_daemon() as session:
        answer = await structured(session, "launch_host", {"filePath": str(cut)})
        said = str(answer)
        assert "looks cut short" in said and "will not be saved over" in said, answer
        host = answer["hostInstanceId"]
        refused = await _tool(session, host, "save_document", {})
        assert refused.is_error and "looked cut short when it was read" in _text(refused), _text(refused)
        assert cut.stat().st_size == size  # nothing written
        elsewhere = tmp_path / f"kept.{kind}"
        saved = await _tool(session, host, "save_document", {"filePath": str(elsewhere)})
        assert not saved.is_error, _text(saved)
        again = await _tool(session, host, "save_document", {})  # the new file is its own: saved in place
        assert not again.is_error, _text(again)
        whole_answer = await structured(session, "launch_host", {"filePath": str(whole)})
        assert "cut short" not in str(whole_answer)


async def test_unsaved_changes_are_kept_as_a_copy_when_the_client_closes(
    infra_daemon: Any, infra_env: Any, tmp_path: Path
) -> None:
    """A host the daemon launched stops with it (the AI client closed): a document with unsaved
    changes is saved as a copy in the recovery folder first; the file opened is left as it was."""
    drawing = ezdxf.new("R2018")
    drawing.modelspace().add_line((0, 0), (5, 0))
    plan = tmp_path / "plan.dxf"
    drawing.saveas(plan)
    before = plan.read_bytes()
    recovered = tmp_path / "recovered"
    infra_env.extra = {"CADMCP_RECOVERY_DIR": str(recovered)}
    async with infra_daemon() as session:
        answer = await structured(session, "launch_host", {"filePath": str(plan)})
        await _python(session, answer["hostInstanceId"], "for n in range(50): msp.add_circle((n, 0), 1)")
        pid = answer["pid"]
    assert wait_gone(pid, 30)
    (copy,) = recovered.glob("plan-unsaved-*.dxf")
    assert [e.dxftype() for e in ezdxf.readfile(copy).modelspace()].count("CIRCLE") == 50
    assert plan.read_bytes() == before
    assert not list(recovered.glob("*.partial*"))


async def test_the_listing_agrees_with_a_call_as_soon_as_it_answers(
    infra_daemon: Any, tmp_path: Path
) -> None:
    """A save-as changes the host's document: list_host_instances says so the moment the call has
    answered (the answer carries the host's state), not a host listing later."""
    drawing = ezdxf.new("R2018")
    drawing.modelspace().add_line((0, 0), (5, 0))
    plan = tmp_path / "plan.dxf"
    drawing.saveas(plan)
    moved = tmp_path / "moved.dxf"
    async with infra_daemon() as session:
        host = (await structured(session, "launch_host", {"filePath": str(plan)}))["hostInstanceId"]
        for n in range(5):  # the listing could lag any of them: check each at once
            await _python(session, host, f"msp.add_circle(({n}, 0), 1)")
            target = moved.with_name(f"moved{n}.dxf")
            saved = await _tool(session, host, "save_document", {"filePath": str(target)})
            assert not saved.is_error, _text(saved)
            assert "io.cadmcp/hostState" not in json.dumps(saved.model_dump(by_alias=True, mode="json"))
            (listed,) = (await structured(session, "list_host_instances"))["hosts"]
            (document,) = listed["state"]["documents"]
            assert document["path"] == str(target.resolve()) and document["modified"] is False, document


async def test_a_restart_says_which_unsaved_changes_were_kept_as_copies(
    infra_daemon: Any, infra_env: Any, tmp_path: Path
) -> None:
    drawing = ezdxf.new("R2018")
    plan = tmp_path / "plan.dxf"
    drawing.saveas(plan)
    recovered = tmp_path / "recovered"
    infra_env.extra = {"CADMCP_RECOVERY_DIR": str(recovered)}
    async with infra_daemon() as session:
        answer = await structured(session, "launch_host", {"filePath": str(plan)})
        await _python(session, answer["hostInstanceId"], "msp.add_circle((0, 0), 1)")
        restarted = await structured(
            session, "launch_host", {"restartHostInstanceId": answer["hostInstanceId"]}
        )
        assert restarted["unsavedChangesLost"] == [], restarted
        copy = Path(restarted["unsavedChangesKept"]["plan.dxf"])
        assert copy.parent == recovered and "CIRCLE" in {
            e.dxftype() for e in ezdxf.readfile(copy).modelspace()
        }

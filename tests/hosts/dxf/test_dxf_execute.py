"""execute_python_code on the live drawing: output, undo steps, rollback, timeout, dependencies."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
from dxf_helpers import export_tags, text_of
from mcp import Client

from cadmcp.host import scriptdeps
from cadmcp.hosts.dxf.documents import DocumentSet
from cadmcp.hosts.dxf.execution import execute

pytestmark = pytest.mark.anyio


async def test_output_and_value_with_doc_msp_ezdxf_in_scope(client: Client) -> None:
    result = await client.call_tool(
        "execute_python_code",
        {"code": "print(doc.dxfversion, bool(ezdxf.__version__))\nlen(msp.query('INSERT[name==\"DOOR\"]'))"},
    )
    text = text_of(result)
    assert not result.is_error
    assert "AC1032 True" in text and "Result: 4" in text
    assert "[UNDO STEP]" not in text  # read-only code records nothing
    history = await client.call_tool("navigate_history", {"direction": "back"})
    assert history.structured_content["navigated"] == 0
    assert history.structured_content["message"].startswith("Nothing to undo")


async def test_mutation_is_one_named_undo_step_and_redo_reapplies(client: Client) -> None:
    code = "msp.add_line((0, 0), (100, 0), dxfattribs={'layer': 'NEW'})\ndoc.layers.add('NEW')\nlen(msp)"
    result = await client.call_tool("execute_python_code", {"code": code, "description": "Add a line"})
    assert "[UNDO STEP] Recorded 'Add a line'" in text_of(result)
    count = "len(msp), 'NEW' in doc.layers"
    assert "Result: (42, True)" in text_of(await client.call_tool("execute_python_code", {"code": count}))
    back = (await client.call_tool("navigate_history", {"direction": "back", "steps": 5})).structured_content
    assert back == {
        "direction": "back",
        "navigated": 1,
        "operations": ["Add a line"],
        "back_remaining": 0,
        "forward_available": 1,
        "depth": 64,
        "dropped": 0,
        "message": "Undid 1 step: Add a line. Now 0 steps can be undone, 1 redone.",
    }
    assert "Result: (41, False)" in text_of(await client.call_tool("execute_python_code", {"code": count}))
    forward = (await client.call_tool("navigate_history", {"direction": "forward"})).structured_content
    assert forward["operations"] == ["Add a line"] and forward["back_remaining"] == 1
    assert "Result: (42, True)" in text_of(await client.call_tool("execute_python_code", {"code": count}))
    nothing = (await client.call_tool("navigate_history", {"direction": "forward"})).structured_content
    assert nothing["navigated"] == 0 and nothing["message"].startswith("Nothing to redo")


async def test_bad_history_arguments_are_errors(client: Client) -> None:
    result = await client.call_tool("navigate_history", {"direction": "back", "steps": 0})
    assert result.is_error and "greater than or equal to 1" in text_of(result)  # the schema says it


def test_raising_script_leaves_document_unchanged(sample_path: Path) -> None:
    documents = DocumentSet()
    entry = documents.open(str(sample_path))
    before = export_tags(entry.doc)
    code = (
        "door = msp.query('INSERT[name==\"DOOR\"]')[0]\n"
        "door.get_attrib('NUMBER').dxf.text = 'CHANGED'\n"
        "msp.delete_entity(msp.query('LWPOLYLINE')[0])\n"
        "doc.layers.add('TEMP')\n"
        "msp.add_circle((0, 0), 5)\n"
        "raise ValueError('halfway')\n"
    )
    result = execute(entry, code, None, 5)
    assert result.status == "runtime_error"
    assert "ValueError: halfway" in result.text() and "[ROLLBACK]" in result.text()
    assert export_tags(entry.doc) == before
    assert entry.history.back_remaining == 0


def test_runaway_script_times_out_and_rolls_back(sample_path: Path) -> None:
    documents = DocumentSet()
    entry = documents.open(str(sample_path))
    before = export_tags(entry.doc)
    code = "for i in range(10**9):\n    msp.add_point((i, 0))\n"
    result = execute(entry, code, "endless points", 0.5)
    assert result.status == "timeout"
    assert "[TIMEOUT]" in result.text() and "CADMCP_EXEC_TIMEOUT" in result.text()
    assert "[ROLLBACK]" in result.text()
    assert export_tags(entry.doc) == before


async def test_syntax_error_is_reported(client: Client) -> None:
    result = await client.call_tool("execute_python_code", {"code": "msp.add_line((0,0) (1,1)"})
    assert result.is_error and text_of(result).startswith("[SYNTAX ERROR]")


@pytest.mark.slow
def test_pep723_dependency_is_available_to_the_script(
    sample_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scriptdeps, "cache_root", lambda: tmp_path / "deps")
    monkeypatch.delitem(sys.modules, "six", raising=False)  # imported modules outlive a run
    entry = DocumentSet().open(str(sample_path))
    code = (
        '# /// script\n# dependencies = ["six==1.16.0"]\n# ///\n'
        "import six\nmsp.add_text(six.ensure_str(b'from six'))\nsix.__version__\n"
    )
    result = execute(entry, code, None, 60)
    assert not result.is_error, result.text()
    assert result.value == "1.16.0"
    assert any(t.dxf.text == "from six" for t in entry.doc.modelspace().query("TEXT"))
    bad = execute(
        entry, '# /// script\n# dependencies = ["cadmcp-no-such-package-xyz==9.9"]\n# ///\n1\n', None, 60
    )
    assert bad.status == "dependency_error" and bad.text().startswith("[DEPENDENCY ERROR]")


async def test_toolset_edits_in_a_transaction_are_undoable(sample_path: Path) -> None:
    from mcp import Client

    from cadmcp.hosts.dxf import create_server

    server = create_server([str(sample_path)])
    documents = server.application
    before = export_tags(documents.active.doc)
    with documents.transaction("Toolset: add marker") as entry:
        entry.doc.modelspace().add_circle((0, 0), 42)
    with pytest.raises(RuntimeError), documents.transaction("Toolset: broken"):
        documents.active.doc.modelspace().add_circle((0, 0), 43)
        raise RuntimeError("toolset bug")
    async with Client(server.server) as client:
        back = (await client.call_tool("navigate_history", {"direction": "back"})).structured_content
    assert back["operations"] == ["Toolset: add marker"]
    assert export_tags(documents.active.doc) == before


async def test_a_steps_checkpoint_names_the_entities_it_created_modified_and_deleted(client: Client) -> None:
    code = (
        "first, second = list(msp)[:2]\n"
        "first.dxf.color = 3\n"
        "gone = second.dxf.handle\n"
        "msp.delete_entity(second)\n"
        "doc.layers.add('ONLY_A_TABLE_ENTRY')\n"
        "(msp.add_circle((5, 5), 2).dxf.handle, first.dxf.handle, gone)"
    )
    result = await client.call_tool("execute_python_code", {"code": code})
    assert not result.is_error, text_of(result)
    created, modified, deleted = ast.literal_eval(text_of(result).split("Result: ", 1)[1].split("\n", 1)[0])
    mark = result.meta["io.cadmcp/checkpoint"]
    assert mark["added"] == 1
    assert mark["touched"] == {
        "created": {"count": 1, "ids": [created]},
        "modified": {"count": 1, "ids": [modified]},
        "deleted": {"count": 1, "ids": [deleted]},
    }  # the layer is no entity a view draws: not named
    shot = await client.call_tool("view_screenshot", {"width": 400, "mark": [created, modified, "NOPE"]})
    assert shot.structured_content["marked"] == sorted([created, modified])
    said = " ".join(c.text for c in shot.content if c.type == "text")
    assert "[NOT MARKED] no entity has the handle NOPE" in said, said
    read = await client.call_tool("execute_python_code", {"code": "len(msp)"})
    assert "touched" not in read.meta["io.cadmcp/checkpoint"]  # no step, nothing touched

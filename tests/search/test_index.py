"""The index's bookkeeping: per-host replace/remove, filters, listing, zero-hit guidance."""

from __future__ import annotations

import pytest

from cadmcp.daemon.search import SearchIndex, capability_docs

from .conftest import cad_docs, tool


def test_replace_host_reindexes_that_host_only(index: SearchIndex) -> None:
    assert len(index) == 16
    index.replace_host("dxf-1", [tool("purge_unused", "Remove unused blocks.", host="dxf-1")])
    assert len(index) == 9
    assert [d.name for d in index.search("undo", host_key="dxf-1").hits] == []
    assert index.search("undo", host_key="ifc-1").hits[0].name == "navigate_history"
    assert index.search("purge").hits[0].host_key == "dxf-1"


def test_remove_host_drops_its_capabilities_and_term_statistics(index: SearchIndex) -> None:
    index.replace_host("x", [tool("frobnicate", "Frobnicate widgets.", host="x")])
    index.remove_host("x")
    index.remove_host("never-there")
    assert len(index) == 16
    assert not index.search("frobnicate").hits
    assert "frobnicate" not in index.search("frobnicat").suggestions


def test_a_doc_of_another_host_is_refused(index: SearchIndex) -> None:
    with pytest.raises(ValueError, match="belongs to host"):
        index.replace_host("ifc-1", [tool("x", host="dxf-1")])


def test_host_and_kind_filters(index: SearchIndex) -> None:
    result = index.search("python", host_key="ifc-1", kinds=["resource"])
    assert [d.target for d in result.hits] == ["ifc://python-cheatsheet"]
    assert {d.host_key for d in index.search("python", host_key="ifc-1").hits} == {"ifc-1"}
    assert index.search("python", host_key="nope").hits == []
    with pytest.raises(ValueError, match="unknown kind"):
        index.search("python", kinds=["prompt"])


def test_empty_query_lists_the_catalog_in_stable_order(index: SearchIndex) -> None:
    index.replace_host("a-0", cad_docs("a-0", "DXF"))
    result = index.search(None, limit=100)
    assert result.total == 24
    keys = [(d.host_app, d.host_key, d.kind) for d in result.hits]
    assert keys == sorted(
        keys, key=lambda k: (k[0], k[1], ["tool", "resource", "resource_template"].index(k[2]))
    )
    tools = [d.target for d in result.hits if d.host_key == "a-0" and d.kind == "tool"]
    assert tools == sorted(tools)
    page = index.search("  ", kinds=["resource_template"], limit=2)
    assert page.total == 3 and len(page.hits) == 2
    assert [d.host_key for d in page.hits] == ["a-0", "dxf-1"]


def test_total_counts_all_matches_beyond_the_limit(index: SearchIndex) -> None:
    result = index.search("document", limit=2)
    assert len(result.hits) == 2
    assert result.total > 2


def test_zero_hits_suggest_close_names_and_report_kinds(index: SearchIndex) -> None:
    result = index.search("screnshot")
    assert result.hits == []
    assert "view_screenshot" in result.suggestions
    assert result.kinds_available == {"tool": 12, "resource": 2, "resource_template": 2}


def test_zero_hits_in_a_kind_suggest_matches_of_other_kinds(index: SearchIndex) -> None:
    result = index.search("python cheatsheet", kinds=["resource_template"])
    assert result.hits == []
    assert "python-cheatsheet" in result.suggestions


def test_hits_carry_no_suggestions(index: SearchIndex) -> None:
    assert index.search("screenshot").suggestions == []


def test_capability_docs_from_mcp_list_results() -> None:
    docs = capability_docs(
        host_app="IFC",
        host_version="IFC4",
        host_key="ifc-9",
        tools=[
            {
                "name": "navigate_history",
                "description": "Undo or redo.",
                "annotations": {"title": "History"},
                "inputSchema": {
                    "type": "object",
                    "properties": {"direction": {"type": "string", "enum": ["undo", "redo"]}, "steps": {}},
                },
                "_meta": {"io.cadmcp/keywords": ["rollback", " step back "]},
            }
        ],
        resources=[{"uri": "ifc://version", "name": "version"}],
        resource_templates=[{"uriTemplate": "ifc://schedule/{scheduleId}/preview{?rows,cols}", "name": "p"}],
    )
    history, version, template = docs
    assert history.title == "History"
    assert history.params == (("direction", "undo redo"), ("steps", ""))
    assert history.keywords == ("rollback", "step back")
    assert history.key == "ifc-9/tool/navigate_history"
    assert (version.kind, version.target, version.description) == ("resource", "ifc://version", "")
    assert template.params == (("scheduleId", ""), ("rows", ""), ("cols", ""))


def test_reindexing_a_host_analyses_only_the_texts_that_changed(
    index: SearchIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Re-listing costs in proportion to what changed (speed itself is measured in bench/)."""
    docs = [
        tool(f"tool_{i}_{w}", f"Does {w} things with layer {i} and the active drawing.", host="big")
        for i, w in enumerate(["draw", "erase", "move", "copy"] * 50)
    ]
    index.replace_host("big", docs)
    analysed: list[str] = []
    real_terms = index.analyzer.terms
    monkeypatch.setattr(index.analyzer, "terms", lambda text: analysed.append(text) or real_terms(text))
    index.replace_host("big", list(reversed(docs)))  # the same catalog in another order: a no-op
    assert analysed == []
    edited = tool("tool_0_draw", "Draws lines on a layer.", host="big")
    index.replace_host("big", [edited, *docs[1:]])
    assert "Draws lines on a layer." in analysed
    assert not any(d.description in analysed for d in docs[1:])
    assert len(index) == 216
    assert index.search("draws lines", host_key="big").hits[0] == edited


def test_churning_hosts_compacts_and_keeps_results_identical(monkeypatch: pytest.MonkeyPatch) -> None:
    import cadmcp.daemon.search.postings as postings

    monkeypatch.setattr(postings, "_COMPACT_MIN_DEAD", 10)
    churned, fresh = SearchIndex(), SearchIndex()
    for round_ in range(6):
        for h in ("a", "b", "c"):
            churned.replace_host(h, cad_docs(h, "DXF" if h != "b" else "IFC"))
        churned.remove_host("c")
        churned.replace_host(f"gone-{round_}", cad_docs(f"gone-{round_}", "Revit"))
        churned.remove_host(f"gone-{round_}")
    for h in ("a", "b"):
        fresh.replace_host(h, cad_docs(h, "DXF" if h != "b" else "IFC"))
    assert churned.postings.size < 40  # compacted: dead numbers were dropped
    for query in ("screenshot", "undo in ifc", "python cheatsheet", "element", "open_doc"):
        for host in (None, "a", "b"):
            got = churned.search(query, host_key=host, limit=20)
            want = fresh.search(query, host_key=host, limit=20)
            assert [d.key for d in got.hits] == [d.key for d in want.hits]
            assert got.scores == want.scores and got.total == want.total


def test_replacing_a_host_with_the_same_catalog_changes_nothing(index: SearchIndex) -> None:
    before = index.search("undo", limit=20)
    index.replace_host("dxf-1", list(reversed(cad_docs("dxf-1", "DXF"))))
    after = index.search("undo", limit=20)
    assert [d.key for d in after.hits] == [d.key for d in before.hits] and after.scores == before.scores
    changed = [*cad_docs("dxf-1", "DXF")[:-1], tool("element", "Changed.", host="dxf-1", kind="resource")]
    index.replace_host("dxf-1", changed)
    assert index.search("changed", host_key="dxf-1").hits[0].description == "Changed."

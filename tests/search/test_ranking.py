"""Ranking: names first, synonyms, app preference."""

from __future__ import annotations

from cadmcp.daemon.search import SearchIndex


def test_exact_tool_name_ranks_first(index: SearchIndex) -> None:
    result = index.search("view_screenshot", host_key="dxf-1")
    assert result.hits[0].name == "view_screenshot"


def test_synonym_finds_undo_tool(index: SearchIndex) -> None:
    result = index.search("revert my last change", host_key="ifc-1")
    assert result.hits[0].name == "navigate_history"


def test_query_naming_an_app_prefers_its_host(index: SearchIndex) -> None:
    assert index.search("take a screenshot of the IFC model").hits[0].host_key == "ifc-1"
    assert index.search("take a screenshot in autocad").hits[0].host_key == "dxf-1"

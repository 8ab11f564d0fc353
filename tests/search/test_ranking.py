"""Ranking: names first, synonyms, app preference, `_meta` keywords, determinism."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from cadmcp.daemon.owncatalog import APP as OWN_APP
from cadmcp.daemon.owncatalog import TOOLS as OWN_TOOLS
from cadmcp.daemon.search import SearchIndex, build_index_from_catalog
from cadmcp.daemon.search.features import FeatureSet
from cadmcp.host.builtins.keywords import RESOURCE_KEYWORDS, TOOL_KEYWORDS
from cadmcp.wire.meta import KEYWORDS

from .conftest import cad_docs, tool


def test_exact_tool_name_ranks_first(index: SearchIndex) -> None:
    for query in ("view_screenshot", "view screenshot", "VIEW_SCREENSHOT", "viewScreenshot"):
        assert index.search(query, host_key="dxf-1").hits[0].name == "view_screenshot", query


def test_name_prefix_ranks_first_even_without_a_whole_word() -> None:
    idx = SearchIndex()
    idx.replace_host(
        "h",
        [
            tool("view_screenshot", "Render to PNG.", host="h"),
            tool("screen_layout", "View and screen the layout of the view.", host="h"),
        ],
    )
    assert idx.search("view_scr").hits[0].name == "view_screenshot"


def test_exact_resource_uri_ranks_first(index: SearchIndex) -> None:
    assert index.search("ifc://python-cheatsheet").hits[0].target == "ifc://python-cheatsheet"


def test_synonyms_find_capabilities_described_in_other_words(index: SearchIndex) -> None:
    assert index.search("revert my last change", host_key="ifc-1").hits[0].name == "navigate_history"
    assert index.search("take a picture of the plan", host_key="ifc-1").hits[0].name == "view_screenshot"
    assert index.search("run a script", host_key="dxf-1").hits[0].name == "execute_python_code"


def test_multiword_synonym_how_many_means_count() -> None:
    idx = SearchIndex()
    idx.replace_host(
        "h",
        [
            tool("count_entities", "Count entities per type.", host="h"),
            tool("list_layers", "List the layers.", host="h"),
        ],
    )
    assert idx.search("how many lines are there").hits[0].name == "count_entities"


def test_a_synonym_alone_finds_the_tool_and_unknown_words_find_nothing() -> None:
    idx = SearchIndex()
    idx.replace_host("h", [tool("navigate_history", "Step through changes.", host="h")])
    assert idx.search("revert").hits  # through the vocabulary group undo/revert/history
    assert not idx.search("zebra").hits


def test_query_naming_an_app_prefers_its_host(index: SearchIndex) -> None:
    assert index.search("take a screenshot of the IFC model").hits[0].host_key == "ifc-1"
    assert index.search("take a screenshot in autocad").hits[0].host_key == "dxf-1"
    assert index.search("screenshot of the BIM model").hits[0].host_key == "ifc-1"
    assert index.search("take a screenshot").hits[0].host_key == "dxf-1"  # no app named: stable order


def test_query_naming_a_host_app_by_its_own_name_prefers_it(index: SearchIndex) -> None:
    index.replace_host("rvt-1", cad_docs("rvt-1", "Revit"))
    index.replace_host("bl-1", cad_docs("bl-1", "Blender"))
    assert index.search("undo in blender").hits[0].host_key == "bl-1"
    assert index.search("revit screenshot").hits[0].host_key == "rvt-1"


def test_meta_keywords_make_a_tool_findable_by_its_authors_words() -> None:
    idx = SearchIndex()
    idx.replace_host(
        "h",
        [
            tool("export_block_schedule", "Write block references to CSV.", host="h", keywords=["Türliste"]),
            tool("purge_unused", "Remove unused definitions.", host="h"),
        ],
    )
    result = idx.search("turliste")
    assert [d.name for d in result.hits] == ["export_block_schedule"]


def test_parameter_names_and_descriptions_are_searched() -> None:
    idx = SearchIndex()
    idx.replace_host(
        "h",
        [
            tool("apply", "Apply a change.", host="h", params=[("tolerance", "clash tolerance in metres")]),
            tool("other", "Something else entirely.", host="h"),
        ],
    )
    assert idx.search("tolerance").hits[0].name == "apply"


def test_results_do_not_depend_on_insertion_order() -> None:
    hosts = [(f"h{i}", cad_docs(f"h{i}", "DXF")) for i in range(5)]
    queries = ["screenshot", "undo", "python", "open document", "element", "nothing-like-this"]
    expected = None
    rng = random.Random(7)
    for _ in range(3):
        rng.shuffle(hosts)
        idx = SearchIndex()
        for key, docs in hosts:
            idx.replace_host(key, list(reversed(docs)) if rng.random() < 0.5 else docs)
        got = [[d.key for d in idx.search(q, limit=20).hits] for q in queries]
        assert expected is None or got == expected
        expected = got
    # identical tools on identical hosts tie: broken by host key
    assert [d.host_key for d in idx.search("undo", limit=5).hits] == ["h0", "h1", "h2", "h3", "h4"]


def test_second_stage_prefers_the_capability_whose_name_the_query_covers() -> None:
    docs = [
        tool("book_appointment", "Reserve a time slot with a provider.", host="a", app="Services"),
        tool(
            "find_provider",
            "Find a provider to book an appointment with: appointment booking, book appointments.",
            host="b",
            app="Finder",
        ),
        *(tool(f"other_{w}", f"Works on {w} data.", host="c", app="Other") for w in "abcdefgh"),
    ]
    query = "please book an appointment"

    def first(off: tuple[str, ...]) -> str:
        index = SearchIndex(features=FeatureSet(off))
        for host in ("a", "b", "c"):
            index.replace_host(host, [d for d in docs if d.host_key == host])
        return index.search(query).hits[0].name

    assert first(("name_coverage",)) == "find_provider"  # the description repeats the words
    assert first(()) == "book_appointment"


def test_parameter_names_count_as_their_own_field() -> None:
    # The request names the inputs it supplies; a tool with parameters of those names beats a
    # tool whose description mentions the words once, even when the parameter text is long.
    long_text = "A value that the service passes on unchanged to the backend for later processing."
    idx = SearchIndex()
    idx.replace_host(
        "h",
        [
            tool(
                "change_order",
                "Change an existing order.",
                host="h",
                params=[("drink_id", long_text), ("sweetness", long_text), ("milk", long_text)],
            ),
            tool(
                "place_order",
                "Place an order: a drink, its sweetness and milk, in the notes.",
                host="h",
                params=[("notes", long_text)],
            ),
            tool("list_menu", "List the menu.", host="h"),
        ],
    )
    assert idx.search("order with drink id 12, sweetness none, oat milk").hits[0].name == "change_order"


def test_numbers_alone_do_not_make_a_match() -> None:
    # sizes and coordinates in a request meet version strings and examples only by chance
    index = SearchIndex()
    index.replace_host(
        "fc-1",
        [
            tool("version", "FreeCAD 0.20.2 and the Python it runs.", host="fc-1", app="FreeCAD"),
            tool("move_object", "Move an object by an offset.", host="fc-1", app="FreeCAD"),
        ],
    )
    assert index.search("linie von 0,0 nach 20,20").hits == []
    assert [d.name for d in index.search("move it 20 to the left").hits] == ["move_object"]
    assert index.search("version 0.20").hits[0].name == "version"
    assert index.search("0.20").hits[0].name == "version"  # a request of numbers only still matches


# --- the reference hosts' own keywords ------------------------------------------------------

CATALOG = Path(__file__).resolve().parents[2] / "eval" / "cadbim-tune" / "catalog.json"


def _reference_catalog(keywords: bool = True) -> dict[str, Any]:
    catalog = json.loads(CATALOG.read_text())
    if not keywords:
        for host in catalog["hosts"]:
            for kind in ("tools", "resources", "resourceTemplates"):
                for entry in host.get(kind, []):
                    (entry.get("_meta") or {}).pop(KEYWORDS, None)
    return catalog


def test_the_evaluation_catalog_carries_the_keywords_the_hosts_serve() -> None:
    """The dumped catalog is what the DXF, IFC and FreeCAD hosts send today (re-dump it when
    `cadmcp.host.builtins.keywords` changes: `cadmcp eval dump-catalog`)."""
    for host in _reference_catalog()["hosts"]:
        tools = {t["name"]: t.get("_meta", {}).get(KEYWORDS) for t in host["tools"]}
        for name, words in TOOL_KEYWORDS.items():
            assert tools[name] == list(words), (host["hostApp"], name)
        by_path = {
            (e.get("uri") or e["uriTemplate"]).split("://", 1)[1]: e.get("_meta", {}).get(KEYWORDS)
            for e in host["resources"] + host["resourceTemplates"]
        }
        for path, words in RESOURCE_KEYWORDS.items():
            assert by_path[path] == list(words), (host["hostApp"], path)


@pytest.mark.parametrize(
    ("query", "app", "target"),
    [
        ("which drawings are currently open", "DXF", "list_documents"),
        ("roll back the last edit", None, "navigate_history"),
        ("scripting help for ezdxf", "DXF", "dxf://python-cheatsheet"),
        ("make the second model the current document", "IFC", "activate_document"),
        ("code examples for the ifc host", "IFC", "ifc://python-cheatsheet"),
    ],
)
def test_built_in_keywords_catch_what_users_call_a_capability(
    query: str, app: str | None, target: str
) -> None:
    """Phrasings whose words the built-ins' names and descriptions do not use ("currently open",
    "roll back", "scripting help", "current document", "code examples"); without the keywords the
    open, code or version capability ranked first for each."""
    first = build_index_from_catalog(_reference_catalog()).search(query).hits[0]
    assert (first.target, first.host_app if app else None) == (target, app)
    bare = build_index_from_catalog(_reference_catalog(keywords=False)).search(query).hits[0]
    assert bare.target != target


@pytest.mark.parametrize(
    ("query", "target"),
    [
        ("list the open models", "list_documents"),
        ("open the drawing plan.dxf", "open_document"),
        ("what's in the drawing", "dxf://model/context"),  # "what's" as typed, not "what is"
    ],
)
def test_document_requests_find_the_listing_the_opening_or_the_context(query: str, target: str) -> None:
    assert build_index_from_catalog(_reference_catalog()).search(query).hits[0].target == target


@pytest.mark.parametrize(
    ("query", "app", "target"),
    [
        ("close the polyline", "DXF", "execute_python_code"),
        ("close all open polylines on layer WALLS", "DXF", "execute_python_code"),
        ("close the sketch", "FreeCAD", "execute_python_code"),
        ("close the drawing", "DXF", "close_document"),
        ("close the model without saving", "IFC", "close_document"),
        ("close this file", None, "close_document"),
    ],
)
def test_a_tool_named_for_the_verb_is_not_for_another_object(
    query: str, app: str | None, target: str
) -> None:
    """ "close" is a change: `close_document` takes the request only when it is about a document;
    closing a polyline or a sketch is a change the general-purpose tool makes."""
    first = build_index_from_catalog(_reference_catalog()).search(query).hits[0]
    assert (first.target, first.host_app if app else None) == (target, app)


@pytest.mark.parametrize(
    "query",
    ["make the polylines closed", "is the outline closed?", "the boundary is not closed, fix it"],
)
def test_closed_the_state_of_a_shape_is_not_a_request_to_close_a_document(query: str) -> None:
    """ "closed" keeps a term of its own (`ownStems`), as "drawing" does: the stemmer's "close" made
    these requests find `close_document` first."""
    hits = build_index_from_catalog(_reference_catalog()).search(query).hits
    assert hits[:1] == [] or hits[0].target != "close_document"


@pytest.mark.parametrize(
    "query",
    [
        "change the colour of layer WALL to red",
        "change the text height on layer PUB_TEXT to 3.5",
        "modify the door width to 900",
    ],
)
def test_the_daemons_own_capabilities_do_not_keep_the_code_tool_from_a_change(query: str) -> None:
    """The live index always holds the daemon's own capabilities; their keywords "undo my changes"
    (revert_calls) and "changes" (list_checkpoints, read-only) named them for "change", so with a
    DXF host the code tool was 13th for these requests. A title or keyword names a capability for a
    verb only when it opens with it, and one that only reads only by its name."""
    catalog = _reference_catalog()
    catalog["hosts"].append({"hostApp": OWN_APP, "version": "1", "tools": OWN_TOOLS})
    first = build_index_from_catalog(catalog).search(query).hits[0]
    assert first.target == "execute_python_code"


def test_a_read_only_tool_named_for_the_verb_still_takes_it() -> None:
    """A computation a read-only tool's name says ("convert_time") is no change to make with code."""
    catalog = {
        "hosts": [
            {
                "hostApp": "Time",
                "tools": [
                    {
                        "name": "convert_time",
                        "description": "Convert a time between time zones.",
                        "annotations": {"readOnlyHint": True},
                        "inputSchema": {"type": "object"},
                    }
                ],
            },
            *_reference_catalog()["hosts"],
        ]
    }
    first = build_index_from_catalog(catalog).search("convert 9:30am pacific to central european time")
    assert first.hits[0].target == "convert_time"

"""What hosts declare for ranking: domain words decide between twins, recency breaks ties, and a
fallback tool answers changes nothing specific covers. Catalogs carry the `_meta` keys exactly
as hosts send them (see docs/search.md)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from cadmcp.daemon.search import (
    DOMAIN_META_KEY,
    FALLBACK_META_KEY,
    HostDomain,
    SearchIndex,
    build_index_from_catalog,
    capability_docs,
    meta_domain,
)
from cadmcp.daemon.search.domain import MAX_DOMAIN_ENTRIES, meta_fallback
from tests.search.conftest import cad_docs, tool

DXF_DOMAIN = {"names": ["AutoCAD", "DWG"], "terms": ["drawing", "floor plan", "layer", "block", "hatch"]}
IFC_DOMAIN = {"names": ["BIM"], "terms": ["building", "storey", "wall", "slab", "property set", "model"]}
FREECAD_DOMAIN = {"names": ["FreeCAD", "PartDesign"], "terms": ["part", "body", "sketch", "pad", "fillet"]}


def _host(app: str, pid: int, domain: dict[str, Any] | None, fallback: bool = True) -> dict[str, Any]:
    docs = cad_docs(f"{app}-{pid}", app)
    tools = []
    for d in docs:
        if d.kind != "tool":
            continue
        entry: dict[str, Any] = {"name": d.name, "description": d.description}
        if fallback and d.name == "execute_python_code":
            entry["_meta"] = {FALLBACK_META_KEY: ["change", "query"]}
        tools.append(entry)
    extra = {
        "DXF": {"name": "layer_summary", "description": "Summarise the layers: colour, entity counts."},
        "IFC": {"name": "count_elements", "description": "Count the elements of an IFC class per storey."},
        "FreeCAD": {"name": "set_parameter", "description": "Set a spreadsheet parameter and recompute."},
    }[app]
    host: dict[str, Any] = {"hostApp": app, "version": "1", "pid": pid, "tools": [*tools, extra]}
    if domain is not None:
        host["_meta"] = {DOMAIN_META_KEY: domain, "io.cadmcp/hostState": {"phase": "ready"}}
    return host


def _both(fallback: bool = True) -> SearchIndex:
    catalog = {"hosts": [_host("DXF", 1, DXF_DOMAIN, fallback), _host("IFC", 2, IFC_DOMAIN, fallback)]}
    return build_index_from_catalog(catalog)


def _first(index: SearchIndex, query: str, **kw: Any) -> tuple[str, str, str | None]:
    result = index.search(query, **kw)
    doc = result.hits[0]
    return doc.host_app, doc.target, result.reasons[0]


# --- reading the declarations ----------------------------------------------------------------


def test_domain_and_fallback_are_read_as_hosts_send_them() -> None:
    assert meta_domain({DOMAIN_META_KEY: DXF_DOMAIN}) == HostDomain(
        names=("AutoCAD", "DWG"), terms=("drawing", "floor plan", "layer", "block", "hatch")
    )
    assert meta_domain({DOMAIN_META_KEY: {"terms": "layer, block"}}) == HostDomain((), ("layer", "block"))
    assert meta_fallback({FALLBACK_META_KEY: ["change", "query", "teleport"]}) == ("change", "query")
    assert meta_fallback({FALLBACK_META_KEY: "change"}) == ("change",)
    docs = capability_docs(
        host_app="DXF",
        host_version="1",
        host_key="h",
        tools=[{"name": "run", "_meta": {FALLBACK_META_KEY: ["change"]}}],
        resources=[{"uri": "x://a", "name": "a", "_meta": {FALLBACK_META_KEY: ["change"]}}],
    )
    assert [d.fallback for d in docs] == [("change",), ()]  # only tools stand in for changes


@pytest.mark.parametrize(
    "meta",
    [
        None,
        {},
        {DOMAIN_META_KEY: "layer"},
        {DOMAIN_META_KEY: {"terms": [1, None, ""]}},
        {DOMAIN_META_KEY: []},
    ],
)
def test_malformed_domains_are_ignored(meta: Any) -> None:
    assert meta_domain(meta) is None


def test_domain_declarations_are_bounded() -> None:
    many = [f"term{i}" for i in range(5 * MAX_DOMAIN_ENTRIES)] + ["x" * 500]
    domain = meta_domain({DOMAIN_META_KEY: {"terms": many}})
    assert domain is not None and len(domain.terms) == MAX_DOMAIN_ENTRIES


# --- twins: the request's words, then recency --------------------------------------------------


@pytest.mark.parametrize(
    ("query", "app", "target"),
    [
        ("screenshot of the floor plan", "DXF", "view_screenshot"),
        ("what does the building look like", "IFC", "view_screenshot"),
        ("undo my last change to the layer colours", "DXF", "navigate_history"),
        ("undo the slab edit", "IFC", "navigate_history"),
        ("save the dwg", "DXF", "save_document"),  # a declared name counts like naming the app
    ],
)
def test_domain_words_pick_the_twin_of_their_app(query: str, app: str, target: str) -> None:
    result = _both().search(query)
    twins = [
        (d.host_app, why) for d, why in zip(result.hits, result.reasons, strict=True) if d.target == target
    ]
    assert [a for a, _ in twins] == [app, "IFC" if app == "DXF" else "DXF"]
    assert twins[0][1] is not None and app in twins[0][1]


@pytest.mark.parametrize("query", ["list the documents open in freecad", "FreeCAD: list documents"])
def test_a_one_word_app_name_is_recognised_however_it_is_typed(query: str) -> None:
    catalog = {"hosts": [_host("DXF", 1, DXF_DOMAIN), _host("FreeCAD", 3, FREECAD_DOMAIN)]}
    assert _first(build_index_from_catalog(catalog), query) == (
        "FreeCAD",
        "list_documents",
        "the request names FreeCAD",
    )


def test_domain_words_match_what_the_request_language_folds_onto_their_stem() -> None:
    ifc = {"terms": [*IFC_DOMAIN["terms"], "opening", "building"]}
    index = build_index_from_catalog({"hosts": [_host("DXF", 1, DXF_DOMAIN), _host("IFC", 2, ifc)]})
    assert _first(index, "screenshot of the openings") == (
        "IFC",
        "view_screenshot",
        "IFC words in the request: 'opening'",
    )
    assert _first(index, "screenshot of the buildings")[0] == "IFC"
    assert _first(index, "screenshot of the drawing")[0] == "DXF"


def test_without_declarations_twins_stay_in_listing_order() -> None:
    catalog = {"hosts": [_host("DXF", 1, None), _host("IFC", 2, None)]}
    index = build_index_from_catalog(catalog)
    assert _first(index, "screenshot of the storey")[0] == "DXF"  # no domain known: listing order


def test_the_most_recently_used_host_breaks_a_tie() -> None:
    index = _both()
    assert _first(index, "screenshot", recent=["IFC_1_2", "DXF_1_1"]) == (
        "IFC",
        "view_screenshot",
        "its host was used most recently",
    )
    assert _first(index, "screenshot", recent=["DXF_1_1"])[:2] == ("DXF", "view_screenshot")
    # the request's own words beat recency
    assert _first(index, "screenshot of the layer", recent=["IFC_1_2"])[0] == "DXF"


def test_recency_does_not_beat_a_clearly_better_match() -> None:
    index = SearchIndex()
    index.replace_host("a", [tool("export_pdf", "Export the sheet set as PDF.", host="a", app="A")])
    index.replace_host("b", [tool("export_pdf", "Export.", host="b", app="B")])
    assert index.search("export the sheet set as pdf", recent=["b"]).hits[0].host_key == "a"


def test_twins_holding_the_same_typed_words_tie_however_long_their_descriptions() -> None:
    index = SearchIndex()
    index.replace_host("a", [tool("export_pdf", "Export as PDF.", host="a", app="A")])
    long = "Export as PDF: every sheet of the set, each layout on its own page, titles and stamps kept."
    index.replace_host("b", [tool("export_pdf", long, host="b", app="B")])
    assert index.search("export pdf").hits[0].host_key == "a"  # the shorter text scores higher
    result = index.search("export pdf", recent=["b"])
    assert result.hits[0].host_key == "b" and result.reasons[0] == "its host was used most recently"


# --- fallback tools ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "app"),
    [
        ("rename layer WALL to A-WALL", "DXF"),
        ("please add a property set to this beam", "IFC"),
        ("move every door block onto its own layer", "DXF"),
        ("sum the volume of all slabs", "IFC"),
        ("total wall area per storey", "IFC"),  # count_elements counts walls, it has no area
        ("alle Blöcke auf Layer 0 verschieben", "DXF"),  # the verb ends a German request
        ("verschiebe alle Blöcke auf Layer 0", "DXF"),  # ... or starts it, as a command
        ("crea un layer MURI", "DXF"),
        ("fillet every corner of the polylines on layer WALL", "DXF"),  # CAD commands are verbs
        ("Layer umbenennen pls: WAND -> A-WALL", "DXF"),  # the verb before its arguments
        ("laag hernoemen naar A-MUUR", "DXF"),  # Dutch
        ("EXPLODE all blocks on layer DOORS", "DXF"),  # a command typed in capitals is no name
        ("chamfer the top edges of every slab", "IFC"),
        # the app's name is no word of what is asked: every capability of the app holds it
        ("every wall 20 mm thicker in IFC", "IFC"),
        ("the slab 30 mm thicker (IFC)", "IFC"),
        ("the hatch border 5 mm wider in DXF", "DXF"),
        ("Desplazar el bloque 10 mm hacia arriba en el plano DXF", "DXF"),
        # "draw" stemmed as "drawing" did: every DXF tool's text says "drawing", so a tool that
        # opens, lists or pictures drawings came first (a trial, with other servers running)
        ("draw a circle with radius 5", "DXF"),
        ("draw a line on layer WALLS", "DXF"),
    ],
)
def test_a_change_nothing_specific_covers_goes_to_the_apps_fallback(query: str, app: str) -> None:
    got_app, target, why = _first(_both(), query)
    assert (got_app, target) == (app, "execute_python_code")
    assert why is not None and why.startswith("general-purpose tool")


@pytest.mark.parametrize(
    ("query", "target"),
    [
        ("how many walls per storey", "count_elements"),  # a specific capability matches the rest
        ("total walls per storey", "count_elements"),  # no quantity asked for: a count
        ("undo the last change", "navigate_history"),  # "change" as a noun is no command
        ("save my changes to the drawing", "save_document"),
        ("revert my last wall change", "navigate_history"),  # a noun at the end is no command
        ("summarise the layers with their colours", "layer_summary"),
    ],
)
def test_specific_capabilities_keep_their_place(query: str, target: str) -> None:
    assert _first(_both(), query)[1] == target


def _with_freecad_keywords(*keywords: str) -> SearchIndex:
    """DXF and FreeCAD hosts; FreeCAD's toolset tool (set_parameter) lists `keywords`."""
    catalog = {"hosts": [_host("DXF", 1, DXF_DOMAIN), _host("FreeCAD", 3, FREECAD_DOMAIN)]}
    catalog["hosts"][1]["tools"][-1]["_meta"] = {"io.cadmcp/keywords": list(keywords)}
    return build_index_from_catalog(catalog)


@pytest.mark.parametrize(
    ("keyword", "query"),
    [
        # "rename" means "change name"; a tool known as "change dimension" is not named for it
        ("change dimension", "rename the sketch to Profile"),
        # "export" shares a synonym group with "csv" and "spreadsheet": the things exported
        ("spreadsheet aliases", "export the part as STL"),
        ("spreadsheet aliases", "exportiere den Body als STEP"),
    ],
)
def test_a_keyword_sharing_words_with_a_verbs_synonyms_does_not_name_the_tool_for_it(
    keyword: str, query: str
) -> None:
    assert _first(_with_freecad_keywords(keyword), query)[:2] == ("FreeCAD", "execute_python_code")


def test_a_keyword_still_finds_its_tool() -> None:
    assert (
        _first(_with_freecad_keywords("change dimension"), "change the pad dimension")[1] == "set_parameter"
    )


def test_without_a_declared_fallback_nothing_is_lifted() -> None:
    _, target, why = _first(_both(fallback=False), "rename layer WALL to A-WALL")
    assert not (target == "execute_python_code" and why and why.startswith("general-purpose"))


def test_hosts_replacing_their_declarations_are_reindexed() -> None:
    index = _both()
    assert _first(index, "screenshot of the building")[0] == "IFC"
    dxf = [d for d in index.docs() if d.host_app == "DXF"]
    # the DXF host now claims "building" too: a tie, so the listing order (DXF first) decides
    index.replace_host(dxf[0].host_key, dxf, domain=HostDomain(terms=("building",)))
    assert _first(index, "screenshot of the building")[0] == "DXF"
    assert _first(index, "rename the layer") == (
        "DXF",
        "execute_python_code",
        "general-purpose tool: no dedicated capability for 'rename'",
    )
    # ... and stops declaring a fallback tool: nothing stands in for the rename any more
    plain = [dataclasses.replace(d, fallback=()) for d in dxf]
    index.replace_host(dxf[0].host_key, plain, domain=HostDomain(terms=("layer",)))
    assert _first(index, "rename the layer")[1:] == ("layer_summary", None)


def test_a_request_in_an_apps_domain_that_nothing_matches_goes_to_its_fallback() -> None:
    _, target, why = _first(_both(), "cantilever that slab further")  # only the IFC domain knows "slab"
    assert target == "execute_python_code" and why is not None
    assert _both().search("qwzx blorf").hits == []  # no domain, no match: nothing


GIT = {
    "hostApp": "Git",
    "version": "1",
    "pid": 9,
    "tools": [
        {"name": "git_create_branch", "description": "Creates a new branch from an optional base branch"},
        {"name": "git_log", "description": "Shows the commit logs"},
    ],
}


@pytest.mark.parametrize(
    "query",
    [
        "create a new branch for the slab changes",  # "slab": IFC's domain word, but no IFC tool does it
        "create a branch for the floor plan layer cleanup",
    ],
)
def test_domain_words_do_not_set_back_a_server_that_declares_no_domain(query: str) -> None:
    # a CAD user's other MCP servers declare no domain; the CAD words of a request say which CAD
    # app it is about, not that a git tool cannot be what it asks for
    catalog = {"hosts": [_host("DXF", 1, DXF_DOMAIN), _host("IFC", 2, IFC_DOMAIN), GIT]}
    app, target, _ = _first(build_index_from_catalog(catalog), query)
    assert (app, target) == ("Git", "git_create_branch")
    # a change in the app's domain that the server does not do still goes to the app's fallback
    assert _first(build_index_from_catalog(catalog), "cantilever that slab further")[:2] == (
        "IFC",
        "execute_python_code",
    )


def test_a_question_prefers_capabilities_that_only_read() -> None:
    index = SearchIndex()
    same = {"description": "The colours of the layers."}
    index.replace_host(
        "dxf-1",
        [
            tool("layer_colours", **same),  # a tool that may change them
            tool("layer_colours", **same, kind="resource", target="dxf://layer_colours"),
        ],
    )
    assert _first(index, "layer colours")[1] == "layer_colours"  # equal: tools list first
    assert _first(index, "what are the layer colours?")[1] == "dxf://layer_colours"


@pytest.mark.parametrize(
    "query",
    [
        "rename layer SLAB-WALLS to A-WALL",  # capitals in a request that is not typed in capitals
    ],
)
def test_names_the_request_supplies_are_not_domain_words(query: str) -> None:
    """A layer called SLAB-WALLS does not make a DXF request an IFC one (two IFC words, one of DXF)."""
    assert _first(_both(), query)[:2] == ("DXF", "execute_python_code")


def test_a_question_goes_to_what_only_reads_and_a_command_to_the_code_tool() -> None:
    index = SearchIndex()
    index.replace_host(
        "fc-1",
        [
            dataclasses.replace(
                tool("execute_python_code", "Run Python in the part.", app="FreeCAD", host="fc-1"),
                fallback=("change", "query"),
            ),
            tool(
                "model-warnings",
                "Features whose recompute failed, broken constraints.",
                app="FreeCAD",
                host="fc-1",
                kind="resource",
                target="freecad://model/warnings",
            ),
        ],
    )
    assert _first(index, "why did the recompute fail")[1] == "freecad://model/warnings"
    assert _first(index, "pad the sketch 10 mm")[1] == "execute_python_code"


def test_a_declared_word_matches_plurals_the_stemmer_does_not_fold() -> None:
    index = _both()
    ifc = next(d for d in index.docs() if d.host_app == "IFC").host_key
    ifc_docs = [d for d in index.docs() if d.host_key == ifc]
    index.replace_host(ifc, ifc_docs, domain=HostDomain(terms=("Decke", "Stütze")))
    for query in ("Betonvolumen aller Decken summieren", "alle Stützen umbenennen"):
        assert _first(index, query)[:2] == ("IFC", "execute_python_code"), query


def test_only_plural_endings_extend_a_declared_word() -> None:
    index = _both()
    for app, terms in (("DXF", ("plan",)), ("IFC", ("wall",))):
        docs = [d for d in index.docs() if d.host_app == app]
        index.replace_host(docs[0].host_key, docs, domain=HostDomain(terms=terms))
    assert _first(index, "rotate the wall in the plane")[:2] == ("IFC", "execute_python_code")


def test_declared_words_with_digits_count() -> None:
    """3D is typed with a digit, as names are, yet it is a word a host declared."""
    index = _both()
    ifc = [d for d in index.docs() if d.host_app == "IFC"]
    index.replace_host(ifc[0].host_key, ifc, domain=HostDomain(terms=("3D model",)))
    assert _first(index, "export the 3D model")[:2] == ("IFC", "execute_python_code")


@pytest.mark.timeout(20)
def test_long_runs_of_one_character_are_searched_at_once() -> None:
    """Queries built to make name-finding regexes backtrack (one took 8.7 s before) come back
    at once; the daemon's 1,000-character bound on a query applies."""
    index = _both()
    for query in ("A" * 999 + "a", "a" * 1000, "A-" * 500, "-" * 1000, "'" * 1000, "_" * 1000, "‘" * 1000):
        for _ in range(5):
            index.search(query)


def test_a_uri_template_placeholder_is_not_what_the_capability_is_named_for() -> None:
    # `{name}` is what the caller supplies: it does not make the template "named for" renaming
    catalog = {"hosts": [_host("DXF", 1, DXF_DOMAIN), _host("IFC", 2, IFC_DOMAIN)]}
    catalog["hosts"][0]["resourceTemplates"] = [
        {"uriTemplate": "dxf-sample://layer/{name}", "name": "layer", "description": "One layer's entities."}
    ]
    index = build_index_from_catalog(catalog)
    assert _first(index, "rename layer WALL to A-WALL")[:2] == ("DXF", "execute_python_code")
    assert _first(index, "entities on layer WALL")[1] == "dxf-sample://layer/{name}"

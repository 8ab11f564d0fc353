"""Tokenisation and normalisation: what a name or a sentence becomes in the index."""

from __future__ import annotations

import pytest

from cadmcp.daemon.search.analyzer import Analyzer, fold, split_words


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("view_screenshot", ["view", "screenshot"]),
        ("navigate-history", ["navigate", "history"]),
        ("acl_api.AclApi.retrieve_projects", ["acl", "api", "acl", "api", "retrieve", "projects"]),
        ("getHTTPResponse", ["get", "http", "response"]),
        ("IfcWallStandardCase", ["ifc", "wall", "standard", "case"]),
        ("dxf://schedule/{scheduleId}/preview", ["dxf", "schedule", "schedule", "id", "preview"]),
        ("room2Area3d", ["room", "2", "area", "3", "d"]),
        ("IFC4 and R2018", ["ifc", "4", "and", "r", "2018"]),
        ("Élément Größe", ["element", "grosse"]),
        ("ＦＵＬＬＷＩＤＴＨ ｔｅｘｔ", ["fullwidth", "text"]),
        ("Returns the Layer table.", ["returns", "the", "layer", "table"]),
        ("", []),
    ],
)
def test_split_words(text: str, words: list[str]) -> None:
    assert split_words(text) == words


def test_fold_drops_accents_and_compatibility_forms() -> None:
    assert fold("Tür ﬁle ①") == "Tur file 1"


def test_terms_are_stemmed_without_stop_words() -> None:
    analyzer = Analyzer(stop_words=["the", "of", "all"])
    assert analyzer.terms("List all the Layers of drawings") == ("list", "layer", "draw")
    assert analyzer.terms("listLayers") == analyzer.terms("list layer")


def test_words_listed_with_a_stem_of_their_own_keep_it() -> None:
    from cadmcp.daemon.search.vocabulary import shipped_analyzer

    analyzer = shipped_analyzer()
    assert analyzer.terms("open the drawings") == ("open", "drawing")
    assert analyzer.terms("draw a line") == ("draw", "line")  # the verb: to make lines
    assert analyzer.terms("the building's storeys") == ("building", "storey")

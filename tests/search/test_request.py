"""Each reader of a search request, on a table of requests and what it must read."""

from __future__ import annotations

import dataclasses

import pytest

from cadmcp.daemon.search import SearchIndex
from cadmcp.daemon.search.domain import HostDomain
from cadmcp.daemon.search.request import (
    Lexicon,
    read_apps,
    read_domains,
    read_intents,
    read_language,
    read_quantities,
    read_question,
    read_request,
    read_terms,
    read_words,
)

from .conftest import tool


@pytest.fixture(scope="module")
def lexicon() -> Lexicon:
    index = SearchIndex()
    code = dataclasses.replace(tool("execute_python_code", host="d", app="DXF"), fallback=("change", "query"))
    layers = tool("list_layers", host="d", app="DXF")
    index.replace_host("d", [layers, code], domain=HostDomain(terms=("layer", "block")))
    index.replace_host(
        "i", [tool("list_storeys", host="i", app="IFC")], domain=HostDomain(terms=("storey", "slab"))
    )
    index.replace_host(
        "f", [tool("list_documents", host="f", app="FreeCAD")], domain=HostDomain(names=("FreeCAD",))
    )
    return index.lexicon()


def test_terms_weigh_typed_words_above_their_synonyms(lexicon: Lexicon) -> None:
    terms = read_terms(["delete", "wall"], lexicon.vocabulary, 0.4)
    assert terms["delet"] == terms["wall"] == 1.0 and terms["remov"] == 0.4
    assert "remov" not in read_terms(["delete", "wall"], lexicon.vocabulary, 0.0)
    assert read_terms(["what", "is", "this"], lexicon.vocabulary, 0.4) == {}  # stop words say nothing


@pytest.mark.parametrize(
    ("words", "apps"),
    [
        ("export the dwg layers", {"dxf"}),
        ("list storeys in the ifc model", {"ifc"}),
        ("list storeys", set()),
        # a run of words spelling an alias names its app, however the name is split or typed
        ("open it in freecad", {"freecad"}),
        ("open it in FreeCAD", {"freecad"}),
        ("open it in Free CAD", {"freecad"}),
        ("the auto cad layers", {"dxf"}),
        ("a free tool for cad", set()),  # the words are there, not in a run that spells it
        ("open a cad file", set()),  # a stop word is no part of a name ("acad") unless the name has it
    ],
)
def test_apps_are_the_apps_the_request_names(lexicon: Lexicon, words: str, apps: set[str]) -> None:
    assert read_apps(read_words(words), lexicon)[0] == apps


def test_the_words_naming_an_app_are_read_as_its_terms(lexicon: Lexicon) -> None:
    assert read_apps(read_words("the auto cad layers of the DWG"), lexicon) == (
        {"dxf"},
        {"auto", "cad", "dwg"},
    )
    assert read_apps(read_words("the layers"), lexicon) == (set(), set())


@pytest.mark.parametrize(
    ("text", "apps"),
    [
        ("freeze every layer", {"dxf"}),
        ("how many slabs per storey", {"ifc"}),
        ("layer of the slab", set()),  # one word each: a tie says nothing
        ("rename block STOREY-SLAB", {"dxf"}),  # a name the request supplies says no app
    ],
)
def test_domains_are_the_apps_whose_declared_words_the_request_uses_most(
    lexicon: Lexicon, text: str, apps: set[str]
) -> None:
    request = read_request(text, lexicon)
    assert request.domains == apps


@pytest.mark.parametrize(
    ("text", "question"),
    [
        ("which layers are frozen", True),
        ("are any documents open?", True),
        ("Pad001 is red, why did the recompute fail", False),  # a later clause does not ask
        ("help me with python scripting", False),
        ("freeze layer A", False),
        ("purge the drawing, any unused blocks too", False),  # "any" opens only a first clause
        ("what's the total area of the slab's top faces", True),  # apostrophes are no quotes
        ("por favor mueve los muros", False),
    ],
)
def test_a_question_opens_with_a_question_word_or_ends_with_a_mark(
    lexicon: Lexicon, text: str, question: bool
) -> None:
    words = read_request(text, lexicon).words
    assert read_question(text, words, lexicon.vocabulary) is question


@pytest.mark.parametrize(
    ("words", "question", "intents"),
    [
        ("rename the layer", False, {"change"}),
        ("please rename the layer", False, {"change"}),
        ("save my changes", False, set()),
        ("that edit was wrong", False, {"change"}),  # a verb first is a command, even as a noun
        ("how many walls", False, {"query"}),
        ("layer umbenennen", False, {"change"}),
        ("rename the layer", True, set()),  # a question makes no change
        # every shipped language lists the CAD change verbs, not only English
        ("élargir la porte", False, {"change"}),
        ("desplazar el bloque", False, {"change"}),
        ("ruotare il blocco", False, {"change"}),
        ("die Bohrung vergrößern", False, {"change"}),
        # where a verb may stand anywhere, no verb is listed whose noun stems as it does
        ("die Ausrichtung der Wand", False, set()),
        ("de afronding van de rand", False, set()),
        # "drawing", the document, keeps a term of its own: it is no "draw" (the stemmer's word)
        ("draw a circle", False, {"change"}),
        ("drawing units", False, set()),
        ("closed polylines on layer WALLS", False, set()),
        ("building height", False, set()),
        ("laat de tekening van boven zien", False, set()),  # Dutch, French, Spanish alike
        ("le dessin du rez-de-chaussée", False, set()),
        ("los bloques del dibujo", False, set()),
        ("dibujar una línea", False, {"change"}),
    ],
)
def test_intents_are_the_kinds_of_request_the_words_make(
    lexicon: Lexicon, words: str, question: bool, intents: set[str]
) -> None:
    assert set(read_intents(read_words(words), question, (), lexicon.vocabulary)) == intents


@pytest.mark.parametrize(
    ("words", "quantities"),
    [
        ("total wall area", ("area",)),
        ("volume and length of the beams", ("volum", "length")),
        ("how many walls", ()),
    ],
)
def test_quantities_are_the_measures_asked_for(
    lexicon: Lexicon, words: str, quantities: tuple[str, ...]
) -> None:
    assert read_quantities(words.split(), lexicon.vocabulary) == quantities


def test_a_request_is_read_once_into_a_frozen_record(lexicon: Lexicon) -> None:
    request = read_request("rename layer WALL in the DWG", lexicon)
    assert request.apps == {"dxf"} and "change" in request.intents and not request.question
    with pytest.raises(AttributeError):
        request.text = "other"  # type: ignore[misc]


def test_the_kind_of_request_is_read_only_where_a_general_purpose_tool_may_take_it() -> None:
    index = SearchIndex()
    index.replace_host("d", [tool("list_layers", host="d", app="DXF")])
    request = read_request("rename the layer by 5 mm", index.lexicon())
    assert not request.intents and not request.amounts  # no fallback tool: nothing reads them


@pytest.mark.parametrize(
    ("text", "amounts", "change"),
    [
        ("make the bracket 5 mm thicker", ("5 mm",), True),
        ("widen the opening by 0.5 m", ("5 m",), True),
        ("turn it 30 degrees", ("30 degrees",), True),
        ("how many walls are thicker than 200 mm", ("200 mm",), False),  # asks for a count
        ("which beams are longer than 6 m?", ("6 m",), False),  # a question
        ("entities on layer 0", (), False),
    ],
)
def test_an_amount_with_no_other_kind_of_request_is_a_change(
    lexicon: Lexicon, text: str, amounts: tuple[str, ...], change: bool
) -> None:
    request = read_request(text, lexicon)
    assert request.amounts == amounts
    assert ("change" in request.intents) is change


@pytest.mark.parametrize(
    ("text", "view"),
    [
        ("show me the model from the top", True),
        ("Draufsicht des Modells", True),
        ("vue de dessus", True),
        ("move the door to the top of the wall", False),
        ("show me the model", False),
    ],
)
def test_a_view_direction_says_view(lexicon: Lexicon, text: str, view: bool) -> None:
    assert (read_request(text, lexicon).terms.get("view") == 1.0) is view


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("rename the layer", "en"),
        ("Betonvolumen aller Decken summieren", "de"),
        ("laag hernoemen naar A-MUUR", "nl"),
        ("combien de portes", "fr"),
        ("hoeveel deuren", "nl"),
    ],
)
def test_language_is_the_one_most_words_are_listed_in(lexicon: Lexicon, text: str, language: str) -> None:
    assert read_request(text, lexicon).language == language


@pytest.mark.parametrize(
    ("typed", "listed"),
    [("zeichne eine linie", "zeichnen"), ("dessine un cercle", "dessiner"), ("sposta il blocco", "spostare")],
)
def test_a_verb_is_matched_in_its_own_language_as_commands_are_typed(
    lexicon: Lexicon, typed: str, listed: str
) -> None:
    """The imperative and the infinitive meet as one stem of that language's stemmer."""
    intents = read_intents(typed.split(), False, (), lexicon.vocabulary)
    assert intents["change"][0][0] == typed.split()[0] and listed not in typed


def test_declared_domain_words_match_in_the_requests_language(lexicon: Lexicon) -> None:
    index = SearchIndex()
    index.replace_host(
        "d", [tool("list_layers", host="d", app="DXF")], domain=HostDomain(terms=("plan", "layer"))
    )
    index.replace_host(
        "i", [tool("list_storeys", host="i", app="IFC")], domain=HostDomain(terms=("Decke", "wall"))
    )
    assert read_domains(
        "alle Decken zählen", read_language(["alle", "decken", "zahlen"], index.vocabulary), index.lexicon()
    )[0] == {"ifc"}
    english = index.vocabulary.languages[0]
    assert read_domains("rotate the wall in the plane", english, index.lexicon())[0] == {"ifc"}  # no 'plan'

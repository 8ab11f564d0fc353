"""A validation_error's `expected` says what fits the schema, whatever the kind of constraint."""

from __future__ import annotations

from typing import Any

import pytest

from cadmcp.daemon.argcheck import ArgumentChecker
from cadmcp.daemon.catalog import Capability, HostKey
from cadmcp.daemon.errors import DaemonError

SCHEMA = {
    "type": "object",
    "properties": {
        "width": {"type": "integer", "minimum": 64, "maximum": 4096},
        "scale": {"type": "number", "exclusiveMinimum": 0},
        "layer": {"type": "string", "minLength": 1, "pattern": "^[A-Z-]+$"},
        "tags": {"type": "array", "maxItems": 3, "uniqueItems": True},
        "mode": {"anyOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "null"}]},
        "height": {"anyOf": [{"type": "integer"}, {"type": "null"}], "minimum": 64, "maximum": 4096},
    },
}


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"width": 10}, "an integer >= 64 <= 4096"),
        ({"scale": 0}, "a number > 0"),
        ({"layer": ""}, "a string of at least 1 character matching '^[A-Z-]+$'"),
        ({"layer": "walls"}, "a string of at least 1 character matching '^[A-Z-]+$'"),
        ({"tags": [1, 1]}, "a list of at most 3 items without repeated items"),
        ({"mode": "c"}, "one of 'a', 'b'"),
        ({"height": 8192}, "an integer >= 64 <= 4096"),  # pydantic's optional field: limits beside anyOf
    ],
)
def test_expected_says_what_fits_not_what_was_wrong(arguments: dict[str, Any], expected: str) -> None:
    cap = Capability("id", "tool", "draw", "draw", None, "", {"inputSchema": SCHEMA}, HostKey("m", 1))
    with pytest.raises(DaemonError) as raised:
        ArgumentChecker().check(cap, arguments)
    errors = raised.value.details["errors"]
    assert errors and all(e["expected"] == expected for e in errors), errors
    assert all(e["problem"] != e["expected"] for e in errors)


def test_each_missing_field_is_named_once() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    }
    cap = Capability("id", "tool", "get-sum", "get-sum", None, "", {"inputSchema": schema}, HostKey("m", 1))
    with pytest.raises(DaemonError) as raised:
        ArgumentChecker().check(cap, {})
    assert [e["field"] for e in raised.value.details["errors"]] == ["a", "b"]
    assert str(raised.value).count("a: missing") == 1


def test_an_unknown_argument_names_the_close_one() -> None:
    schema = {"type": "object", "properties": {"note": {"type": "string"}}}
    cap = Capability("id", "tool", "add", "add", None, "", {"inputSchema": schema}, HostKey("m", 1))
    with pytest.raises(DaemonError) as raised:
        ArgumentChecker().check(cap, {"notes": "x"})
    assert "notes: unknown argument (did you mean 'note'). Fix them" in str(raised.value)


def test_a_template_asks_for_the_query_variables_its_host_says_a_read_needs() -> None:
    template = "prompt://review{?code,language}"
    raw = {"_meta": {"io.cadmcp/requiredArgs": ["code"]}}
    cap = Capability("id", "resource_template", template, template, None, "", raw, HostKey("m", 1))
    assert cap.required_args == ["code"]
    ArgumentChecker().check(cap, {"code": "x"})
    with pytest.raises(DaemonError) as raised:
        ArgumentChecker().check(cap, {"code": "x", "langauge": "rust"})
    assert "(language optional): unknown 'langauge'" in raised.value.message, raised.value
    with pytest.raises(DaemonError) as raised:
        ArgumentChecker().check(cap, {"language": "rust"})
    assert "missing ['code']" in raised.value.message


@pytest.mark.parametrize(
    ("template", "arguments", "missing"),
    [
        ("prompt://args-prompt{?city,state}", {"city": "Oslo"}, None),  # a query variable may be left out
        ("prompt://args-prompt{?city,state}", {}, None),  # (the host says which it needs itself)
        ("drawing://{name}/layers{?kind}", {"kind": "frozen"}, "missing ['name']"),  # a path one may not
        ("drawing://{name}/layers{&kind}", {"name": "a"}, None),
        ("file:///{path*}{?rev}", {}, "missing ['path', 'rev']"),  # one the SDK cannot parse: all asked for
    ],
)
def test_a_template_asks_for_its_path_variables_not_its_query_ones(
    template: str, arguments: dict[str, Any], missing: str | None
) -> None:
    cap = Capability("id", "resource_template", template, template, None, "", {}, HostKey("m", 1))
    if missing is None:
        ArgumentChecker().check(cap, arguments)
        return
    with pytest.raises(DaemonError) as raised:
        ArgumentChecker().check(cap, arguments)
    assert missing in raised.value.message, raised.value


def test_a_resource_read_with_arguments_is_refused_not_read_without_them() -> None:
    cap = Capability("id", "resource", "dxf://schedules", "schedules", None, "", {}, HostKey("m", 1))
    ArgumentChecker().check(cap, {})
    with pytest.raises(DaemonError) as raised:
        ArgumentChecker().check(cap, {"anything": 1})
    assert "a read takes no arguments (got 'anything')" in raised.value.message, raised.value


def test_a_wrong_value_of_a_union_is_told_by_the_branch_of_its_kind() -> None:
    """A list of numbers where a list of strings (or null) is taken: its items are named, with
    an example of the argument, not "not valid under any of the given schemas"."""
    mark = {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}], "default": None}
    schema = {"type": "object", "properties": {"mark": mark}}
    cap = Capability("id", "tool", "view", "view", None, "", {"inputSchema": schema}, HostKey("m", 1))
    with pytest.raises(DaemonError) as raised:
        ArgumentChecker().check(cap, {"mark": [1980, 2217]})
    said = raised.value.message
    assert "mark.0: got 1980, expected a string; mark.1: got 2217" in said, said
    assert 'arguments={"mark":["<mark>"]}' in said
    with pytest.raises(DaemonError) as raised:
        ArgumentChecker().check(cap, {"mark": "1980"})
    assert "mark: got '1980', expected a list of string items" in raised.value.message


def test_an_example_for_a_models_argument_follows_its_ref_and_is_itself_valid() -> None:
    """A tool taking a pydantic model (`place_order(order: Order)`) has `$ref`s into `$defs`: the
    example a validation error offers is a whole order that passes the same check, and search's
    argsHint names the model, not `any`."""
    from pydantic import BaseModel, Field

    from cadmcp.daemon.searching import args_hint

    class Item(BaseModel):
        sku: str
        qty: int = Field(ge=1)

    class Customer(BaseModel):
        name: str
        email: str

    class Order(BaseModel):
        customer: Customer
        items: list[Item] = Field(min_length=2)
        note: str | None = None

    class Arguments(BaseModel):
        order: Order

    schema = Arguments.model_json_schema()
    cap = Capability(
        "id", "tool", "place_order", "place_order", None, "", {"inputSchema": schema}, HostKey("m", 1)
    )
    with pytest.raises(DaemonError) as raised:
        ArgumentChecker().check(
            cap, {"order": {"customer": {"name": "A"}, "items": [{"sku": "x", "qty": 0}]}}
        )
    example = raised.value.details["example"]
    assert len(example["order"]["items"]) == 2 and example["order"]["items"][0]["qty"] == 1, example
    ArgumentChecker().check(cap, example)  # the example passes
    Arguments.model_validate(example)
    assert args_hint(cap) == "order: Order (object)"


def test_the_example_of_an_optional_bounded_field_is_within_its_bounds() -> None:
    """view_screenshot's height 8192 was answered "expected an integer" with the example height 1,
    which the same check refuses."""
    cap = Capability("id", "tool", "draw", "draw", None, "", {"inputSchema": SCHEMA}, HostKey("m", 1))
    with pytest.raises(DaemonError) as raised:
        ArgumentChecker().check(cap, {"height": 8192})
    example = raised.value.details["example"]
    assert example["height"] == 64, example
    ArgumentChecker().check(cap, example)  # the example itself passes

"""Checking `invoke_dynamic` arguments against the capability's own `inputSchema`.

A call with bad arguments never reaches the host: the agent gets one `validation_error`
naming each bad field, what was expected, what it sent (clipped) and a complete example.
Validators (the `jsonschema` package, the schema's own draft, 2020-12 by default) are
compiled once per capability and kept for the most recently used ones. A host whose
schema is itself invalid is left to check its own arguments.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Any

from cadmcp.daemon.catalog import Capability
from cadmcp.daemon.errors import validation_error
from cadmcp.wire.echo import echo

log = logging.getLogger("cadmcp.daemon")

MAX_REPORTED = 8
"""Bad fields listed in one error (the count says how many there were)."""
_INVALID_SCHEMA = object()
_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


class ArgumentChecker:
    """Compiled validators for recently used capabilities."""

    def __init__(self, capacity: int = 4096) -> None:
        self._validators: OrderedDict[str, Any] = OrderedDict()
        self._capacity = capacity

    def check(self, cap: Capability, arguments: dict[str, Any]) -> None:
        """Raise a `validation_error` when `arguments` do not fit the capability."""
        if cap.kind == "resource_template":
            _check_template(cap, arguments)
        elif cap.kind == "resource" and arguments:
            named = ", ".join(echo(n, 40) for n in sorted(arguments)[:MAX_REPORTED])
            raise validation_error(
                f"{echo(cap.target, 200)} is a resource: a read takes no arguments (got {named}). Call it "
                "with no arguments, or search for a resource template or a tool that takes these.",
                example={},
            )
        elif cap.kind == "tool":
            self.check_schema(cap.id, cap.target, cap.raw.get("inputSchema"), arguments)

    def check_schema(self, key: str, target: str, schema: Any, arguments: dict[str, Any]) -> None:
        """Raise a `validation_error` when `arguments` do not fit the tool ``target``'s ``schema``
        (a host tool's, or one of the daemon's own); ``key`` names the compiled validator."""
        validator = self._validator(key, target, schema)
        if validator is not _INVALID_SCHEMA:
            _check_tool(target, schema, validator, arguments)

    def _validator(self, key: str, target: str, schema: Any) -> Any:
        validator = self._validators.get(key)
        if validator is None:
            validator = _compile(target, schema)
            self._validators[key] = validator
            if len(self._validators) > self._capacity:
                self._validators.popitem(last=False)
        else:
            self._validators.move_to_end(key)
        return validator


def _compile(target: str, schema: Any) -> Any:
    from jsonschema import Draft202012Validator, SchemaError, validators

    if not isinstance(schema, dict):
        return _INVALID_SCHEMA
    try:
        cls = validators.validator_for(schema, default=Draft202012Validator)
        cls.check_schema(schema)
        return cls(schema)
    except (SchemaError, Exception) as exc:  # a host's broken schema: the host checks for itself
        log.info("inputSchema of %s is not valid JSON Schema (%s); not checked", target, exc)
        return _INVALID_SCHEMA


def _check_tool(target: str, schema: dict[str, Any], validator: Any, arguments: dict[str, Any]) -> None:
    try:
        errors = sorted(validator.iter_errors(arguments), key=lambda e: [str(p) for p in e.absolute_path])
    except Exception as exc:  # e.g. a pattern the regex engine rejects: leave it to the host
        log.info("checking arguments of %s failed (%s); not checked", target, exc)
        return
    # jsonschema reports each missing required field as an error of its own, each naming the whole list
    unique = {(p["field"], p["problem"]): p for error in errors for p in _describe(error)}
    problems = list(unique.values())
    problems.extend(_unknown_arguments(schema, arguments, {p["field"] for p in problems}))
    if not problems:
        return
    for p in problems:  # field names are the caller's text: a 50,000-character key comes back clipped
        p["field"] = _field_name(p["field"])
    shown = problems[:MAX_REPORTED]
    summary = "; ".join(f"{p['field']}: {p['problem']}" for p in shown)
    more = f" (and {len(problems) - len(shown)} more)" if len(problems) > len(shown) else ""
    example = example_arguments(schema)
    props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    for p in shown:  # a wrong optional argument: its example too
        name = p["field"].split(".")[0]
        if name in props and name not in example and p["expected"] != "absent":
            example[name] = example_value(props[name], name, schema)
    raise validation_error(
        f"Invalid arguments for {target}: {summary}{more}. Fix them and call again; "
        f"for example arguments={_compact(example)}. Nothing ran.",
        errors=shown,
        example=example,
    )


def _describe(error: Any) -> list[dict[str, Any]]:
    """One entry per bad field: where, what is wrong, what was expected."""
    path = ".".join(str(p) for p in error.absolute_path)
    kind = error.validator
    if kind == "required" and isinstance(error.instance, dict):
        schema_props = (error.schema or {}).get("properties") or {}
        return [
            {
                "field": f"{path}.{name}" if path else name,
                "problem": f"missing (expected {_expected(schema_props.get(name))})",
                "expected": _expected(schema_props.get(name)),
            }
            for name in error.validator_value
            if name not in error.instance
        ]
    if kind == "additionalProperties" and isinstance(error.instance, dict):
        known = set((error.schema or {}).get("properties") or {})
        return [
            {
                "field": f"{path}.{name}" if path else name,
                "problem": f"unknown argument (this tool takes {sorted(known) or 'no arguments'})",
                "expected": "absent",
            }
            for name in error.instance
            if name not in known
        ][:MAX_REPORTED]
    if kind in ("anyOf", "oneOf") and (inner := _branch_errors(error)):
        return [p for e in inner for p in _describe(e)]  # the branch of the value's kind says what is wrong
    expected = _expected(error.schema)  # what fits, in words; the problem says what was wrong
    if kind in ("minItems", "maxItems") and isinstance(error.instance, list):
        problem = f"has {len(error.instance)} items, expected {expected}"
        return [{"field": path or "(arguments)", "problem": problem, "expected": _clip(expected)}]
    worded = kind in ("type", "enum", "const", "anyOf", "oneOf", *_BOUNDS)
    return [
        {
            "field": path or "(arguments)",
            "problem": f"got {echo(error.instance, 40)}, expected {expected}"
            if worded
            else _clip(error.message),
            "expected": _clip(str(expected)),
        }
    ]


def _branch_errors(error: Any) -> list[Any]:
    """Of a value no branch of an `anyOf`/`oneOf` takes, the errors of the one branch whose type
    it has (a list of numbers where a list of strings or null is taken: its items are wrong); none
    when no branch or several have its type (the union's own wording is then clearer)."""
    by_branch: dict[Any, list[Any]] = {}
    for sub in error.context or ():
        if sub.relative_schema_path:
            by_branch.setdefault(sub.relative_schema_path[0], []).append(sub)
    fitting = [
        errors
        for errors in by_branch.values()
        if not any(e.validator == "type" and len(e.relative_schema_path) == 2 for e in errors)
    ]
    return fitting[0] if len(fitting) == 1 else []


def _unknown_arguments(
    schema: dict[str, Any], arguments: dict[str, Any], seen: set[str]
) -> list[dict[str, Any]]:
    """Arguments the tool does not declare, when it declares some and says nothing of others.

    JSON Schema lets undeclared properties through by default, and hosts built on the MCP SDK
    drop them silently, so a misspelt optional argument would be ignored without a word.
    """
    import difflib

    props = schema.get("properties")
    if not isinstance(props, dict) or not props or "additionalProperties" in schema:
        return []
    if "patternProperties" in schema:
        return []
    out = []
    for name in arguments:
        if name in props or name in seen:
            continue
        close = difflib.get_close_matches(name, list(props), n=1)
        hint = f" (did you mean {close[0]!r})" if close else f" (this tool takes {sorted(props)})"
        out.append({"field": name, "problem": f"unknown argument{hint}", "expected": "absent"})
    return out


def _expected(spec: Any) -> str:
    """A schema fragment in words: `a string`, `one of 'back', 'forward'`, `an integer >= 1`."""
    if not isinstance(spec, dict):
        return "a value"
    if "enum" in spec and isinstance(spec["enum"], list):
        return "one of " + ", ".join(echo(v, 30) for v in spec["enum"][:10])
    if "const" in spec:
        return f"exactly {echo(spec['const'], 30)}"
    kind = spec.get("type")
    if kind is None:
        branches = spec.get("anyOf") or spec.get("oneOf")
        if isinstance(branches, list):  # limits beside the branches hold for each (an optional integer's)
            words = [
                _expected(_with_limits(b, spec))
                for b in branches
                if not (isinstance(b, dict) and b.get("type") == "null")
            ]
            return " or ".join(words) or "a value"
        return f"a value {_constraints(spec)}".strip()
    kinds = kind if isinstance(kind, list) else [kind]
    words = {
        "string": "a string",
        "integer": "an integer",
        "number": "a number",
        "boolean": "true or false",
        "array": "a list",
        "object": "an object",
        "null": "null",
    }
    text = " or ".join(words.get(str(k), str(k)) for k in kinds)
    items = spec.get("items")
    if kinds == ["array"] and isinstance(items, dict) and items:
        text = f"a list of {_expected(items).removeprefix('a ').removeprefix('an ')} items"
    return f"{text} {_constraints(spec)}".strip()


LIMITS = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "pattern",
)
"""Schema keywords that bound a value, which pydantic puts beside an optional field's branches."""


def _with_limits(branch: Any, wrapper: dict[str, Any]) -> Any:
    """A branch of `wrapper`'s anyOf/oneOf with the limits the wrapper sets beside them."""
    if not isinstance(branch, dict):
        return branch
    return {**{k: wrapper[k] for k in LIMITS if k in wrapper}, **branch}


def _constraints(spec: dict[str, Any]) -> str:
    """The limits a schema fragment sets, in words: `>= 64 <= 4096`, `of at least 1 character`."""

    def count(n: Any, unit: str) -> str:
        return f"{n} {unit}" + ("" if n == 1 else "s")

    parts = [
        f">= {spec['minimum']}" if "minimum" in spec else "",
        f"> {spec['exclusiveMinimum']}" if _number(spec.get("exclusiveMinimum")) else "",
        f"<= {spec['maximum']}" if "maximum" in spec else "",
        f"< {spec['exclusiveMaximum']}" if _number(spec.get("exclusiveMaximum")) else "",
        f"(a multiple of {spec['multipleOf']})" if "multipleOf" in spec else "",
        f"of at least {count(spec['minLength'], 'character')}" if "minLength" in spec else "",
        f"of at most {count(spec['maxLength'], 'character')}" if "maxLength" in spec else "",
        f"matching {echo(spec['pattern'], 60)}" if "pattern" in spec else "",
        f"in {echo(spec['format'], 30)} format" if "format" in spec else "",
        f"of at least {count(spec['minItems'], 'item')}" if "minItems" in spec else "",
        f"of at most {count(spec['maxItems'], 'item')}" if "maxItems" in spec else "",
        "without repeated items" if spec.get("uniqueItems") is True else "",
        f"with at least {count(spec['minProperties'], 'entry')}" if "minProperties" in spec else "",
        f"with at most {count(spec['maxProperties'], 'entry')}" if "maxProperties" in spec else "",
    ]
    return " ".join(p for p in parts if p)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


MAX_REF_DEPTH = 8
"""`$ref`s followed into `$defs` for one example (a recursive schema stops there)."""


def resolve_ref(spec: Any, root: Any) -> Any:
    """The fragment a local `$ref` (``#/$defs/Order``) names in ``root``; ``spec`` itself when it has
    none, or the reference goes nowhere."""
    ref = spec.get("$ref") if isinstance(spec, dict) else None
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return spec
    target: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(target, dict) or part not in target:
            return spec
        target = target[part]
    if not isinstance(target, dict):
        return spec
    siblings = {k: v for k, v in spec.items() if k != "$ref"}  # e.g. a description beside the $ref
    return {**target, **siblings}


def example_value(spec: Any, name: str = "value", root: Any = None, depth: int = 0) -> Any:
    """A plausible value for a schema fragment (its own example, default or first choice first);
    ``root`` is the whole schema its local `$ref`s point into."""
    if depth > MAX_REF_DEPTH:
        return None
    spec = resolve_ref(spec, root)
    if not isinstance(spec, dict):
        return f"<{name}>"
    for key in ("examples",):
        if isinstance(spec.get(key), list) and spec[key]:
            return spec[key][0]
    for key in ("default", "const"):
        if key in spec and spec[key] is not None:
            return spec[key]
    if isinstance(spec.get("enum"), list) and spec["enum"]:
        return spec["enum"][0]
    branches = spec.get("anyOf") or spec.get("oneOf") or spec.get("allOf")
    if isinstance(branches, list):
        for branch in branches:
            if isinstance(branch, dict) and branch.get("type") != "null":
                return example_value(_with_limits(branch, spec), name, root, depth + 1)
    kind = spec.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind is None and isinstance(spec.get("properties"), dict):
        kind = "object"
    if kind == "integer":
        return int(spec.get("minimum", 1))
    if kind == "number":
        return spec.get("minimum", 1.0)
    if kind == "boolean":
        return True
    if kind == "array":
        items = spec.get("items")
        least = spec.get("minItems") if isinstance(spec.get("minItems"), int) else 0
        if not isinstance(items, dict) or not items:
            return []
        return [example_value(items, name, root, depth + 1)] * max(1, min(least, 3))
    if kind == "object":
        return example_arguments(spec, root, depth + 1)
    return f"<{name}>"


def example_arguments(schema: dict[str, Any], root: Any = None, depth: int = 0) -> dict[str, Any]:
    """Arguments that satisfy the required part of an object schema (``root``: the whole schema,
    for `$ref`s; the schema itself at the top)."""
    root = schema if root is None else root
    props = schema.get("properties") or {}
    required = [r for r in schema.get("required") or [] if isinstance(r, str)]
    return {name: example_value(props.get(name), name, root, depth) for name in required}


def _check_template(cap: Capability, arguments: dict[str, Any]) -> None:
    names, optional = cap.template_args
    unknown = sorted(set(arguments) - set(names))
    missing = [n for n in names if n not in arguments and n not in optional]
    bad = [
        n
        for n, v in arguments.items()
        if n in names
        and not (
            (isinstance(v, str | int | float) and not isinstance(v, bool))
            or (isinstance(v, list) and all(isinstance(i, str | int | float) for i in v))
        )
    ]
    if not (unknown or missing or bad):
        return
    parts = []
    if missing:
        parts.append(f"missing {missing}")
    if unknown:
        parts.append(f"unknown {', '.join(echo(u, 40) for u in unknown[:MAX_REPORTED])}")
    if bad:
        parts.append(f"{bad} must be strings")
    example = {n: f"<{n}>" for n in names}
    optional_note = f" ({', '.join(n for n in names if n in optional)} optional)" if optional else ""
    raise validation_error(
        f"{cap.target} takes the arguments {names}{optional_note}: {'; '.join(parts)}. "
        f"For example arguments={_compact(example)}. Nothing was read.",
        example=example,
    )


def _field_name(name: str, limit: int = 64) -> str:
    """A field's path as the caller wrote it, or a clipped echo of it when it is too long to repeat."""
    return name if len(name) <= limit and name.isprintable() else echo(name, 40)


def _clip(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _compact(value: Any) -> str:
    from cadmcp.wire.jsonwire import dumps

    return _clip(dumps(value), 300)

"""Turning MCP list results (tools, resources, resource templates) into `CapabilityDoc`s.

The daemon calls `capability_docs` with a host's list results as JSON dicts (MCP field names:
`inputSchema`, `uriTemplate`, `_meta`); the evaluation command uses `build_index_from_catalog`
on a whole `catalog.json`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from cadmcp.daemon.search.capability import CapabilityDoc, Kind
from cadmcp.daemon.search.domain import meta_domain, meta_fallback
from cadmcp.daemon.search.index import SearchIndex
from cadmcp.wire.meta import KEYWORDS

#: `_meta` key under which a tool, resource or template lists extra search words or phrases,
#: e.g. `{"io.cadmcp/keywords": ["door schedule", "takeoff", "Türliste"]}`.
KEYWORDS_META_KEY = KEYWORDS

_TEMPLATE_VAR = re.compile(r"\{[+#./;?&=,!@|]?([^{}]+)\}")


def default_key(host_key: str, kind: Kind, target: str) -> str:
    """The key `capability_docs` gives a capability when the caller names no key function."""
    return f"{host_key}/{kind}/{target}"


def meta_keywords(meta: Mapping[str, Any] | None) -> tuple[str, ...]:
    """Search keywords from an MCP `_meta` object (a list of strings, or one comma-separated string)."""
    if not meta:
        return ()
    value = meta.get(KEYWORDS_META_KEY)
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list | tuple):
        return ()
    return tuple(str(v).strip() for v in value if str(v).strip())


def schema_params(schema: Mapping[str, Any] | None) -> tuple[tuple[str, str], ...]:
    """(name, description) for each top-level property of a JSON Schema; enum values join the description."""
    props = (schema or {}).get("properties") or {}
    out: list[tuple[str, str]] = []
    if not isinstance(props, Mapping):
        return ()
    for name, spec in props.items():
        text = ""
        if isinstance(spec, Mapping):
            parts = [str(spec.get("title") or ""), str(spec.get("description") or "")]
            enum = spec.get("enum")
            if isinstance(enum, list):
                parts.append(" ".join(str(v) for v in enum if isinstance(v, str)))
            text = " ".join(p for p in parts if p)
        out.append((str(name), text))
    return tuple(out)


def template_params(uri_template: str) -> tuple[tuple[str, str], ...]:
    """The `{variables}` of an RFC 6570 URI template, as (name, "") pairs."""
    names: list[str] = []
    for group in _TEMPLATE_VAR.findall(uri_template):
        for var in group.split(","):
            var = var.split(":")[0].rstrip("*").strip()
            if var and var not in names:
                names.append(var)
    return tuple((n, "") for n in names)


def capability_docs(
    *,
    host_app: str,
    host_version: str,
    host_key: str,
    tools: Iterable[Mapping[str, Any]] = (),
    resources: Iterable[Mapping[str, Any]] = (),
    resource_templates: Iterable[Mapping[str, Any]] = (),
    key: Callable[[Kind, str], str] | None = None,
) -> list[CapabilityDoc]:
    """One `CapabilityDoc` per listed tool, resource and resource template of one host."""

    def make(
        kind: Kind, target: str, item: Mapping[str, Any], params: tuple[tuple[str, str], ...]
    ) -> CapabilityDoc:
        annotations = item.get("annotations") or {}
        title = item.get("title") or (annotations.get("title") if isinstance(annotations, Mapping) else None)
        return CapabilityDoc(
            key=key(kind, target) if key else default_key(host_key, kind, target),
            kind=kind,
            target=target,
            name=str(item.get("name") or target),
            title=str(title) if title else None,
            description=str(item.get("description") or ""),
            params=params,
            keywords=meta_keywords(item.get("_meta")),
            host_app=host_app,
            host_version=host_version,
            host_key=host_key,
            fallback=meta_fallback(item.get("_meta")) if kind == "tool" else (),
            read_only=isinstance(annotations, Mapping) and annotations.get("readOnlyHint") is True,
        )

    docs = [make("tool", t["name"], t, schema_params(t.get("inputSchema"))) for t in tools]
    docs += [make("resource", r["uri"], r, ()) for r in resources]
    docs += [
        make("resource_template", t["uriTemplate"], t, template_params(t["uriTemplate"]))
        for t in resource_templates
    ]
    return docs


def catalog_host_key(host: Mapping[str, Any]) -> str:
    """The host key used for a `catalog.json` host entry: `{hostApp}_{version}_{pid}`."""
    return f"{host['hostApp']}_{host.get('version', '')}_{host.get('pid', 0)}"


def build_index_from_catalog(catalog: Mapping[str, Any], index: SearchIndex | None = None) -> SearchIndex:
    """A search index holding every host of an evaluation `catalog.json` (see docs/search.md)."""
    hosts = catalog.get("hosts")
    if not isinstance(hosts, list):
        raise ValueError('catalog must be an object with a "hosts" list (see docs/search.md for the format)')
    index = index if index is not None else SearchIndex()
    seen: set[str] = set()
    for n, host in enumerate(hosts):
        if not isinstance(host, Mapping) or "hostApp" not in host:
            raise ValueError(f"catalog host #{n} has no hostApp; every host needs hostApp, version and pid")
        host_key = catalog_host_key(host)
        if host_key in seen:
            raise ValueError(f"catalog hosts #{n} repeats host {host_key!r}; give each host its own pid")
        seen.add(host_key)
        docs = capability_docs(
            host_app=str(host["hostApp"]),
            host_version=str(host.get("version", "")),
            host_key=host_key,
            tools=host.get("tools") or (),
            resources=host.get("resources") or (),
            resource_templates=host.get("resourceTemplates") or (),
        )
        index.replace_host(host_key, docs, domain=meta_domain(host.get("_meta")))
    return index

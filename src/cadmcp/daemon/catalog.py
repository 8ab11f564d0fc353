"""The daemon's view of each host's catalog: immutable entries and capability ids.

An id is a short digest of (host instance, kind, target, content). It stays the same across
catalog refreshes while the capability's content (name, description, schemas) is unchanged,
and stops resolving once the host is gone or the capability changed. The ledger remembers
ids it has issued so a stale id can be told apart from a malformed one and explained.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Literal

from cadmcp.daemon.search.catalog import template_params
from cadmcp.wire.meta import REQUIRED_ARGS

Kind = Literal["tool", "resource", "resource_template"]
KINDS: tuple[Kind, ...] = ("tool", "resource", "resource_template")
ID_PREFIX = "c"
ID_RE = re.compile(r"c[a-z2-7]{12}")
"""Use with `fullmatch` (a trailing newline must not pass)."""


@dataclass(frozen=True, slots=True)
class HostKey:
    """A host instance: the machine it runs on and its process id."""

    machine_id: str
    pid: int

    @property
    def instance_id(self) -> str:
        """The `hostInstanceId` agents see."""
        return f"{short_machine_id(self.machine_id)}-{self.pid}"


def short_machine_id(machine_id: str) -> str:
    """Eight characters naming a machine in host instance ids: the start of a system machine id
    (random hex), else a digest, so configured ids like `render-1` and `render-2` stay apart."""
    if len(machine_id) >= 16 and all(c in "0123456789abcdef" for c in machine_id):
        return machine_id[:8]
    return hashlib.blake2b(machine_id.encode(), digest_size=4).hexdigest()


@dataclass(frozen=True, slots=True)
class Capability:
    """One tool, resource or resource template of one host."""

    id: str
    kind: Kind
    target: str
    name: str
    title: str | None
    description: str
    raw: dict[str, Any]
    host: HostKey

    @property
    def required_args(self) -> list[str]:
        if self.kind == "tool":
            return list((self.raw.get("inputSchema") or {}).get("required") or [])
        if self.kind == "resource_template":
            names, optional = self.template_args
            return [n for n in names if n not in optional]
        return []

    @property
    def template_args(self) -> tuple[list[str], frozenset[str]]:
        """A resource template's variables, and those a read may leave out: its query variables
        (`{?a,b}`: left out, they are left out of the URI) but those the host says a read needs
        (`io.cadmcp/requiredArgs`, a foreign prompt's required arguments)."""
        names = [name for name, _ in template_params(self.target)]
        meta = self.raw.get("_meta")
        needed = meta.get(REQUIRED_ARGS) if isinstance(meta, dict) else None
        needed = {n for n in needed if isinstance(n, str)} if isinstance(needed, list) else set()
        return names, frozenset(v for v in query_variables(self.target) if v not in needed)


def content_digest(raw: dict[str, Any]) -> str:
    """A digest of what makes a capability what it is (everything but volatile `_meta` stamps)."""
    clean = {k: v for k, v in raw.items() if k != "_meta"}
    meta = raw.get("_meta")
    if isinstance(meta, dict):
        clean["_meta"] = {k: v for k, v in meta.items() if not k.startswith("io.modelcontextprotocol/")}
    return hashlib.blake2b(
        json.dumps(clean, sort_keys=True, default=str).encode(), digest_size=16
    ).hexdigest()


def mint_id(host: HostKey, kind: str, target: str, digest: str) -> str:
    material = f"{host.machine_id}|{host.pid}|{kind}|{target}|{digest}".encode()
    raw = hashlib.blake2b(material, digest_size=8).digest()
    return ID_PREFIX + base64.b32encode(raw).decode().lower().rstrip("=")[:12]


@dataclass(frozen=True)
class HostEntry:
    """An immutable snapshot of one connected host and its catalog."""

    key: HostKey
    host_app: str
    version: str
    endpoint: str
    protocol_version: str
    server_name: str
    capabilities: tuple[Capability, ...] = ()
    by_id: dict[str, Capability] = field(default_factory=dict, compare=False)
    state: dict[str, Any] = field(default_factory=dict, compare=False)
    """What the host says about itself: `phase` (loading/ready), `documents`, `activeDocument`."""
    machine: str | None = None
    """The name of the other machine this host runs on; None for a host on this machine."""
    domain: Any = field(default=None, compare=False)
    """The search vocabulary the host declared on its tools/list (`cadmcp.wire.meta.DOMAIN`), as sent."""

    @classmethod
    def build(
        cls,
        key: HostKey,
        *,
        host_app: str,
        version: str,
        endpoint: str,
        protocol_version: str,
        server_name: str,
        tools: list[dict[str, Any]],
        resources: list[dict[str, Any]],
        templates: list[dict[str, Any]],
        state: dict[str, Any] | None = None,
    ) -> HostEntry:
        caps: list[Capability] = []
        for kind, items, target_key in (
            ("tool", tools, "name"),
            ("resource", resources, "uri"),
            ("resource_template", templates, "uriTemplate"),
        ):
            for raw in items:
                target = str(raw.get(target_key) or "")
                if not target:
                    continue
                cap_id = mint_id(key, kind, target, content_digest(raw))
                caps.append(
                    Capability(
                        id=cap_id,
                        kind=kind,  # type: ignore[arg-type]
                        target=target,
                        name=str(raw.get("name") or target),
                        title=raw.get("title"),
                        description=str(raw.get("description") or ""),
                        raw=raw,
                        host=key,
                    )
                )
        return cls(
            key,
            host_app,
            version,
            endpoint,
            protocol_version,
            server_name,
            tuple(caps),
            {c.id: c for c in caps},
            dict(state or {}),
        )

    def find(self, kind: str, target: str) -> Capability | None:
        return next((c for c in self.capabilities if c.kind == kind and c.target == target), None)

    def shown_state(self, now: float | None = None) -> dict[str, Any]:
        """The state as of now: a server that is down says how long until it is tried again
        (`retryInSeconds`, counted from the `retryAt` time it sent), not how long it was then."""
        retry_at = self.state.get("retryAt")
        if not isinstance(retry_at, int | float):
            return self.state
        shown = {k: v for k, v in self.state.items() if k != "retryAt"}
        shown["retryInSeconds"] = max(0.0, round(retry_at - (time.time() if now is None else now), 1))
        return shown

    def routing(self) -> dict[str, Any]:
        out = {"hostApp": self.host_app, "version": self.version, "hostInstanceId": self.key.instance_id}
        if self.machine is not None:
            out.update(machineId=self.key.machine_id, machine=self.machine)
        return out

    def digest(self) -> str:
        """A digest of the whole catalog (its capability ids): equal on every machine that lists it."""
        joined = "|".join(sorted(c.id for c in self.capabilities))
        return hashlib.blake2b(joined.encode(), digest_size=12).hexdigest()


class IdLedger:
    """Remembers which (host, kind, target) every issued id named, to explain stale ids."""

    def __init__(self, capacity: int = 200_000) -> None:
        self._issued: OrderedDict[str, tuple[HostKey, str, str]] = OrderedDict()
        self._capacity = capacity

    def record(self, entry: HostEntry) -> None:
        for cap in entry.capabilities:
            self._issued[cap.id] = (cap.host, cap.kind, cap.target)
            self._issued.move_to_end(cap.id)
        while len(self._issued) > self._capacity:
            self._issued.popitem(last=False)

    def lookup(self, cap_id: str) -> tuple[HostKey, str, str] | None:
        return self._issued.get(cap_id)


@functools.lru_cache(maxsize=1024)
def query_variables(uri_template: str) -> frozenset[str]:
    """The variables of a template's query expressions (`{?a,b}`, `{&c}`): left out, they are left
    out of the URI (RFC 6570), so a read may go without them. For a template the SDK cannot
    parse: none (each of its variables is then asked for)."""
    from mcp.shared.uri_template import UriTemplate

    try:
        template = UriTemplate.parse(uri_template)
    except Exception:  # a host's malformed or unsupported template: the strict reading stays
        return frozenset()
    return frozenset(v.name for v in template.variables if v.operator in ("?", "&"))

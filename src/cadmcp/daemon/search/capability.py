"""What search stores and answers: a capability (`CapabilityDoc`) and a ranked answer
(`SearchResult`). Shared by the store, the ranking and the semantic layer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Kind = Literal["tool", "resource", "resource_template"]
KINDS: tuple[Kind, ...] = ("tool", "resource", "resource_template")
KIND_RANK = {k: i for i, k in enumerate(KINDS)}


@dataclass(frozen=True, slots=True)
class CapabilityDoc:
    """One searchable capability, built by the daemon from a host's list results."""

    key: str  # opaque id the daemon gives it (unique in the whole index)
    kind: Kind
    target: str  # tool name, resource URI or URI template
    name: str
    title: str | None
    description: str
    params: tuple[tuple[str, str], ...]  # (parameter name, parameter description)
    keywords: tuple[str, ...]  # extra words, e.g. from the tool's `_meta["io.cadmcp/keywords"]`
    host_app: str
    host_version: str
    host_key: str
    fallback: tuple[str, ...] = ()  # intents it stands in for (`_meta["io.cadmcp/fallback"]`)
    read_only: bool = False  # a tool annotated readOnlyHint (resources and templates always read)


@dataclass(frozen=True)
class SearchResult:
    """Hits best first, with what an agent needs to page or to recover from zero hits."""

    hits: list[CapabilityDoc]
    total: int  # how many matched in all (hasMore = total > len(hits))
    suggestions: list[str]  # with no hits: closest capability names, else []
    kinds_available: dict[str, int]  # capabilities per kind in the host scope (kinds filter not applied)
    scores: list[float] = field(default_factory=list)  # one per hit; 0.0 when listing without a query
    reasons: list[str | None] = field(default_factory=list)  # per hit: why it ranked where it did, or None
    fired: list[tuple[str, ...]] = field(default_factory=list)  # per hit: the ranking features that moved it


@dataclass(frozen=True, slots=True)
class Entry:
    """A capability in the store, with the terms ranking reads."""

    doc: CapabilityDoc
    order: tuple[str, str, str, int, str, str]
    name_terms: frozenset[str]  # analysed terms of the name and target
    head_terms: frozenset[str]  # name, target, title and keyword terms
    verb_terms: frozenset[str] = frozenset()
    """What it says it does: its name's terms, and the first term of its title and of each keyword
    ("resize part" says "resize"; "undo my changes" says "undo", not "change")."""

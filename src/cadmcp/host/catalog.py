"""The host catalog: tools, resources and templates merged from every provider.

Providers are kept in priority order; when two expose the same tool name, resource URI or
URI template, the one with the lower priority value serves it (built-ins before toolsets,
toolsets in the order configured) and the clash is reported in `conflicts`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.uri_template import UriTemplate

from cadmcp.host.providers import Provider


@dataclass(frozen=True)
class Conflict:
    """A capability hidden because a higher-priority provider exposes the same name."""

    kind: str
    name: str
    served_by: str
    shadowed: str


@dataclass
class CatalogSnapshot:
    """The merged catalog at one point in time, with routing tables."""

    tools: list[types.Tool] = field(default_factory=list)
    resources: list[types.Resource] = field(default_factory=list)
    templates: list[types.ResourceTemplate] = field(default_factory=list)
    tool_owner: dict[str, Provider] = field(default_factory=dict)
    resource_owner: dict[str, Provider] = field(default_factory=dict)
    template_owner: list[tuple[UriTemplate, Provider]] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)


async def _list(provider: Provider, method: str, ctx: ServerRequestContext[Any] | None) -> list[Any]:
    server = provider.server
    from mcp.server.mcpserver import MCPServer

    if isinstance(server, MCPServer):
        if method == "tools/list":
            return await server.list_tools()
        if method == "resources/list":
            return await server.list_resources()
        return await server.list_resource_templates()
    entry = server.get_request_handler(method)
    if entry is None or ctx is None:
        return []
    result = await entry.handler(ctx, types.PaginatedRequestParams())
    return list(
        getattr(
            result, {"tools/list": "tools", "resources/list": "resources"}.get(method, "resource_templates")
        )
    )


class CatalogStore:
    """Providers in priority order and the merged, cached catalog they form."""

    def __init__(self) -> None:
        self._providers: list[Provider] = []
        self._snapshot: CatalogSnapshot | None = None
        self.generation = 0

    @property
    def providers(self) -> list[Provider]:
        return list(self._providers)

    def add(self, provider: Provider) -> None:
        self._providers.append(provider)
        self._providers.sort(key=lambda p: p.priority)
        self.invalidate()

    def remove(self, provider: Provider) -> None:
        self._providers = [p for p in self._providers if p is not provider]
        self.invalidate()

    def invalidate(self) -> None:
        """Forget the merged catalog; the next list rebuilds it."""
        self._snapshot = None
        self.generation += 1

    async def snapshot(self, ctx: ServerRequestContext[Any] | None = None) -> CatalogSnapshot:
        if self._snapshot is not None:
            return self._snapshot
        generation = self.generation
        snap = CatalogSnapshot()
        for provider in self._providers:
            for tool in await _list(provider, "tools/list", ctx):
                if (owner := snap.tool_owner.get(tool.name)) is not None:
                    snap.conflicts.append(Conflict("tool", tool.name, owner.origin, provider.origin))
                    continue
                snap.tool_owner[tool.name] = provider
                snap.tools.append(tool)
            for res in await _list(provider, "resources/list", ctx):
                uri = str(res.uri)
                if (owner := snap.resource_owner.get(uri)) is not None:
                    snap.conflicts.append(Conflict("resource", uri, owner.origin, provider.origin))
                    continue
                snap.resource_owner[uri] = provider
                snap.resources.append(res)
            seen = {str(t): p for t, p in snap.template_owner}
            for tpl in await _list(provider, "resources/templates/list", ctx):
                if (owner := seen.get(tpl.uri_template)) is not None:
                    snap.conflicts.append(
                        Conflict("resource_template", tpl.uri_template, owner.origin, provider.origin)
                    )
                    continue
                try:
                    parsed = UriTemplate.parse(tpl.uri_template)
                except ValueError:
                    parsed = None
                if parsed is not None:
                    snap.template_owner.append((parsed, provider))
                    seen[tpl.uri_template] = provider
                snap.templates.append(tpl)
        if generation == self.generation:
            self._snapshot = snap
        return snap

    async def tool_provider(self, name: str, ctx: ServerRequestContext[Any]) -> Provider:
        snap = await self.snapshot(ctx)
        provider = snap.tool_owner.get(name)
        if provider is None:
            raise MCPError(
                code=types.INVALID_PARAMS, message=f"Unknown tool: {name}. List tools to see what is served."
            )
        return provider

    async def resource_provider(self, uri: str, ctx: ServerRequestContext[Any]) -> Provider:
        snap = await self.snapshot(ctx)
        if (provider := snap.resource_owner.get(uri)) is not None:
            return provider
        for template, provider in snap.template_owner:
            if template.match(uri) is not None:
                return provider
        raise MCPError(
            code=types.INVALID_PARAMS,
            message=f"Unknown resource: {uri}. List resources and resource templates to see what is served.",
            data={"uri": uri},
        )

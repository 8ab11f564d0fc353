"""A small host for trying cadmcp out and for tests: `cadmcp host demo [--app NAME]`.

Its tools cover every kind of result a real host returns (text, structured content with
`_meta`, errors, images, resource links, multi-round input) plus a few that change the
catalog at runtime, so clients can watch the daemon follow along.
"""

from __future__ import annotations

import base64
import threading
import time
import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer

from cadmcp.host.runtime import HostRuntime
from cadmcp.wire.jsonwire import dumps

if TYPE_CHECKING:
    from cadmcp.applications import StartRequest


def _png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A solid-colour PNG, written by hand so the demo needs no imaging library."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return len(data).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")

    row = b"\x00" + bytes(rgb) * width
    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + b"\x08\x02\x00\x00\x00"
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


def create_demo_server(runtime: HostRuntime) -> MCPServer[Any]:
    """The demo host's built-in tools and resources."""
    server: MCPServer[Any] = MCPServer("demo", instructions="A demo host for cadmcp.")
    state = {"calls": 0, "items": ["alpha", "beta", "gamma"]}

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back unchanged. Use it to check that a host answers."""
        state["calls"] += 1
        return text

    @server.tool()
    def sign_in(user: str, password: str, options: dict[str, str] | None = None) -> str:
        """Pretend to sign in to a service (for trying how logs treat credentials)."""
        return f"signed in {user}"

    @server.tool()
    def measure_distance(x1: float, y1: float, x2: float, y2: float) -> types.CallToolResult:
        """Measure the distance between two points; answers structured content with _meta."""
        distance = ((x2 - x1) ** 2 + (y2 - y1) ** 2) ** 0.5
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"{distance:.3f}")],
            structured_content={"distance": distance, "units": "mm"},
            _meta={"demo/thread": threading.current_thread().name},
        )

    @server.tool()
    def fail(message: str = "it went wrong") -> types.CallToolResult:
        """Always fail with the given message (isError true)."""
        return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)

    @server.tool()
    def crash() -> str:
        """Raise an unexpected exception inside the host."""
        raise RuntimeError("demo crash")

    @server.tool()
    def render_swatch(red: int = 200, green: int = 40, blue: int = 40, size: int = 8) -> types.CallToolResult:
        """Render a solid colour swatch as a PNG image."""
        data = base64.b64encode(_png(size, size, (red, green, blue))).decode()
        return types.CallToolResult(
            content=[types.ImageContent(type="image", data=data, mime_type="image/png")]
        )

    @server.tool()
    def link_status() -> types.CallToolResult:
        """Answer a resource link to the demo status resource."""
        link = types.ResourceLink(
            type="resource_link", uri="demo://status", name="status", mime_type="application/json"
        )
        return types.CallToolResult(content=[types.TextContent(type="text", text="see the link"), link])

    @server.tool()
    def slow(seconds: float = 1.0) -> str:
        """Block the application thread for a while (simulates a long document operation)."""
        time.sleep(seconds)
        return f"slept {seconds}s on {threading.current_thread().name}"

    @server.tool()
    async def delete_item(item: str, ctx: Context) -> types.CallToolResult | types.InputRequiredResult:
        """Delete an item after the user confirms (asks through input_required)."""
        responses = ctx.input_responses or {}
        answer = responses.get("confirm")
        if answer is None:
            request = types.ElicitRequest(
                params=types.ElicitRequestFormParams(
                    message=f"Delete {item}?",
                    requested_schema={
                        "type": "object",
                        "properties": {"confirm": {"type": "boolean"}},
                        "required": ["confirm"],
                    },
                )
            )
            return types.InputRequiredResult(
                input_requests={"confirm": request}, request_state=f"pending:{item}"
            )
        data = answer.model_dump(by_alias=True) if hasattr(answer, "model_dump") else dict(answer)
        accepted = data.get("action") == "accept" and (data.get("content") or {}).get("confirm") is True
        if accepted and item in state["items"]:
            state["items"].remove(item)
        verdict = "deleted" if accepted else "kept"
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"{item} {verdict}")],
            structured_content={"item": item, "deleted": accepted, "state": ctx.request_state},
        )

    @server.tool()
    def add_tool(name: str, description: str = "A tool added at runtime.") -> str:
        """Add a tool to this host's catalog at runtime (it echoes its arguments)."""

        def added(**kwargs: Any) -> str:
            return dumps(kwargs)

        added.__name__ = name
        server.add_tool(added, name=name, description=description)
        runtime.catalog_changed()
        return f"added {name}"

    @server.tool()
    def set_description(name: str, description: str) -> str:
        """Change the description of one of this host's tools at runtime."""
        tool = server._tool_manager.get_tool(name)
        if tool is None:
            raise ValueError(f"no tool named {name}")
        tool.description = description
        runtime.catalog_changed()
        return f"{name} changed"

    @server.tool()
    def remove_tool(name: str) -> str:
        """Remove one of this host's tools at runtime."""
        server.remove_tool(name)
        runtime.catalog_changed()
        return f"removed {name}"

    @server.resource("demo://status", mime_type="application/json")
    def status() -> str:
        """The demo host's live state: items and how many echo calls it served."""
        return dumps(
            {"calls": state["calls"], "items": state["items"], "thread": threading.current_thread().name}
        )

    @server.resource("demo://greeting/{name}", mime_type="text/plain")
    def greeting(name: str) -> str:
        """A greeting for someone (a resource template)."""
        return f"Hello, {name}!"

    @server.resource("demo://big/{size}", mime_type="text/plain")
    def big(size: str) -> str:
        """A text resource of the requested size in bytes (for size-budget tests)."""
        return "x" * int(size)

    return server


def main(host_app: str = "Demo", version: str = "1.0", toolsets: Sequence[str] = ()) -> None:
    """Run the demo host until interrupted, with its configured toolsets (plus `toolsets`)."""
    from cadmcp.host.hosting import DocumentHost

    DocumentHost(
        host_app, version, create_demo_server, toolsets=toolsets, instructions="cadmcp demo host"
    ).run()


def start(request: StartRequest) -> int:
    """`cadmcp host demo [--app NAME] [--app-version V]`: the registry's starter for the demo host."""
    main(request.app or "Demo", request.app_version or "1.0", request.toolsets)
    return 0

"""The daemon's MCP server: the fixed surface over stdio or streamable HTTP."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPError

from cadmcp import __version__
from cadmcp.daemon import httpauth, owncatalog, prompts, tasks
from cadmcp.daemon.argcheck import ArgumentChecker
from cadmcp.daemon.calllog import daemon_call_log
from cadmcp.daemon.errors import DaemonError
from cadmcp.daemon.hosts import HostDirectory
from cadmcp.daemon.launching import HostLauncher
from cadmcp.daemon.limits import MAX_REQUEST_BYTES
from cadmcp.daemon.policy import Policy
from cadmcp.daemon.policy.gate import Gate
from cadmcp.daemon.policy.watch import PolicyFile
from cadmcp.daemon.recentimages import RecentImages
from cadmcp.daemon.search import SearchIndex
from cadmcp.daemon.staterefusal import install_logging, state_refusal
from cadmcp.daemon.tasks import TaskEngine, TaskSupport
from cadmcp.daemon.tools import BY_NAME, TOOLS, Services, structured
from cadmcp.daemon.tools.base import unknown_tool_message
from cadmcp.wire.echo import echo

if TYPE_CHECKING:
    from cadmcp.daemon.gateway import Gateway
    from cadmcp.daemon.gateway import Settings as GatewaySettings

log = logging.getLogger("cadmcp.daemon")

STATE_TTL_ENV = "CADMCP_REQUEST_STATE_TTL"
"""Seconds a sealed multi-round requestState stays valid (default 600)."""

INSTRUCTIONS = (
    "cadmcp connects you to running CAD/BIM applications (hosts). Find what a host can do with "
    "search_dynamic, then run it with invoke_dynamic using the returned id. list_host_instances shows "
    "which hosts are running; launch_host starts one (for example on a .dxf or .ifc file); "
    "read_file_info reads a file's metadata (.rvt, .rfa, .dwg, .dxf, .ifc) with no host running."
)


def _quiet_cancellation_races() -> None:
    """Keep a known harmless race off stderr: anyio's non-blocking Unix connect sets the result of a
    future that a cancelled connect (a host that stopped accepting) already cancelled."""
    import asyncio

    loop = asyncio.get_running_loop()

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if isinstance(context.get("exception"), asyncio.InvalidStateError):
            log.debug("ignored a callback that raced a cancellation: %s", context.get("message"))
            return
        loop.default_exception_handler(context)

    loop.set_exception_handler(handler)


async def _stop_on_signal(scope: anyio.CancelScope) -> None:
    """Ctrl-C, or SIGTERM (how clients and service managers stop a server), stops the daemon by
    cancelling what serves the client, through anyio, so it cleans up as when stdin closes (its
    approvals socket goes, attached hosts are told).

    asyncio's own SIGINT handling cancels the main task once, natively; a cancellation that
    lands while a shielded scope runs (a host link closing, say) can be absorbed there, and the
    daemon then serves on until stdin closes. A cancelled scope stays cancelled."""
    import signal

    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            scope.cancel()
            return


class _DaemonServer(Server[Any]):
    """The low-level server, advertising tasks the way each protocol era expects."""

    def get_capabilities(
        self,
        notification_options: Any = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
        *,
        protocol_version: str | None = None,
    ) -> types.ServerCapabilities:
        capabilities = super().get_capabilities(
            notification_options, experimental_capabilities, extensions, protocol_version=protocol_version
        )
        return tasks.advertise(capabilities, protocol_version)


class Daemon:
    """Owns the host directory, the search index and the MCP server in front of them."""

    def __init__(
        self,
        directory: HostDirectory | None = None,
        *,
        state_ttl: float | None = None,
        gateway: GatewaySettings | None = None,
        policy: Policy | None = None,
        policy_file: Path | None = None,
    ) -> None:
        if state_ttl is None:
            state_ttl = float(os.environ.get(STATE_TTL_ENV, "600"))
        self.index = directory.index if directory else SearchIndex()
        self.directory = directory or HostDirectory(self.index)
        self.launcher = HostLauncher(self.directory)
        self.checker = ArgumentChecker()
        self.gateway: Gateway | None = None
        watch = PolicyFile(policy_file) if policy_file is not None else None  # edits hold while it runs
        self.gate = Gate(policy or Policy(), gateway.machine_name if gateway is not None else "", watch=watch)
        if gateway is not None:
            self.directory.machine_id = gateway.machine_id  # the configured id, gateway or not
        if gateway is not None and gateway.configured:
            from cadmcp.daemon.gateway.service import Gateway

            self.gateway = Gateway(gateway, self.directory, self.launcher, self.gate)
        owncatalog.install(self.directory, self.gate.checkpoints)  # revert etc., found by search
        self.tasks = TaskEngine(self.directory, self.task_policy)
        self.services = Services(
            self.directory, self.launcher, self.checker, self.tasks, self.gate, self.gateway
        )
        self.images = RecentImages()
        """The pictures of recent answers, for the dashboard's timeline."""
        self.server = self._build_server(state_ttl)
        from cadmcp.daemon.dashboard import DashboardDoor  # cheap: the page itself loads on demand

        self.dashboard = DashboardDoor(self)

    def task_policy(self, name: Any, arguments: Any, refine: bool) -> tuple[TaskSupport, str]:
        """Whether a call may run as a task, and how to name it in its status: the tool's own
        policy (`invoke_dynamic` and `launch_host`); the other tools answer quickly, never tasks."""
        tool = BY_NAME.get(name) if isinstance(name, str) else None
        if tool is None or tool.task_policy is None:
            return "forbidden", str(name)
        return tool.task_policy(self.services, arguments if isinstance(arguments, dict) else {}, refine)

    async def call_tool(self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> Any:
        try:
            return await self._dispatch(ctx, params)
        except DaemonError as err:
            self.tasks.note_failure(err)
            return structured(err.body(), is_error=True)
        except MCPError:
            raise
        except Exception as exc:  # a daemon bug must still give the caller an answer it can act on
            log.exception("%s failed", echo(params.name))
            return structured(
                DaemonError(
                    "internal_error",
                    f"The daemon failed while handling {echo(params.name, 40)} ({type(exc).__name__}); "
                    "nothing was sent to a host. Try again; if it keeps failing, the daemon log has details.",
                ).body(),
                is_error=True,
            )

    async def _dispatch(self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> Any:
        tool = BY_NAME.get(params.name)
        if tool is None:
            raise MCPError(
                code=types.INVALID_PARAMS, message=unknown_tool_message(params.name, list(BY_NAME))
            )
        return await tool.call(self.services, ctx, params)

    def _build_server(self, state_ttl: float) -> Server[Any]:
        tools = [types.Tool.model_validate(t.definition) for t in TOOLS]

        async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
            return types.ListToolsResult(tools=tools)

        server: Server[Any] = _DaemonServer(
            "cadmcp",
            version=__version__,
            title="cadmcp",
            instructions=INSTRUCTIONS,
            on_list_tools=list_tools,
            on_call_tool=self.call_tool,
            on_list_prompts=prompts.list_prompts,
            on_get_prompt=prompts.get_prompt,
        )
        server.middleware.append(daemon_call_log(self.directory))
        server.middleware.append(self.images)  # inside the log's middleware: its key joins the line
        server.middleware.append(state_refusal)  # just outside the boundary whose refusals it words
        install_logging()
        security = RequestStateSecurity.ephemeral(ttl=state_ttl, audience="cadmcp-daemon")
        server.middleware.append(RequestStateBoundary(security, default_audience="cadmcp-daemon"))
        tasks.install(server, self.tasks)
        return server

    async def serve_stdio(self) -> None:
        """Serve the client on stdin/stdout until it closes stdin (or SIGINT stops the daemon)."""
        from cadmcp.wire.stdio import stdio_streams

        async with (
            self._running(),
            stdio_streams(MAX_REQUEST_BYTES) as (read, write),
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(_stop_on_signal, tg.cancel_scope)
            await self.server.run(read, write, self.server.create_initialization_options())
            tg.cancel_scope.cancel()

    async def serve_http(
        self,
        host: str = "127.0.0.1",
        port: int = 8765,
        *,
        unix_socket: Path | None = None,
        token: str | None = None,
        on_listening: Callable[[httpauth.Listener], None] | None = None,
    ) -> None:
        """Serve streamable HTTP at `/mcp`, every request checked for the user's bearer token.

        Listens on `host:port` (port 0 picks one) or on a Unix socket; the socket is bound
        before `on_listening` is told where, so the URL it prints is the one that works.
        """
        listener = httpauth.listen(host, port, unix_socket)
        token = token or httpauth.ensure_token()[0]
        security = httpauth.unix_transport_security() if unix_socket is not None else None
        app = httpauth.guarded_app(
            self.server,
            listener.url,
            token,
            transport_security=security,
            dashboard=self.dashboard.asgi if unix_socket is None else None,
        )
        if unix_socket is None:
            self.dashboard.shared_http = listener.url.removesuffix(httpauth.MCP_PATH)
        if on_listening is not None:
            on_listening(listener)
        async with self._running():
            try:
                await httpauth.serve(app, listener)
            finally:
                if listener.unix_path is not None:
                    with contextlib.suppress(OSError):
                        listener.unix_path.unlink()

    async def serve_forever(self) -> None:
        """No MCP transport: keep the hosts and the gateway registration up until SIGTERM or SIGINT."""
        import signal

        async with self._running():
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    break

    @contextlib.asynccontextmanager
    async def _running(self) -> AsyncIterator[None]:
        """Discovery, the gateway and the task store run while the body serves; on the way out
        the hosts this daemon launched are stopped and the embedding thread is joined."""
        _quiet_cancellation_races()
        async with anyio.create_task_group() as tg:
            await tg.start(self.directory.run)
            if self.gateway is not None:
                await tg.start(self.gateway.run)
            await tg.start(self.tasks.run)
            from cadmcp.daemon.policy import control  # the person's door: approvals, checkpoints

            self.dashboard.bind(tg)
            await tg.start(control.serve, self.gate, self.directory, self.dashboard.handle, self.gateway)
            try:
                yield
            finally:
                self.dashboard.release()
                self.launcher.shutdown()
                self.index.close()
            tg.cancel_scope.cancel()

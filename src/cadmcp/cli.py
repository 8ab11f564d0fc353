"""The `cadmcp` command line: `daemon`, `host`, `freecad`, `toolset`, `policy`, `dashboard`, `eval`,
`demo`."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from cadmcp.applications import BUILTIN
from cadmcp.walkthrough import WALKS


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cadmcp", description="AI agents inside live CAD/BIM applications, over MCP."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log more to stderr")
    sub = parser.add_subparsers(dest="command", required=True)

    daemon = sub.add_parser("daemon", help="serve the MCP surface to an AI client (stdio by default)")
    daemon.add_argument(
        "--http",
        action="store_true",
        help="serve streamable HTTP at http://127.0.0.1:PORT/mcp instead of stdio (bearer token required)",
    )
    daemon.add_argument(
        "--port", type=_port, default=8765, help="HTTP port (default 8765; 0 picks a free one)"
    )
    daemon.add_argument(
        "--unix-socket",
        metavar="PATH",
        default=None,
        help="serve HTTP on this Unix socket (mode 0600) instead",
    )
    daemon.add_argument(
        "--new-token", action="store_true", help="replace the HTTP bearer token (clients need the new one)"
    )
    daemon.add_argument(
        "--print-token", action="store_true", help="print the HTTP bearer token (made if missing) and exit"
    )
    daemon.add_argument("--scan-interval", type=float, default=2.0, help="seconds between host scans")
    from cadmcp.daemon.gateway.settings import add_arguments

    add_arguments(daemon)

    host = sub.add_parser(
        "host",
        help="run a host process",
        epilog="Foreign MCP servers as hosts: cadmcp host add NAME -- COMMAND ARGS... (or --url URL), "
        "cadmcp host remove NAME, cadmcp host list; cadmcp host import FILE adds the servers another MCP "
        "client lists (claude_desktop_config.json, .mcp.json, .vscode/mcp.json ...).",
    )
    host.add_argument(
        "kind",
        help=f"which host to run: {', '.join(a.key for a in BUILTIN)}, or one the host configuration names",
    )
    host.add_argument("files", nargs="*", default=[], help="documents to open")
    host.add_argument("--app", default=None, help="host app name (demo host only)")
    host.add_argument("--app-version", default=None, help="host version (demo host only)")
    host.add_argument(
        "--exec-timeout", type=float, default=None, help="seconds before a runaway script is stopped"
    )
    host.add_argument(
        "--toolset", action="append", default=[], metavar="PATH", help="load a toolset path for this run"
    )
    host.add_argument("--gui", action="store_true", help="FreeCAD only: open its window")

    freecad = sub.add_parser("freecad", help="FreeCAD: install the session macros, check the setup")
    freecad.add_argument("action", choices=["install", "check"])
    freecad.add_argument("--macro-dir", default=None, help="FreeCAD's macro folder (default: ask FreeCAD)")

    toolset = sub.add_parser("toolset", help="register Python toolsets: add|remove|list", add_help=False)
    toolset.add_argument("rest", nargs=argparse.REMAINDER)

    policy = sub.add_parser(
        "policy",
        help="the policy over agents' calls: show|approvals|answer|checkpoints|revert",
        add_help=False,
    )
    policy.add_argument("rest", nargs=argparse.REMAINDER)

    dash = sub.add_parser("dashboard", help="print a one-time login link to this machine's live dashboard")
    dash.add_argument("--no-open", action="store_true", help="only print the link (open no browser)")

    ev = sub.add_parser("eval", help="evaluate search quality on a query set, or run a corpus of files")
    ev.add_argument("what", choices=_EVALS, help="then its options (cadmcp eval WHAT --help)")

    demo = sub.add_parser("demo", help="start a host on a sample model and walk through search -> invoke")
    demo.add_argument("--host", choices=sorted(WALKS), default="dxf")
    demo.add_argument("--no-wait", action="store_true", help="stop the host after the walk")
    return parser


def _runtime_dir_refused(command: str, host_app: str | None = None) -> bool:
    """Check the runtime directory before starting (and that a host named `host_app` can listen
    in it); print why it cannot be used (no traceback)."""
    from cadmcp.wire.endpoints import RuntimeDirError, endpoint_problem, runtime_dir

    try:
        directory = runtime_dir()
    except RuntimeDirError as exc:
        print(f"cadmcp {command}: {exc}", file=sys.stderr)
        return True
    problem = endpoint_problem(directory, host_app) if host_app else None
    if problem is not None:
        print(f"cadmcp {command}: {problem}", file=sys.stderr)
        return True
    return False


def _run_host(args: argparse.Namespace) -> int:
    from cadmcp import applications

    # a built-in first: a configured command named like one may well run `cadmcp host KEY` itself
    app = applications.find(args.kind, applications.BUILTIN)
    try:
        configured = [
            a
            for a in applications.configured(warn=False)  # a wrong entry is said below, when asked for
            if a.kind in (applications.DOCUMENT, applications.FOREIGN) or a.problem is not None
        ]
    except applications.ConfigError as exc:
        if app is None:
            print(f"cadmcp host {args.kind}: {exc}", file=sys.stderr)
            return 2
        configured = []
    app = app or applications.find(args.kind, configured)
    if app is None:
        known = [a.key for a in (*applications.BUILTIN, *configured)]
        print(f"cadmcp host: no application {args.kind!r}; pick one of {known}", file=sys.stderr)
        return 2
    if app.problem is not None:
        print(f"cadmcp host {args.kind}: {app.problem}", file=sys.stderr)
        return 2
    if _runtime_dir_refused(f"host {args.kind}", args.app or app.name):
        return 2
    request = applications.StartRequest(
        files=list(args.files),
        exec_timeout=args.exec_timeout,
        toolsets=list(args.toolset),
        verbose=args.verbose,
        gui=args.gui,
        app=args.app,
        app_version=args.app_version,
    )
    if app.starter is not None:
        return int(applications.resolve(app.starter)(request))
    if app.kind == applications.FOREIGN:
        from cadmcp.foreign.proxy import serve

        return serve(app, request)
    from cadmcp.host.hosting import serve_application

    return serve_application(app, request)


def _unreadable_config() -> str:
    """`; the config file ... cannot be read: ...` when the file that may hold the gateway is broken."""
    from cadmcp.applications import config_path
    from cadmcp.daemon.launching import parse_config_file

    path = config_path()
    if path is None or not path.is_file():
        return ""
    try:
        parse_config_file(path)
    except (OSError, ValueError) as exc:
        return f"; the config file {path} cannot be read, so its gateway section was not either: {exc}"
    return ""


def _check_host_config() -> None:
    """Log at start what is wrong in the host configuration (each wrong entry, keys nothing reads);
    the daemon starts anyway, and launch_host answers the same problems."""
    from cadmcp import applications

    try:
        applications.configured()
    except applications.UnreadableConfig:
        pass  # the policy's fallback said it
    except applications.ConfigError as exc:
        logging.getLogger("cadmcp.applications").warning("%s", exc)


def _run_daemon(args: argparse.Namespace) -> int:
    from cadmcp.daemon import httpauth

    http = args.http or args.unix_socket is not None
    if args.port != 8765 and not http:
        print("cadmcp daemon: --port is for --http (it serves stdio otherwise); add --http", file=sys.stderr)
        return 2
    if args.print_token:
        try:
            token, _ = httpauth.ensure_token(rotate=args.new_token)
        except httpauth.TokenFileError as exc:
            print(f"cadmcp daemon: {exc}", file=sys.stderr)
            return 2
        print(token)
        return 0
    if _runtime_dir_refused("daemon"):
        return 2
    import anyio

    from cadmcp.daemon.errors import DaemonError
    from cadmcp.daemon.gateway import load_settings
    from cadmcp.daemon.hosts import HostDirectory
    from cadmcp.daemon.policy import load_policy
    from cadmcp.daemon.search import SearchIndex
    from cadmcp.daemon.search.semantic import SemanticUnavailable, semantic_from_env
    from cadmcp.daemon.server import Daemon

    gateway_problem = None
    try:
        semantic = semantic_from_env()
        try:
            gateway = load_settings(vars(args))
        except DaemonError as exc:
            if args.serve:  # serving other machines is all it would do
                raise
            # this machine's hosts need no gateway: serve them, and say why others are out of reach
            gateway, gateway_problem = None, exc.message
            print(f"cadmcp daemon: {exc.message} Serving this machine's hosts only.", file=sys.stderr)
        policy = load_policy()  # logs a configuration file it cannot parse, and starts on a fallback
    except (SemanticUnavailable, DaemonError) as exc:
        print(f"cadmcp daemon: {getattr(exc, 'message', exc)}", file=sys.stderr)
        return 2
    _check_host_config()
    if args.serve and (gateway is None or not gateway.configured):
        print(
            "cadmcp daemon: --serve needs a gateway (--gateway URL, CADMCP_GATEWAY or the config file)"
            + _unreadable_config(),
            file=sys.stderr,
        )
        return 2
    index = SearchIndex(semantic=semantic)
    from cadmcp.applications import config_path
    from cadmcp.userdirs import config_dir

    directory = HostDirectory(index, scan_interval=args.scan_interval)
    directory.gateway_problem = gateway_problem
    watched = config_path() or config_dir() / "hosts.toml"  # one made later holds too
    daemon = Daemon(directory, gateway=gateway, policy=policy, policy_file=watched)
    if args.serve or not http:
        with contextlib.suppress(KeyboardInterrupt):
            anyio.run(daemon.serve_forever if args.serve else daemon.serve_stdio)
        return 0
    try:
        token, created = httpauth.ensure_token(rotate=args.new_token)
    except httpauth.TokenFileError as exc:
        print(f"cadmcp daemon: {exc}", file=sys.stderr)
        return 2

    def announce(listener: httpauth.Listener) -> None:
        path = httpauth.token_path()
        print(f"cadmcp daemon: MCP over streamable HTTP at {listener.describe()}")
        print("cadmcp daemon: every request needs the header 'Authorization: Bearer <token>'")
        if created:
            print(f"cadmcp daemon: new token (saved in {path}, mode 0600; shown only now): {token}")
        else:
            print(f"cadmcp daemon: token in {path} (print it with: cadmcp daemon --print-token)")
        sys.stdout.flush()

    unix = Path(args.unix_socket) if args.unix_socket else None
    try:
        with contextlib.suppress(KeyboardInterrupt):
            anyio.run(
                lambda: daemon.serve_http(
                    "127.0.0.1", args.port, unix_socket=unix, token=token, on_listening=announce
                )
            )
    except httpauth.ListenError as exc:
        print(f"cadmcp daemon: {exc}", file=sys.stderr)
        return 2
    return 0


_EVALS = ("search", "dump-catalog", "corpus")


def _port(text: str) -> int:
    """An HTTP port argument: 0 (pick a free one) to 65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port: give 1-65535, or 0 to pick a free one")
    return port


def _pass_through(argv: list[str], verbose: bool = False) -> int:
    """`cadmcp toolset|policy|eval WHAT ...`: commands with parsers of their own."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, stream=sys.stderr)
    command, rest = argv[0], argv[1:]
    if command == "toolset":
        from cadmcp.host.toolsets.cli import main as toolset_main

        return toolset_main(rest)
    if command == "policy":
        from cadmcp.daemon.policy.cli import main as policy_main

        return policy_main(rest)
    what, rest = rest[0], rest[1:]
    if what == "corpus":
        from cadmcp.corpus.command import main as corpus_main

        return corpus_main(rest)
    if what == "dump-catalog":
        from cadmcp.daemon.search.dump import main as dump_main

        return dump_main(rest)
    from cadmcp.daemon.search.evaluate import main as eval_main

    return eval_main(rest)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `cadmcp` console script."""
    try:
        return _main(argv)
    except BrokenPipeError:  # `cadmcp policy approvals | head -1`: the reader had enough
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so that the exit's flush does not fail again
        return 141  # as a shell reports a process that SIGPIPE ended


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:2] in (["host", "add"], ["host", "remove"], ["host", "list"], ["host", "import"]):
        from cadmcp.foreign.cli import main as foreign_main

        return foreign_main(argv[1:])
    verbose = argv[:1] in (["-v"], ["--verbose"])
    rest = argv[1:] if verbose else argv
    if rest[:1] in (["toolset"], ["policy"]) or (rest[:1] == ["eval"] and rest[1:2] and rest[1] in _EVALS):
        return _pass_through(rest, verbose)  # their own parsers read the rest, --help included
    parser = _parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command == "host" and not any(e.startswith("-") for e in extra):
        args.files += extra  # documents given after an option: `cadmcp host freecad --gui part.FCStd`
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    if args.command == "daemon":
        return _run_daemon(args)
    if args.command == "host":
        return _run_host(args)
    if args.command == "freecad":
        from cadmcp.hosts.freecad.install import main as freecad_main

        return freecad_main(args.action, args.macro_dir)
    if args.command == "dashboard":
        from cadmcp.daemon.dashboard.cli import main as dashboard_main

        return dashboard_main(open_browser=not args.no_open)
    if args.command == "demo":
        from cadmcp.walkthrough import main as walk_main

        return walk_main(args.host, wait=not args.no_wait)
    return 2


if __name__ == "__main__":
    sys.exit(main())

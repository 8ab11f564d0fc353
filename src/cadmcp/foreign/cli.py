"""`cadmcp host add NAME -- COMMAND ARGS...` / `--url URL --header K=env:VAR`, `cadmcp host remove NAME`:
write a foreign MCP server into the host configuration (docs/hosts/foreign.md); `cadmcp host list`
shows what it holds.

The entry goes to the configuration file in use (`CADMCP_HOSTS_CONFIG`, else `hosts.json` in the
cadmcp config folder, made if missing, mode 0600), JSON or TOML; a TOML file is edited in place
with tomlkit, so its comments and layout stay as they were.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cadmcp.applications import (
    BUILTIN,
    CONFIG_ENV,
    PROTOCOLS,
    TIMEOUT_RANGE,
    ConfigError,
    config_path,
    configured,
    configured_from,
    name_problem,
    parse_config,
    parse_config_file,
)
from cadmcp.foreign.secrets import is_reference
from cadmcp.userdirs import config_dir

MAX_CLIENT_FILE_BYTES = 16 * 1024 * 1024
"""The largest MCP client file `host import` reads (VS Code's settings hold more than servers)."""
_SECRET_NAME = re.compile(
    r"TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|APIKEY|(?:^|[_-])(?:API|ACCESS|PRIVATE|SERVICE)?[_-]?KEY(?:$|[_-])",
    re.IGNORECASE,
)
"""A header or variable whose name says it holds a secret."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cadmcp host", description="Add or remove a foreign MCP server as a cadmcp host."
    )
    sub = parser.add_subparsers(dest="action", required=True)
    add = sub.add_parser(
        "add",
        usage="cadmcp host add NAME [options] -- COMMAND ARGS... | cadmcp host add NAME --url URL [options]",
        help="add an MCP server: NAME -- COMMAND ARGS... (stdio) or NAME --url URL (streamable HTTP)",
    )
    add.add_argument("name", help="the host app name it is listed and launched as")
    add.add_argument("--url", default=None, help="the server's streamable HTTP endpoint")
    add.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="K=V",
        help="an HTTP header; secrets as env:VAR or file:PATH (0600 file): Authorization='Bearer env:TOKEN'",
    )
    add.add_argument(
        "--env", action="append", default=[], metavar="K=V", help="an environment variable of the server"
    )
    add.add_argument("--cwd", default=None, help="the folder the server runs in")
    add.add_argument("--version", default=None, help="the version to list it as (default: what it says)")
    add.add_argument("--call-timeout", type=float, default=None, help="seconds one call may take (120)")
    add.add_argument(
        "--protocol",
        choices=PROTOCOLS,
        default=None,
        help="the MCP protocol version to speak to it (default: the newest it offers; 2025-11-25 for a "
        "server that asks questions with ctx.elicit)",
    )
    add.add_argument("--force", action="store_true", help="replace an entry of the same name")
    remove = sub.add_parser("remove", help="remove a host entry")
    remove.add_argument("name")
    sub.add_parser("list", help="the configured hosts, and which of them run now")
    imports = sub.add_parser(
        "import",
        help="add the servers another MCP client lists (claude_desktop_config.json, .mcp.json, "
        ".cursor/mcp.json, .vscode/mcp.json ...)",
    )
    imports.add_argument("file", nargs="?", help="the client's configuration file (none: list those found)")
    imports.add_argument("--only", action="append", default=[], metavar="NAME", help="import only these")
    imports.add_argument("--force", action="store_true", help="replace entries of the same names")
    imports.add_argument("--dry-run", action="store_true", help="say what would be added; change nothing")
    return parser


def _list() -> int:
    """`cadmcp host list`: each configured host, what it runs, and its running processes."""
    from cadmcp.wire.endpoints import list_endpoints, runtime_dir

    path = config_path() or config_dir() / "hosts.json"
    try:
        apps = configured(path, warn=False) if path.exists() else []  # wrong entries are listed as such
    except ConfigError as exc:
        print(f"cadmcp host list: {exc}", file=sys.stderr)
        return 2
    if not apps:
        print(f"{path} configures no host; add one with `cadmcp host add NAME -- COMMAND ARGS...`")
        return 0
    import anyio

    found = list_endpoints(runtime_dir(create=False))
    names = {app.name.casefold() for app in apps}
    states = anyio.run(_states, [ep for ep in found if ep.host_app.casefold() in names])
    running: dict[str, list[int]] = {}
    for endpoint in found:
        running.setdefault(endpoint.host_app.casefold(), []).append(endpoint.pid)
    print(f"hosts in {path}:")
    for app in apps:
        pids = running.get(app.name.casefold()) or []
        said = [_said(pid, states.get(pid)) for pid in pids]
        state = "; ".join(line for line, _ in said) or "not running"
        reasons = [f"    {why}" for _, why in said if why]
        if app.problem is not None:
            print(f"  {app.name}: cannot start  [{state}]\n    {app.problem}")
            continue
        what = app.server.describe() if app.server is not None else " ".join(app.launch_command())
        print(f"  {app.name}: {what}  [{state}]", *reasons, sep="\n")
        for note in app.ignored:
            print(f"    ignored: {note}")
    return 0


STATE_TIMEOUT = 2.0
"""Seconds `cadmcp host list` waits for a running host to say how it is."""


async def _states(found: list[Any]) -> dict[int, dict[str, Any]]:
    """What each running host says of itself (the state on its `tools/list`), by pid; a host that
    does not answer in time is left out."""
    import anyio

    from cadmcp.wire import sockets
    from cadmcp.wire.meta import HOST_STATE
    from cadmcp.wire.passthrough import PassThroughSession

    states: dict[int, dict[str, Any]] = {}

    async def one(endpoint: Any) -> None:
        with anyio.move_on_after(STATE_TIMEOUT):
            try:
                async with (
                    sockets.connect(endpoint.path, timeout=STATE_TIMEOUT) as (read, write),
                    PassThroughSession(read, write) as session,
                ):
                    await session.connect()
                    result = await session.raw_request("tools/list", {}, timeout=STATE_TIMEOUT)
            except Exception:  # a host that cannot be asked is shown as running
                return
            state = (result.get("_meta") or {}).get(HOST_STATE)
            if isinstance(state, dict):
                states[endpoint.pid] = state

    async with anyio.create_task_group() as tg:
        for endpoint in found:
            tg.start_soon(one, endpoint)
    return states


def _said(pid: int, state: dict[str, Any] | None) -> tuple[str, str]:
    """How `host list` shows a running host: its pid and phase, and why it is not ready."""
    import time

    phase = (state or {}).get("phase", "ready")
    if phase == "ready":
        return f"running (pid {pid})", ""
    what = {"down": "its server is down", "refused": "its server's catalog is refused"}.get(phase, phase)
    retry_at = (state or {}).get("retryAt")
    if isinstance(retry_at, int | float):
        what += f": tried again in {max(0, round(retry_at - time.time()))} s"
    return f"pid {pid} runs, {what}", str((state or {}).get("error") or "")


def _pairs(values: list[str], what: str) -> dict[str, str]:
    out = {}
    for value in values:
        key, sep, rest = value.partition("=")
        if not sep or not key:
            raise SystemExit(f"cadmcp host add: --{what} takes K=V, got {value[:80]!r}")
        out[key] = rest
    return out


def _entry(args: argparse.Namespace, command: list[str]) -> dict[str, Any]:
    if (args.url is None) == (not command):
        raise SystemExit(
            "cadmcp host add: give the server either as `-- COMMAND ARGS...` (stdio) or as --url URL "
            f"(streamable HTTP), {'not both' if command else 'one of them'}"
        )
    server: dict[str, Any] = {}
    if args.url is not None:
        if not args.url.startswith(("http://", "https://")) and not is_reference(args.url):
            raise SystemExit(
                "cadmcp host add: --url must be an http:// or https:// URL (or env:VAR naming one)"
            )
        server["url"] = args.url
        if args.header:
            server["headers"] = _pairs(args.header, "header")
    else:
        if args.header:
            raise SystemExit("cadmcp host add: --header is for --url servers; a stdio server takes --env")
        server["command"], server["args"] = command[0], command[1:]
    if args.env:
        server["env"] = _pairs(args.env, "env")
    if args.cwd:
        server["cwd"] = str(Path(args.cwd).expanduser().resolve())
    if args.call_timeout is not None:
        low, high = TIMEOUT_RANGE
        if not low <= args.call_timeout <= high:
            raise SystemExit(f"cadmcp host add: --call-timeout must be {low:g} to {high:g} seconds")
        server["callTimeoutSeconds"] = args.call_timeout
    if args.protocol:
        server["protocolVersion"] = args.protocol
    entry: dict[str, Any] = {"server": server}
    if args.version:
        entry["version"] = args.version
    return entry


def _not_runnable(command: str) -> str:
    """Why a command `shutil.which` does not find will not start, in words for what it is."""
    path = Path(command).expanduser()
    if os.name != "nt" and re.match(r"^[A-Za-z]:[\\/]", command):
        return f"{command} is a Windows path; on this machine give the server's command as it is here"
    if path.is_absolute() or os.sep in command or (os.altsep and os.altsep in command):
        if path.is_dir():
            return f"{command} is a folder, not a program; give the server's executable (or script) in it"
        if path.exists():
            return f"{command} is not executable; make it so (chmod +x) or run it with its interpreter"
        return f"{command} does not exist"
    return (
        f"{command} is not an executable on this shell's PATH; the host runs it with the PATH of "
        "the process that starts it (give its full path if that one lacks it)"
    )


def _here_path(value: str, *, command: bool = False) -> bool:
    """Whether a command or argument is a relative path to something in this shell's folder (a
    bare command name is looked up on PATH, not here)."""
    if not value or value.startswith(("-", "~")) or is_reference(value) or Path(value).is_absolute():
        return False
    if command and os.sep not in value and not (os.altsep and os.altsep in value):
        return False
    return Path(value).exists()


def _settle_here(entry: dict[str, Any]) -> str | None:
    """Start a stdio server that names files or folders relative to this shell's folder
    (`python shop.py`, `--repository .`) in this folder, its `cwd`, as it runs here (the daemon
    that starts it runs elsewhere), and say so; None when it names none or has its `cwd`."""
    server = entry.get("server") or {}
    if "command" not in server or server.get("cwd"):
        return None
    named = [server["command"]] if _here_path(server["command"], command=True) else []
    named += [arg for arg in server.get("args") or [] if _here_path(arg)]
    if not named:
        return None
    server["cwd"] = here = str(Path.cwd())
    shown = ", ".join(shlex.quote(n) for n in named[:3]) + (" ..." if len(named) > 3 else "")
    return (
        f"{shown} {'is a path' if len(named) == 1 else 'are paths'} relative to this folder, so the server "
        f"starts in it (cwd {here}), as it would here; give --cwd FOLDER for another"
    )


def _pin(entry: dict[str, Any]) -> str | None:
    """Store a bare command found in a virtual environment's `bin` folder (on this shell's PATH
    only while it is active) by its full path, and say so; None when it is not one."""
    import shutil

    server = entry.get("server") or {}
    command = server.get("command")
    if not isinstance(command, str) or os.sep in command or (os.altsep and os.altsep in command):
        return None
    found = shutil.which(command)
    if found is None or not (Path(found).parent.parent / "pyvenv.cfg").is_file():
        return None
    server["command"] = str(Path(found).absolute())
    return (
        f"{command} was found in the virtual environment {Path(found).parent.parent}, which is on this "
        f"shell's PATH only while it is active: it is stored as {server['command']}, so a daemon your AI "
        "client starts finds it too"
    )


def _warnings(entry: dict[str, Any]) -> list[str]:
    """What will keep the server from starting, as far as this shell can tell (not refused: the
    host may start where the command and variables are), and what the entry holds that looks
    like a credential written as it is."""
    import shutil

    from cadmcp.foreign.secrets import SecretError, resolve, resolve_all, resolve_url
    from cadmcp.wire.masking import mask_text

    server = entry["server"]
    found: list[str] = []
    command = server.get("command")
    if isinstance(command, str) and shutil.which(command) is None:
        found.append(_not_runnable(command))
    cwd = server.get("cwd")
    if isinstance(cwd, str) and not Path(cwd).is_dir():
        found.append(f"its folder (cwd) {cwd} does not exist here; the server starts in it")
    values = [
        (f"{where}.{key}", value)
        for where in ("env", "headers")
        for key, value in (server.get(where) or {}).items()
    ]
    values += [(f"args[{n}]", arg) for n, arg in enumerate(server.get("args") or [])]
    values += [("url", server["url"])] if "url" in server else []
    for where, value in values:
        try:
            if where == "url":
                resolve_url(value)
            elif where.startswith("args"):
                resolve(where, value, prefix_word=False, files=False)  # as resolve_args reads each
            else:
                resolve_all(where.split(".")[0], {where.split(".", 1)[1]: value})
        except SecretError as exc:
            found.append(str(exc))
        if _EMPTY_REFERENCE.search(value):
            found.append(
                f"{where} is the text {value[:40]!r}: a reference names its source (env:VAR, file:PATH)"
            )
        elif (bad := _BAD_VARIABLE.search(value)) is not None:
            found.append(f"{where} refers to {bad[1]!r}, which no shell can set (letters, digits and _)")
        if where in ("url",) or where.startswith("args"):
            masked = mask_text(value)
            if masked != value:
                found.append(
                    f"{where} holds what looks like a credential ({masked[:80]}); it is stored as written, "
                    "and shown masked: put the whole value in an environment variable and write env:VAR"
                )
    return found


_EMPTY_REFERENCE = re.compile(r"^(?:\S+ )?(?:env|file):$")
_BAD_VARIABLE = re.compile(r"^(?:\S+ )?env:(\S*[^A-Za-z0-9_\s]\S*|[0-9]\S*)$")


def _running(name: str) -> list[int]:
    """The pids of the hosts of this name serving in this shell's runtime folder."""
    from cadmcp.wire.endpoints import RuntimeDirError, list_endpoints, pid_alive, runtime_dir

    try:
        found = list_endpoints(runtime_dir(create=False))
    except (RuntimeDirError, OSError):
        return []
    return [ep.pid for ep in found if ep.host_app.casefold() == name.casefold() and pid_alive(ep.pid)]


def _endpoint_note(name: str) -> list[str]:
    """Why a host of this name could not listen in this shell's runtime folder, if so."""
    from cadmcp.wire.endpoints import RuntimeDirError, endpoint_problem, runtime_dir

    try:
        problem = endpoint_problem(runtime_dir(create=False), name)
    except RuntimeDirError:
        return []  # said when a host starts
    return [problem] if problem else []


def _literal_secrets(entry: dict[str, Any], *, by_name: bool = False) -> list[str]:
    """Headers whose value is written as is (not an env: or file: reference); ``by_name``: only
    the headers and environment variables named like secrets (a token, key or password) that
    hold a value."""
    server = entry["server"]
    found = []
    for where in ("headers", "env") if by_name else ("headers",):
        for key, value in (server.get(where) or {}).items():
            if "env:" in value or "file:" in value:  # a reference (after a word, in a header)
                continue
            if not by_name or (value.strip() and _SECRET_NAME.search(key)):
                found.append(f"{'header' if where == 'headers' else 'env'} {key}")
    return found


def _is_toml(path: Path) -> bool:
    return path.suffix.lower() == ".toml"


def _load(path: Path) -> tuple[dict[str, Any], Any]:
    """The file's configuration as plain data, and for TOML the document to edit (comments kept)."""
    if not path.exists():
        return {}, None
    data = parse_config_file(path)  # OSError, ValueError
    configured(path)  # the file must be valid before it is changed
    if not _is_toml(path):
        return data, None
    import tomlkit

    return data, tomlkit.parse(path.read_text(encoding="utf-8"))


def _text(path: Path, data: dict[str, Any], document: Any, name: str, replaced: Sequence[str] = ()) -> str:
    """What the file holds after the change: JSON written whole, or the TOML document edited
    (``replaced``: entries of the same name in another case, taken out)."""
    if not _is_toml(path):
        return json.dumps(data, indent=2) + "\n"
    import tomlkit

    document = document if document is not None else tomlkit.document()
    hosts = document.setdefault("hosts", tomlkit.table(is_super_table=True))
    for other in replaced:
        del hosts[other]
    if name in data["hosts"]:
        hosts[name] = data["hosts"][name]
    else:
        del hosts[name]
    if not data["hosts"]:  # the configuration holds a hosts table even when it is empty
        document["hosts"] = tomlkit.table()
    text = tomlkit.dumps(document)
    return text if text.endswith("\n") else text + "\n"


def _problem(path: Path, text: str, name: str) -> str | None:
    """Why ``text`` must not be written: it would not read back as a configuration, or its entry
    ``name`` (when it has one) could not start; None when it may."""
    try:
        apps = configured_from(path, parse_config(text, path), warn=False)
    except ValueError as exc:  # ConfigError, or a text the edit made unreadable
        return f"{path} would not read back after the change ({exc})"
    return next((a.problem for a in apps if a.name == name and a.problem is not None), None)


def _write(path: Path, text: str) -> None:
    """Write the file (mode 0600); a symlink's target is written, the link kept. The text goes to
    a private temporary file beside it first, which then replaces the file at once."""
    path = path.resolve() if path.is_symlink() else path
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def _import(args: argparse.Namespace) -> int:
    """`cadmcp host import FILE`: each server the file lists, added as `host add` would."""
    from cadmcp.foreign.importing import import_servers

    if args.file is None:
        return _known_files()
    source = Path(args.file).expanduser()
    if not source.is_file():
        print(
            f"cadmcp host import: {source} is not a file (`cadmcp host import` alone lists the "
            "MCP clients' files found here)",
            file=sys.stderr,
        )
        return 2
    try:
        found = import_servers(_client_config(source), source)
    except (OSError, ValueError) as exc:
        print(f"cadmcp host import: {source} cannot be read as JSON ({exc}).", file=sys.stderr)
        return 2
    path = config_path() or config_dir() / "hosts.json"
    try:
        data, document = _load(path)
    except (OSError, ValueError) as exc:  # ConfigError among them
        print(f"cadmcp host import: {path} cannot be read ({exc}). Nothing was changed.", file=sys.stderr)
        return 2
    hosts = data.setdefault("hosts", {})
    chosen = _chosen(found, args.only, source)
    skipped = {n: why for n, why in found.skipped.items() if chosen is None or n.casefold() in chosen}
    added: list[str] = []
    notes: list[str] = [*found.notes.get("", [])]
    text = ""
    for host, entry in found.entries.items():
        listed_as = found.listed_as[host]
        if chosen is not None and not {host.casefold(), listed_as.casefold()} & chosen:
            continue
        name = host
        if name.casefold() in {a.key.casefold() for a in BUILTIN}:
            name = f"{name}-mcp"  # a server for FreeCAD, say, beside the built-in FreeCAD host
            notes.append(f"{name}: named so beside cadmcp's own {host} host")
        notes.extend(f"{name}: {note}" for note in found.notes.get(host, []))
        if (problem := name_problem(name)) is not None:
            skipped[listed_as] = problem
            continue
        same = [other for other in hosts if other.casefold() == name.casefold()]
        if same and not args.force:
            skipped[listed_as] = f"{path} already has {same[0]} (--force replaces it)"
            continue
        for other in same:
            hosts.pop(other)
        if (pinned := _pin(entry)) is not None:
            notes.append(f"{name}: {pinned}")
        hosts[name] = entry
        try:
            text = _text(path, data, document, name, [o for o in same if o != name])
        except Exception as exc:  # a TOML layout tomlkit cannot edit
            print(f"cadmcp host import: {path} could not be edited ({exc}); nothing changed", file=sys.stderr)
            return 2
        if (problem := _problem(path, text, name)) is not None:
            hosts.pop(name)
            text = _text(path, data, document, name)  # taken out of the document again
            skipped[listed_as] = problem
            continue
        added.append(name)
    for name in added:
        print(f"{'would add' if args.dry_run else 'added'} {name}: {_describe(hosts[name])}")
    for name, why in skipped.items():
        print(f"left out {name}: {why}")
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    for name in added:
        secrets = [f"{w} is stored in {path} as written" for w in _literal_secrets(hosts[name], by_name=True)]
        for warning in [*_warnings(hosts[name]), *secrets]:
            print(f"note: {name}: {warning}", file=sys.stderr)
    if not added:
        print(f"nothing was added to {path}")
        return 1
    if not args.dry_run:
        _write(path, text)
        print(f"{len(added)} added to {path}; start one with `cadmcp host NAME` or launch_host(hostApp=NAME)")
    return 0


def _chosen(found: Any, only: list[str], source: Path) -> set[str] | None:
    """The names ``--only`` picks (as listed in the file or as hosts), casefolded; None: all."""
    if not only:
        return None
    known = {n.casefold() for n in [*found.entries, *found.listed_as.values(), *found.skipped]}
    for name in only:
        if name.casefold() not in known:
            print(f"cadmcp host import: {source} lists no server {name!r}", file=sys.stderr)
    return {n.casefold() for n in only}


def _known_files() -> int:
    """`cadmcp host import` alone: the MCP clients' files found here, with their servers."""
    from cadmcp.foreign.importing import known_files, servers_of

    found = []
    for client, path in known_files():
        try:
            servers = servers_of(_client_config(path)) or {}
        except (OSError, ValueError):
            continue
        if servers:
            found.append((client, path, servers))
    if not found:
        print("no MCP client's server list was found here; give its file: cadmcp host import FILE")
        return 1
    print("MCP clients' server lists found (import one with `cadmcp host import FILE`):")
    for client, path, servers in found:
        names = ", ".join(list(servers)[:8]) + (" ..." if len(servers) > 8 else "")
        print(f"  {client}: {path}  ({len(servers)}: {names})")
    return 0


def _client_config(path: Path) -> Any:
    """A client's configuration file: JSON, or the JSON with comments and trailing commas VS Code
    and Cursor allow (read with json5)."""
    if path.stat().st_size > MAX_CLIENT_FILE_BYTES:
        raise ValueError(
            f"it is over {MAX_CLIENT_FILE_BYTES // (1024 * 1024)} MiB, no client's configuration"
        )
    text = path.read_text(encoding="utf-8-sig")
    try:
        return json.loads(text)
    except ValueError:
        import json5

        return json5.loads(text)


def _describe(entry: dict[str, Any]) -> str:
    server = entry["server"]
    if "url" in server:
        return str(server["url"])
    line = " ".join([server["command"], *server.get("args", [])])
    return f"{line}  (in {server['cwd']})" if server.get("cwd") else line


def main(argv: Sequence[str]) -> int:
    """`cadmcp host add|remove ...`; returns the exit code."""
    argv = list(argv)
    command: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, command = argv[:at], argv[at + 1 :]
    args = _parser().parse_args(argv)
    if args.action == "list":
        return _list()
    if args.action == "import":
        return _import(args)
    name = args.name
    if (problem := name_problem(name)) is not None:  # the rule of a hand-written entry's name
        print(f"cadmcp host: {problem}", file=sys.stderr)
        return 2
    path = config_path() or config_dir() / "hosts.json"
    try:
        data, document = _load(path)
    except ConfigError as exc:
        print(f"cadmcp host: {exc} Nothing was changed.", file=sys.stderr)
        return 2
    except (OSError, ValueError) as exc:
        print(
            f"cadmcp host: {path} cannot be read ({exc}); fix it, or point {CONFIG_ENV} at another file, "
            "and run this again. Nothing was changed.",
            file=sys.stderr,
        )
        return 2
    hosts = data.setdefault("hosts", {})
    replaced: list[str] = []
    notes: list[str] = []
    if args.action == "remove":
        name = next((other for other in hosts if other.casefold() == name.casefold()), name)
        if name not in hosts:
            print(f"cadmcp host remove: {path} has no host {name!r}", file=sys.stderr)
            return 1
        entry = hosts.pop(name)
    else:
        if name.casefold() in {a.key.casefold() for a in BUILTIN} and not args.force:
            print(f"cadmcp host add: {name} is a built-in host; pick another name", file=sys.stderr)
            return 2
        same = [other for other in hosts if other.casefold() == name.casefold()]
        if same and not args.force:
            print(
                f"cadmcp host add: {path} already has {same[0]}; pass --force to replace it", file=sys.stderr
            )
            return 1
        for other in same:  # host names are matched without case: one entry per name
            hosts.pop(other)
        entry = hosts[name] = _entry(args, command)
        replaced = [other for other in same if other != name]
        for note in (_pin(entry), _settle_here(entry)):
            if note is not None:
                notes.append(note)
    try:
        text = _text(path, data, document, name, replaced)
    except Exception as exc:  # a TOML layout tomlkit cannot edit: the entry to write by hand
        import tomlkit

        verb = "remove" if args.action == "remove" else "add"
        print(f"cadmcp host: {path} could not be edited ({exc}); {verb} this by hand:", file=sys.stderr)
        print(tomlkit.dumps({"hosts": {name: entry}}), file=sys.stderr)
        return 2
    problem = _problem(path, text, name)
    if problem is not None:
        print(f"cadmcp host: {problem} Nothing was changed.", file=sys.stderr)
        return 2
    _write(path, text)
    if args.action == "remove":
        print(f"removed {name} from {path}")
        for pid in _running(name):
            print(
                f"note: {name} still runs (pid {pid}): removing its entry does not stop it; "
                f"stop it with `kill {pid}`",
                file=sys.stderr,
            )
        return 0
    start = f"`cadmcp host {shlex.quote(name)}` or launch_host(hostApp={name!r})"
    print(f"added {name} to {path}; start it with {start}")
    for warning in [*notes, *_warnings(entry), *_endpoint_note(name)]:
        print(f"note: {warning}", file=sys.stderr)
    for pid in _running(name):
        print(
            f"note: {name} already runs (pid {pid}): if its server is down it is tried again at once with "
            "the new entry; a server that is up keeps the entry it started with until its next start "
            f"(launch_host with restartHostInstanceId from list_host_instances, or `kill {pid}` and start "
            "it again)",
            file=sys.stderr,
        )
    for what in _literal_secrets(entry):
        print(
            f"note: {what} is stored in {path} as written; for a secret use env:VAR or file:PATH",
            file=sys.stderr,
        )
    return 0

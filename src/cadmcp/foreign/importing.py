"""Other MCP clients' server lists read as cadmcp host entries (`cadmcp host import FILE`).

The formats people already keep their servers in: ``mcpServers`` (Claude Desktop's
``claude_desktop_config.json``, Claude Code's ``.mcp.json`` and ``~/.claude.json``, Cursor's
``mcp.json``, Windsurf, Cline) and ``servers`` (VS Code's ``.vscode/mcp.json``, or ``mcp.servers``
in its settings). A stdio server keeps its command, arguments, environment and folder (a project's
file starts its servers in the project, as its client does); an HTTP one its URL and headers.
Variables in ``env`` and ``headers``, and an argument that is a variable whole, become cadmcp's
references (``${env:VAR}`` and ``${VAR}`` are ``env:VAR``; a VS Code ``${input:...}`` prompt an
``env:`` reference to a variable the note names). cadmcp expands no variable elsewhere, so one in
a command, within an argument or in a URL stays as written and is said. What cannot be a host is
left out with the reason: a disabled entry, the SSE transport, cadmcp itself.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

MAX_NAME_CHARS = 40
_WHOLE_VAR = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}")
_ANY_VAR = re.compile(r"\$\{[^}]+\}")
_INPUT = re.compile(r"\$\{input:([^}]+)\}")
_DEFAULTED = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):-[^}]*\}")
_HTTP_TYPES = {"http", "streamable-http", "streamablehttp", "streamable_http"}
_EDITOR_VARS = ("workspaceFolder", "workspaceFolderBasename", "userHome", "pathSeparator")
"""Variables VS Code and Cursor fill in themselves (not from the environment)."""


@dataclass
class Imported:
    """What a client's file gives: host entries by name (and the name each had there), what was
    left out and why, and notes by host name ("" for the file as a whole)."""

    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    listed_as: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    notes: dict[str, list[str]] = field(default_factory=dict)


def servers_of(data: Any, folder: Path | None = None) -> dict[str, Any] | None:
    """The server table of a client's configuration, or None when it has none; for Claude Code's
    `~/.claude.json`, the user's servers and those it keeps for the project in ``folder``."""
    if not isinstance(data, dict):
        return None
    tables = (data.get("mcpServers"), data.get("servers"), (data.get("mcp") or {}).get("servers"))
    found = next((t for t in (*tables, data.get("mcp.servers")) if isinstance(t, dict)), None)
    project = _project_servers(data, folder or Path.cwd())
    if project:
        found = {**(found or {}), **project}
    return found


def _project_servers(data: dict[str, Any], folder: Path) -> dict[str, Any]:
    projects = data.get("projects")
    if not isinstance(projects, dict):
        return {}
    mine = projects.get(str(folder.resolve())) or projects.get(str(folder))
    servers = mine.get("mcpServers") if isinstance(mine, dict) else None
    return servers if isinstance(servers, dict) else {}


def import_servers(data: Any, source: Path, folder: Path | None = None) -> Imported:
    """Host entries for the servers `data` (the parsed file ``source``) lists; ``folder`` is where
    the command runs (the project whose servers `~/.claude.json` keeps)."""
    found = Imported()
    table = servers_of(data, folder)
    if not table:
        elsewhere = _other_projects(data, folder or Path.cwd())
        found.notes[""] = [
            f"{source} lists no MCP servers (no mcpServers, servers or mcp.servers table)"
            if not elsewhere
            else f"{source} keeps servers for other projects only ({', '.join(elsewhere[:3])}): run this "
            "in one of those folders to import its servers"
        ]
        return found
    project = _project_folder(source)
    inputs = _inputs(data)
    for raw_name, spec in table.items():
        listed = str(raw_name)
        if not isinstance(spec, dict):
            found.skipped[listed] = "its entry is not an object"
            continue
        host = _host_name(listed, found.entries)
        notes: list[str] = []
        try:
            entry = _entry(host, spec, _Context(project, inputs, notes))
        except _Skip as why:
            found.skipped[listed] = str(why)
            continue
        if host != listed:
            notes.insert(0, f"named {host} ({listed!r} is not a host name: letters, digits, - and _)")
        found.entries[host] = entry
        found.listed_as[host] = listed
        if notes:
            found.notes[host] = notes
    return found


def _other_projects(data: Any, folder: Path) -> list[str]:
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict):
        return []
    return [p for p, v in projects.items() if isinstance(v, dict) and v.get("mcpServers")]


def _project_folder(source: Path) -> Path | None:
    """The project a client's file belongs to (its servers start there), None for a user's file."""
    source = source.expanduser().resolve()
    if source.name == ".mcp.json":
        return source.parent
    if source.parent.name in (".vscode", ".cursor") and source.parent.parent != Path.home().resolve():
        return source.parent.parent
    return None


def _inputs(data: Any) -> dict[str, str]:
    """VS Code's input prompts: id → what it asks."""
    inputs = data.get("inputs") if isinstance(data, dict) else None
    if not isinstance(inputs, list):
        inputs = ((data.get("mcp") or {}).get("inputs") if isinstance(data, dict) else None) or []
    return {
        str(i["id"]): str(i.get("description") or "")
        for i in inputs
        if isinstance(i, dict) and isinstance(i.get("id"), str)
    }


class _Skip(ValueError):
    """Why a server of the file cannot be a host."""


@dataclass
class _Context:
    project: Path | None
    inputs: dict[str, str]
    notes: list[str]


def _entry(name: str, spec: dict[str, Any], ctx: _Context) -> dict[str, Any]:
    if spec.get("disabled") is True:
        raise _Skip("it is disabled there")
    kind = str(spec.get("type") or spec.get("transportType") or spec.get("transport") or "").casefold()
    url = spec.get("url") or spec.get("serverUrl")
    if kind == "sse" or (
        isinstance(url, str) and kind not in _HTTP_TYPES and urlparse(url).path.rstrip("/").endswith("/sse")
    ):
        raise _Skip(
            "it uses the SSE transport, which cadmcp does not speak; if the server also has a "
            "streamable HTTP endpoint (often the same address with /mcp for /sse), add that with "
            f"`cadmcp host add {name} --url URL`"
        )
    server: dict[str, Any] = {}
    if isinstance(url, str) and (kind in _HTTP_TYPES or not spec.get("command")):
        if not url.startswith(("http://", "https://")):
            raise _Skip(f"its URL {url[:80]!r} is not http:// or https://")
        server["url"] = _as_written(url, "its URL", ctx)
        headers = _strings(spec.get("headers"), "headers")
        if headers:
            server["headers"] = {k: _reference(v, ctx) for k, v in headers.items()}
    else:
        command = spec.get("command")
        if not isinstance(command, str) or not command.strip():
            raise _Skip("it has neither a command nor a URL")
        args = spec.get("args") or []
        if not isinstance(args, list) or not all(isinstance(a, str | int | float) for a in args):
            raise _Skip("its args are not a list of strings")
        command = _as_written(command, "its command", ctx)
        args = [_argument(str(a), ctx) for a in args]
        if _is_cadmcp(command, args):
            raise _Skip("it is cadmcp itself")
        server["command"], server["args"] = command, args
        cwd = spec.get("cwd")
        if isinstance(cwd, str) and cwd:
            cwd = _as_written(cwd, "its cwd", ctx)
            if ctx.project is not None and not Path(cwd).expanduser().is_absolute() and "${" not in cwd:
                cwd = str((ctx.project / cwd).resolve())  # relative to the project, as its client reads it
            server["cwd"] = cwd
        elif ctx.project is not None:
            server["cwd"] = str(ctx.project)  # the project's servers start in the project
    env = _strings(spec.get("env"), "env")
    if env:
        server["env"] = {k: _reference(v, ctx) for k, v in env.items()}
    env_file = spec.get("envFile")
    if env_file:
        ctx.notes.append(
            f"its envFile {_editor_vars(str(env_file), ctx)[:160]!r} is not read: put those variables in "
            "the entry's env (in the host configuration)"
        )
    return {"server": server}


def _strings(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _Skip(f"its {what} is not an object")
    return {str(k): str(v) for k, v in value.items()}


def _editor_vars(text: str, ctx: _Context) -> str:
    """The variables the editor fills in, filled in as it would (those it can be known here)."""
    known = {
        "userHome": str(Path.home()),
        "pathSeparator": os.sep,
        **(
            {"workspaceFolder": str(ctx.project), "workspaceFolderBasename": ctx.project.name}
            if ctx.project is not None
            else {}
        ),
    }
    for var in _EDITOR_VARS:
        token = "${" + var + "}"
        if token in text and var in known:
            text = text.replace(token, known[var])
    return text


def _as_written(text: str, where: str, ctx: _Context) -> str:
    """A command, argument, folder or URL: kept as written (cadmcp expands no variable there)."""
    text = _editor_vars(text, ctx)
    if (variable := _ANY_VAR.search(text)) is not None:
        ctx.notes.append(
            f"{where} {'hold' if where.endswith('args') else 'holds'} {variable.group(0)!r} (in "
            f"{text[:80]!r}), which cadmcp passes as written: "
            "it reads variables in env and headers, and an argument that is one whole; edit the entry"
        )
    return text


def _argument(text: str, ctx: _Context) -> str:
    """An argument: a variable that is the whole of it becomes an ``env:`` reference (cadmcp fills
    those in), any other stays as written."""
    whole = _WHOLE_VAR.fullmatch(_editor_vars(text, ctx))
    if (
        (whole is not None and whole.group(1) not in _EDITOR_VARS)
        or _DEFAULTED.fullmatch(text)
        or _INPUT.fullmatch(text)
    ):
        return _reference(text, ctx)
    return _as_written(text, "its args", ctx)


def _reference(text: str, ctx: _Context) -> str:
    """An env or header value with the client's variables made cadmcp's references."""
    text = _editor_vars(text, ctx)
    for match in _INPUT.finditer(text):
        variable = re.sub(r"[^A-Za-z0-9_]", "_", match.group(1)).upper()
        asks = ctx.inputs.get(match.group(1))
        what = f" ({asks[:80]})" if asks else ""
        ctx.notes.append(
            f"VS Code asked for {match.group(1)!r}{what} when it started the server; set {variable}"
        )
        text = text.replace(match.group(0), "${" + variable + "}")
    for match in _DEFAULTED.finditer(text):
        ctx.notes.append(f"the default in {match.group(0)!r} is dropped: set {match.group(1)}")
        text = text.replace(match.group(0), "${" + match.group(1) + "}")
    whole = _WHOLE_VAR.fullmatch(text)
    if whole is not None and whole.group(1) not in _EDITOR_VARS:
        return f"env:{whole.group(1)}"
    prefixed = re.fullmatch(r"(\S+ )" + _WHOLE_VAR.pattern, text)  # `Bearer ${env:TOKEN}`
    if prefixed is not None and prefixed.group(2) not in _EDITOR_VARS:
        return f"{prefixed.group(1)}env:{prefixed.group(2)}"
    if _ANY_VAR.search(text):
        ctx.notes.append(
            f"{text[:80]!r} mixes text and variables, which cadmcp does not expand; edit the entry"
        )
    return text


def _is_cadmcp(command: str, args: list[str]) -> bool:
    """Whether the server is a cadmcp daemon (`cadmcp daemon`, `uvx cadmcp daemon`, `python -m
    cadmcp daemon`): the client's way to reach cadmcp, no host of it."""
    words = [Path(command).name.casefold(), *(a.casefold() for a in args)]
    return any(w == "cadmcp" or w.startswith("cadmcp[") or w.startswith("cadmcp==") for w in words) and (
        "daemon" in words
    )


def _host_name(name: str, taken: dict[str, Any]) -> str:
    """``name`` as a host name: other characters than letters (of any script), digits, - and _
    made '-', short enough for an endpoint's name, unique."""
    from cadmcp.applications import name_problem

    base = re.sub(r"[^\w-]+", "-", name).strip("-_")[:MAX_NAME_CHARS]
    if not base or name_problem(base) is not None:  # letters of other scripts take more room
        base = re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-_")[:MAX_NAME_CHARS] or "server"
    candidate, n = base, 2
    while candidate.casefold() in {t.casefold() for t in taken}:
        suffix = f"-{n}"
        candidate, n = base[: MAX_NAME_CHARS - len(suffix)] + suffix, n + 1
    return candidate


def known_files(folder: Path | None = None) -> list[tuple[str, Path]]:
    """The configuration files of the MCP clients this machine has (user-wide ones, and those of
    the project in ``folder``), as (client, path), for a user who does not know where they are."""
    home = Path.home()
    if sys.platform == "darwin":
        app_data = home / "Library" / "Application Support"
    elif sys.platform == "win32":  # pragma: no cover
        app_data = Path(os.environ.get("APPDATA") or home / "AppData" / "Roaming")
    else:
        app_data = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    here = folder or Path.cwd()
    candidates = [
        ("Claude Desktop", app_data / "Claude" / "claude_desktop_config.json"),
        ("Claude Code", home / ".claude.json"),
        ("Claude Code (this project)", here / ".mcp.json"),
        ("Cursor", home / ".cursor" / "mcp.json"),
        ("Cursor (this project)", here / ".cursor" / "mcp.json"),
        ("VS Code", app_data / "Code" / "User" / "mcp.json"),
        ("VS Code", app_data / "Code" / "User" / "settings.json"),
        ("VS Code (this project)", here / ".vscode" / "mcp.json"),
        ("Windsurf", home / ".codeium" / "windsurf" / "mcp_config.json"),
    ]
    return [(client, path) for client, path in candidates if path.is_file()]

"""Other MCP clients' server lists read as cadmcp host entries (`cadmcp host import FILE`).

The formats people already keep their servers in: ``mcpServers`` (Claude Desktop's
``claude_desktop_config.json``, Claude Code's ``.mcp.json``, Cursor's ``mcp.json``, Windsurf,
Cline) and ``servers`` (VS Code's ``.vscode/mcp.json``, or ``mcp.servers`` in its settings). A
stdio server keeps its command, arguments, environment and folder; an HTTP one its URL and
headers. Their variables become cadmcp's secret references where they can (``${env:VAR}`` and
``${VAR}`` are ``env:VAR``); a VS Code ``${input:...}`` prompt becomes an ``env:`` reference to a
variable the note names. What cannot be a host is left out with the reason: a disabled entry,
the SSE transport, cadmcp itself.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_NAME_CHARS = 40
_WHOLE_VAR = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}")
_INPUT = re.compile(r"\$\{input:([^}]+)\}")
_DEFAULTED = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):-[^}]*\}")
_HTTP_TYPES = {"http", "streamable-http", "streamablehttp", "streamable_http"}


@dataclass
class Imported:
    """What a client's file gives: host entries by name, what was left out and why, and notes."""

    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def servers_of(data: Any) -> dict[str, Any] | None:
    """The server table of a client's configuration, or None when it has none."""
    if not isinstance(data, dict):
        return None
    for table in (data.get("mcpServers"), data.get("servers"), (data.get("mcp") or {}).get("servers")):
        if isinstance(table, dict):
            return table
    return None


def import_servers(data: Any, source: Path) -> Imported:
    """Host entries for the servers `data` (the parsed file ``source``) lists."""
    found = Imported()
    table = servers_of(data)
    if table is None:
        found.notes.append(f"{source} lists no MCP servers (no mcpServers, servers or mcp.servers table)")
        return found
    workspace = source.resolve().parent.parent if source.parent.name == ".vscode" else None
    for raw_name, spec in table.items():
        name = str(raw_name)
        if not isinstance(spec, dict):
            found.skipped[name] = "its entry is not an object"
            continue
        try:
            entry, notes = _entry(name, spec, workspace)
        except _Skip as why:
            found.skipped[name] = str(why)
            continue
        host = _host_name(name, found.entries)
        if host != name:
            notes.insert(0, f"named {host} ({name!r} is not a host name: letters, digits, - and _)")
        found.entries[host] = entry
        found.notes.extend(f"{host}: {note}" for note in notes)
    return found


class _Skip(ValueError):
    """Why a server of the file cannot be a host."""


def _entry(name: str, spec: dict[str, Any], workspace: Path | None) -> tuple[dict[str, Any], list[str]]:
    notes: list[str] = []
    if spec.get("disabled") is True:
        raise _Skip("it is disabled there")
    kind = str(spec.get("type") or spec.get("transport") or "").casefold()
    url = spec.get("url") or spec.get("serverUrl")
    if kind == "sse":
        raise _Skip(
            "it uses the SSE transport, which cadmcp does not speak; if the server also has a "
            "streamable HTTP endpoint (often the same address ending in /mcp), add that with "
            f"`cadmcp host add {name} --url URL`"
        )
    server: dict[str, Any] = {}
    if isinstance(url, str) and (kind in _HTTP_TYPES or not spec.get("command")):
        if not url.startswith(("http://", "https://")):
            raise _Skip(f"its URL {url[:80]!r} is not http:// or https://")
        server["url"] = _value(url, notes, workspace)
        headers = _strings(spec.get("headers"), "headers")
        if headers:
            server["headers"] = {k: _value(v, notes, workspace) for k, v in headers.items()}
    else:
        command = spec.get("command")
        if not isinstance(command, str) or not command.strip():
            raise _Skip("it has neither a command nor a URL")
        args = spec.get("args") or []
        if not isinstance(args, list) or not all(isinstance(a, str | int | float) for a in args):
            raise _Skip("its args are not a list of strings")
        command = _value(command, notes, workspace)
        args = [_value(str(a), notes, workspace) for a in args]
        if _is_cadmcp(command, args):
            raise _Skip("it is cadmcp itself")
        server["command"], server["args"] = command, args
        cwd = spec.get("cwd")
        if isinstance(cwd, str) and cwd:
            server["cwd"] = _value(cwd, notes, workspace)
    env = _strings(spec.get("env"), "env")
    if env:
        server["env"] = {k: _value(v, notes, workspace) for k, v in env.items()}
    if spec.get("envFile"):
        notes.append("its envFile is not read: give those variables with --env or in the entry's env")
    return {"server": server}, notes


def _strings(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _Skip(f"its {what} is not an object")
    return {str(k): str(v) for k, v in value.items()}


def _value(text: str, notes: list[str], workspace: Path | None) -> str:
    """A value with the client's variables made cadmcp's references (or said when they cannot)."""
    if "${workspaceFolder}" in text:
        if workspace is not None:
            text = text.replace("${workspaceFolder}", str(workspace))
        else:
            notes.append(
                f"{text[:80]!r} names ${{workspaceFolder}}, which only VS Code knows; edit the entry"
            )
    for match in _INPUT.finditer(text):
        variable = re.sub(r"[^A-Za-z0-9_]", "_", match.group(1)).upper()
        notes.append(f"VS Code asked for {match.group(1)!r} when it started the server; set {variable}")
        text = text.replace(match.group(0), "${" + variable + "}")
    for match in _DEFAULTED.finditer(text):
        notes.append(f"the default in {match.group(0)!r} is dropped: set {match.group(1)}")
        text = text.replace(match.group(0), "${" + match.group(1) + "}")
    whole = _WHOLE_VAR.fullmatch(text)
    if whole is not None:
        return f"env:{whole.group(1)}"
    prefixed = re.fullmatch(r"(\S+ )" + _WHOLE_VAR.pattern, text)  # `Bearer ${env:TOKEN}`
    if prefixed is not None:
        return f"{prefixed.group(1)}env:{prefixed.group(2)}"
    if _WHOLE_VAR.search(text):
        notes.append(f"{text[:80]!r} mixes text and variables, which cadmcp does not expand; edit the entry")
    return text


def _is_cadmcp(command: str, args: list[str]) -> bool:
    """Whether the server is a cadmcp daemon (`cadmcp daemon`, `uvx cadmcp daemon`, `python -m
    cadmcp daemon`): the client's way to reach cadmcp, no host of it."""
    words = [Path(command).name.casefold(), *(a.casefold() for a in args)]
    return any(w == "cadmcp" or w.startswith("cadmcp[") or w.startswith("cadmcp==") for w in words) and (
        "daemon" in words
    )


def _host_name(name: str, taken: dict[str, Any]) -> str:
    """``name`` as a host name: other characters made '-', at most `MAX_NAME_CHARS`, unique."""
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

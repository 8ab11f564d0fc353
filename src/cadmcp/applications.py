"""The registry of applications: every kind of host cadmcp can start, declared once.

The CLI (`cadmcp host KEY`), `launch_host`, the walkthrough and the docs read this one list.
Built-in applications are declared in :data:`BUILTIN`; the host configuration file
(`hosts.json` or `hosts.toml` in the user config dir, or the file `CADMCP_HOSTS_CONFIG`
names) declares more, each of one kind:

- ``document``: an adapter behind the built-in surface, started by cadmcp's own host
  runtime (``"adapter": "path/to/notes_host.py:open_notebooks"`` in the file);
- ``command``: any program that serves a cadmcp endpoint, started as configured
  (``"command": ["mycad", "--cadmcp", "{filePath}"]``);
- ``mcp``: someone else's MCP server, fronted by a small cadmcp proxy process that serves it on
  our endpoint like any host (``"server": {"command": "mcp-server-time", "args": [...]}`` or
  ``"server": {"url": "https://.../mcp", "headers": {"Authorization": "Bearer env:TOKEN"}}``;
  docs/hosts/foreign.md).

A wrong entry costs only itself: it is listed as an application that cannot start, whose
``problem`` says what to fix (logged once, and answered by `cadmcp host NAME`, which
`launch_host` runs for it); a key nothing reads is logged with the key probably meant. A file
that is not valid TOML/JSON raises :class:`UnreadableConfig`, naming the line.

Importing this module is cheap (the daemon does): adapters are named, never imported, here.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import importlib.util
import json
import logging
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cadmcp.userdirs import config_dir

__all__ = [
    "BUILTIN",
    "COMMAND",
    "CONFIG_ENV",
    "DOCUMENT",
    "FOREIGN",
    "Application",
    "ConfigError",
    "ForeignServer",
    "StartRequest",
    "UnreadableConfig",
    "applications",
    "config_path",
    "configured",
    "configured_from",
    "entry_application",
    "example",
    "find",
    "name_problem",
    "parse_config",
    "parse_config_file",
    "read_config",
    "resolve",
]

CONFIG_ENV = "CADMCP_HOSTS_CONFIG"
DOCUMENT = "document"
"""An adapter behind the built-in surface, served by cadmcp's host runtime."""
COMMAND = "command"
"""A program started as configured; it serves its own endpoint."""
FOREIGN = "mcp"
"""Someone else's MCP server (stdio command or streamable HTTP URL) behind a cadmcp proxy process."""
KINDS = (DOCUMENT, COMMAND, FOREIGN)
MAX_CONFIG_ITEMS = 256
"""Arguments, environment variables or headers one foreign server entry may name."""


@dataclass(frozen=True)
class ForeignServer:
    """How to reach one foreign MCP server: a stdio command, or a streamable HTTP URL.

    Values in ``env`` and ``headers`` may be references resolved only when the proxy connects:
    ``env:VAR`` (an environment variable of the proxy) or ``file:PATH`` (a private file, mode 0600),
    alone or after a prefix word (``"Bearer env:TOKEN"``); the configuration holds no secret.
    """

    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    call_timeout: float = 120.0
    """Seconds one call may take before the proxy fails it (a hung server fails only its calls)."""
    connect_timeout: float = 30.0
    """Seconds to start, connect and list before an attempt counts as failed."""
    protocol: str | None = None
    """The protocol version to speak to it (one of `PROTOCOLS`); None: the newest it offers."""

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"

    def describe(self) -> str:
        """What the server is, for the host state and messages: never a header's value, and what
        looks like a credential in its URL or arguments masked (a password, a token)."""
        from cadmcp.wire.masking import mask_text

        return mask_text(self.url or " ".join([self.command or "", *self.args]))[:300]


@dataclass(frozen=True)
class StartRequest:
    """What `cadmcp host KEY` was asked: the documents and the options of one host start."""

    files: list[str] = field(default_factory=list)
    exec_timeout: float | None = None
    toolsets: list[str] = field(default_factory=list)
    verbose: bool = False
    gui: bool = False
    app: str | None = None
    """The host app name to serve as (the demo host only)."""
    app_version: str | None = None
    """The version to serve as (the demo host only)."""


@dataclass(frozen=True)
class Application:
    """One kind of host: its name, how it is started, the files it opens."""

    name: str
    """The host app name hosts announce and `launch_host` takes (``hostApp``)."""
    key: str
    """What `cadmcp host KEY` takes."""
    kind: str = DOCUMENT
    adapter: str | None = None
    """``module:factory`` or ``file.py:factory``; ``factory(paths, exec_timeout=...)`` returns the
    :class:`~cadmcp.host.builtins.DocumentAdapter` over those documents (the first active)."""
    starter: str | None = None
    """``module:function`` taking a :class:`StartRequest` and returning an exit code, for an
    application that starts its host itself (FreeCAD in its own process, the demo host)."""
    extensions: tuple[str, ...] = ()
    """The file suffixes it opens (lower case, with the dot); `launch_host` picks by them."""
    sample: str | None = None
    """A bundled sample document (under ``samples/``) for the walkthrough and the docs."""
    version: str | None = None
    """A fixed version; None: ``version_from``'s ``HOST_VERSION``, or the host names its own."""
    version_from: str | None = None
    """The module whose ``HOST_VERSION`` is the version (built-in applications)."""
    launch_args: tuple[str, ...] = ()
    """For built-ins: arguments after ``cadmcp host KEY`` (``{version}`` is filled in)."""
    command: tuple[str, ...] = ()
    """For ``command`` applications: the command line (``{filePath}``, ``{version}`` filled in)."""
    versions: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """For ``command`` applications: a command line per version."""
    takes_files: bool = True
    origin: str = "built-in"
    """Where it was declared: ``built-in`` or the configuration file's path."""
    summary: str = ""
    server: ForeignServer | None = None
    """For ``mcp`` applications: the foreign server the proxy fronts."""
    problem: str | None = None
    """Why its entry in the configuration cannot be used and how to fix it (None: it can be)."""
    ignored: tuple[str, ...] = ()
    """Keys of its entry that nothing reads, each with the key probably meant (the entry works
    without them: a misspelt ``arg`` leaves the server started with no arguments)."""

    def launch_command(self) -> tuple[str, ...]:
        """The command `launch_host` runs (before its slots are filled in); for a wrong entry,
        `cadmcp host KEY`, which says what is wrong with it."""
        if self.problem is not None:
            return (sys.executable, "-m", "cadmcp", "host", self.key)
        if self.kind == COMMAND:
            return self.command
        if self.kind == FOREIGN:
            return (sys.executable, "-m", "cadmcp", "host", self.key)
        return (sys.executable, "-m", "cadmcp", "host", self.key, *self.launch_args)

    def host_version(self) -> str:
        """The version this application's host serves as (imports ``version_from`` when set)."""
        if self.version_from is not None:
            return str(importlib.import_module(self.version_from).HOST_VERSION)
        return self.version or next(iter(self.versions), "1.0")

    def known_versions(self) -> list[str]:
        """The versions a configured application names (empty: any version is passed through)."""
        return sorted({*self.versions, *([self.version] if self.version else [])})

    def command_for(self, version: str, files: Sequence[str] = ()) -> list[str]:
        """The command line; a `{filePath}` slot takes the first file, other files are appended
        when the command has no slot (built-in hosts open every file they are given)."""
        template = list(self.versions.get(version) or self.launch_command())
        first = files[0] if files else ""
        out = [
            part.replace("{version}", version).replace("{filePath}", first)
            for part in template
            if files or part != "{filePath}"
        ]
        if self.opens_several(version):
            out.extend(files)
        return out

    def opens_several(self, version: str) -> bool:
        """Whether the command takes more than one file (no `{filePath}` slot)."""
        return not any("{filePath}" in part for part in (self.versions.get(version) or self.launch_command()))


BUILTIN: tuple[Application, ...] = (
    Application(
        "DXF",
        "dxf",
        adapter="cadmcp.hosts.dxf:create_adapter",
        extensions=(".dxf", ".dwg"),
        sample="floorplan.dxf",
        version_from="cadmcp.hosts.dxf",
        summary="DXF drawings through ezdxf (the AutoCAD analogue)",
    ),
    Application(
        "IFC",
        "ifc",
        adapter="cadmcp.hosts.ifc:create_adapter",
        extensions=(".ifc",),
        sample="house.ifc",
        version_from="cadmcp.hosts.ifc",
        summary="IFC models through IfcOpenShell (the Revit/BIM analogue)",
    ),
    Application(
        "Demo",
        "demo",
        starter="cadmcp.host.demo:start",
        launch_args=("--app", "Demo", "--app-version", "{version}"),
        takes_files=False,
        summary="a small host with every kind of result, for trying cadmcp out",
    ),
    # FreeCAD names itself by its own version (known only inside FreeCAD), so none is fixed here
    Application(
        "FreeCAD",
        "freecad",
        starter="cadmcp.hosts.freecad.launcher:start",
        extensions=(".fcstd",),
        sample="bracket.FCStd",
        summary="FreeCAD itself, headless or with its window",
    ),
)


TOP_KEYS = ("hosts", "gateway", "policy")
"""The sections of the configuration file."""
ENTRY_KEYS = ("command", "adapter", "server", "extensions", "version", "versions", "summary")
"""The keys of one host entry (each kind uses some of them)."""
SERVER_KEYS = (
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "callTimeoutSeconds",
    "connectTimeoutSeconds",
    "protocolVersion",
)
"""The keys of a foreign entry's ``server`` table."""
PROTOCOLS = ("2025-11-25", "2026-07-28")
"""The protocol versions a foreign server may be held to (``server.protocolVersion``)."""
TIMEOUT_RANGE = (0.1, 3600.0)
"""The seconds a foreign server's call or connect timeout may be set to."""
EXAMPLES: dict[str, dict[str, Any]] = {
    FOREIGN: {"server": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"]}},
    COMMAND: {"command": ["mycad", "--cadmcp", "{filePath}"], "extensions": [".abc"]},
    DOCUMENT: {"adapter": "my_host.py:open_documents", "extensions": [".abc"]},
}
"""A right entry of each kind, shown in the messages about a wrong one."""
MAX_WARNED = 1000

log = logging.getLogger("cadmcp.applications")
_warned: set[str] = set()


def example(path: Path, name: str = "MyCAD", kind: str = COMMAND) -> str:
    """A right entry of this kind as the file would hold it: a TOML table or a JSON object."""
    entry = EXAMPLES[kind]
    if path.suffix.lower() != ".toml":
        return json.dumps({"hosts": {name: entry}})
    key = name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else _toml_string(name)
    table, items = (f"hosts.{key}.server", entry["server"]) if "server" in entry else (f"hosts.{key}", entry)
    # a table of its own: valid wherever it is pasted (a dotted key would land in the table above)
    lines = [f"[{table}]", *(f"{k} = {json.dumps(v, ensure_ascii=False)}" for k, v in items.items())]
    return "\n".join(lines)


def _toml_string(text: str) -> str:
    """`text` as a TOML basic string (JSON's escapes for the basic plane would split a character
    beyond it into surrogates, which TOML refuses)."""
    return json.dumps(text, ensure_ascii=False)


class ConfigError(ValueError):
    """The host configuration file cannot be used; the message says what to fix."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(
            f"The host configuration {path} is invalid: {problem}. Fix it; for example:\n{example(path)}"
        )
        self.path = path
        self.problem = problem


class UnreadableConfig(ConfigError):
    """The file cannot be read, or is not valid TOML/JSON: nothing in it (hosts, gateway, policy) applies."""

    def __init__(self, path: Path, problem: str) -> None:
        ValueError.__init__(
            self,
            f"The host configuration {path} cannot be used: {problem}. Fix it (or point {CONFIG_ENV} at "
            "another file); until it can be read, no host can be launched.",
        )
        self.path = path
        self.problem = problem


class _EntryError(ValueError):
    """One host entry is wrong (the message says how); the other entries are not affected."""


def config_path() -> Path | None:
    """The host configuration file in use, if any."""
    override = os.environ.get(CONFIG_ENV)
    if override:
        return Path(override)
    folder = config_dir()
    return next((p for p in (folder / "hosts.toml", folder / "hosts.json") if p.is_file()), None)


def parse_config(text: str, path: Path) -> Any:
    """A configuration text in the format of ``path``: TOML for `.toml`, else JSON (ValueError)."""
    if path.suffix.lower() == ".toml":
        import tomllib

        return tomllib.loads(text)
    return json.loads(text) if text.strip() else {}  # an empty file configures nothing, as in TOML


def parse_config_file(path: Path) -> Any:
    """The configuration file's content: TOML for `.toml`, else JSON (OSError, ValueError)."""
    return parse_config(path.read_text(encoding="utf-8"), path)


def read_config(path: Path) -> Any:
    """The configuration file's content; :class:`UnreadableConfig` saying where a syntax error is."""
    try:
        return parse_config_file(path)
    except FileNotFoundError:
        raise ConfigError(path, "the file does not exist") from None
    except OSError as exc:
        raise UnreadableConfig(path, f"it cannot be read ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise UnreadableConfig(path, f"it is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except ValueError as exc:  # the decoders' messages name the line and column
        language = "TOML" if path.suffix.lower() == ".toml" else "JSON"
        raise UnreadableConfig(path, f"it has a {language} syntax error: {exc}") from None


def _warn_once(message: str) -> None:
    """Log a problem of the configuration once per process (it is read again at every launch)."""
    if message in _warned:
        return
    if len(_warned) >= MAX_WARNED:
        _warned.clear()
    _warned.add(message)
    log.warning("%s", message)


def _nearest(key: str, known: Sequence[str]) -> str | None:
    """The known key ``key`` was probably meant to be: the closest spelling, else one it begins with
    (``enviroment``: ``env``) or that begins with it."""
    folded = {k.casefold(): k for k in known}
    wanted = key.casefold()
    close = difflib.get_close_matches(wanted, list(folded), n=1)
    if close:
        return folded[close[0]]
    return next(
        (
            k
            for f, k in folded.items()
            if min(len(f), len(wanted)) >= 3 and (wanted.startswith(f) or f.startswith(wanted))
        ),
        None,
    )


def _unknown(where: str, raw: Any, known: Sequence[str]) -> list[str]:
    """A note per key of ``raw`` that is not among ``known``, naming the nearest known key."""
    notes = []
    for key in raw if isinstance(raw, dict) else ():
        if key in known:
            continue
        near = _nearest(str(key), known)
        guess = f"did you mean {near}?" if near else f"the keys are {', '.join(known)}"
        notes.append(f"{f'{where}.' if where else ''}{str(key)[:80]} is not a known key ({guess})")
    return notes


def _unknown_in_entry(name: str, entry: Any) -> list[str]:
    """Notes on the keys of one host entry (and of its server table) that nothing reads."""
    notes = _unknown(f"hosts.{name}", entry, ENTRY_KEYS)
    if isinstance(entry, dict) and isinstance(entry.get("server"), dict):
        notes += _unknown(f"hosts.{name}.server", entry["server"], SERVER_KEYS)
    return notes


def _command(name: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        import shlex

        value = shlex.split(value)
    if not isinstance(value, list) or not value or not all(isinstance(p, str) for p in value):
        raise _EntryError(f"hosts.{name}.command must be a non-empty list of strings")
    return tuple(value)


def _strings(where: str, value: Any, kind: type) -> Any:
    if value is None:
        return kind()
    if kind is tuple:
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
    else:
        ok = isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
    if not ok or len(value) > MAX_CONFIG_ITEMS:
        shape = "a list of strings" if kind is tuple else 'an object of strings like {"K": "env:VAR"}'
        raise _EntryError(f"{where} must be {shape} (at most {MAX_CONFIG_ITEMS})")
    return tuple(value) if kind is tuple else {str(k): v for k, v in value.items()}


def _seconds(where: str, value: Any, default: float) -> float:
    if value is None:
        return default
    low, high = TIMEOUT_RANGE
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise _EntryError(f"{where} must be a number of seconds between {low:g} and {high:g}")
    return float(value)


_URL_OR_REFERENCE = re.compile(r"^(?:https?://|env:\S+$)")


def _foreign_server(path: Path, name: str, raw: Any) -> ForeignServer:
    where = f"hosts.{name}.server"
    if not isinstance(raw, dict):
        raise _EntryError(
            f'{where} must be an object: {{"command": "...", "args": [...]}} or {{"url": "..."}}'
        )
    command, url = raw.get("command"), raw.get("url")
    if (command is None) == (url is None):
        raise _EntryError(f"{where} needs exactly one of command (stdio) or url (streamable HTTP)")
    if command is not None and (not isinstance(command, str) or not command.strip()):
        raise _EntryError(f"{where}.command must be the program to run (put its arguments in args)")
    if url is not None and (not isinstance(url, str) or not _URL_OR_REFERENCE.match(url)):
        raise _EntryError(f"{where}.url must be an http:// or https:// URL (or env:VAR naming one)")
    cwd = raw.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise _EntryError(f"{where}.cwd must be a folder path")
    protocol = raw.get("protocolVersion")
    if protocol is not None and protocol not in PROTOCOLS:
        raise _EntryError(f"{where}.protocolVersion must be one of {', '.join(PROTOCOLS)} (or left out)")
    return ForeignServer(
        command=command,
        args=_strings(f"{where}.args", raw.get("args"), tuple),
        env=_strings(f"{where}.env", raw.get("env"), dict),
        cwd=str((path.parent / Path(cwd).expanduser()).resolve()) if cwd else None,
        url=url,
        headers=_strings(f"{where}.headers", raw.get("headers"), dict),
        call_timeout=_seconds(f"{where}.callTimeoutSeconds", raw.get("callTimeoutSeconds"), 120.0),
        connect_timeout=_seconds(f"{where}.connectTimeoutSeconds", raw.get("connectTimeoutSeconds"), 30.0),
        protocol=protocol,
    )


def _extensions(name: str, entry: dict[str, Any]) -> tuple[str, ...]:
    extensions = entry.get("extensions") or []
    if not isinstance(extensions, list) or not all(isinstance(e, str) for e in extensions):
        raise _EntryError(f'hosts.{name}.extensions must be a list like [".abc"]')
    return tuple("." + e.lower().lstrip(".") for e in extensions)


def _kind_of(entry: Any) -> str:
    """The kind an entry means to be (also when it is wrong): a server, an adapter, or a command."""
    if isinstance(entry, dict) and "server" in entry:
        return FOREIGN
    return DOCUMENT if isinstance(entry, dict) and "adapter" in entry else COMMAND


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a host (its endpoint would not read back as it), or None."""
    from cadmcp.wire.endpoints import MAX_PART_CHARS, round_trips

    if not name.strip() or any(not c.isprintable() for c in name) or name != name.strip():
        return (
            f"the name {name[:80]!r} cannot name a host: give it printable characters, without spaces "
            "at either end"
        )
    if round_trips(name):
        return None
    return (
        f"the name {name[:80]!r} is too long for a host: keep it to {MAX_PART_CHARS} letters, digits, "
        "'.', '+' or '-' (any other character counts as 3 or more)"
    )


def _configured_one(path: Path, name: str, entry: Any) -> Application:
    if not isinstance(entry, dict):
        raise _EntryError(f"hosts.{name} must be an object with a command, an adapter or a server")
    if (problem := name_problem(name)) is not None:
        raise _EntryError(f"hosts.{name[:80]}: {problem}")
    version = str(entry["version"]) if entry.get("version") is not None else None
    if "server" in entry:
        if "command" in entry or "adapter" in entry:
            raise _EntryError(f"hosts.{name} names a server, so it takes no command or adapter")
        return Application(
            name,
            name,
            kind=FOREIGN,
            takes_files=False,
            version=version,
            origin=str(path),
            server=_foreign_server(path, name, entry["server"]),
            summary=str(entry.get("summary") or "")[:200],
        )
    suffixes = _extensions(name, entry)
    adapter = entry.get("adapter")
    if adapter is not None:
        if not isinstance(adapter, str) or ":" not in adapter or "command" in entry:
            raise _EntryError(
                f'hosts.{name}.adapter must be "file.py:factory" or "module:factory" (and no command)'
            )
        file_part, _, attr = adapter.rpartition(":")
        if file_part.endswith(".py") and not Path(file_part).expanduser().is_absolute():
            adapter = f"{(path.parent / file_part).resolve()}:{attr}"  # relative to the file
        return Application(
            name, name, adapter=adapter, extensions=suffixes, version=version or "1.0", origin=str(path)
        )
    versions = entry.get("versions") or {}
    if not isinstance(versions, dict) or not all(isinstance(c, dict | None) for c in versions.values()):
        raise _EntryError(f'hosts.{name}.versions must map versions to {{"command": [...]}}')
    return Application(
        name,
        name,
        kind=COMMAND,
        command=_command(name, entry.get("command")),
        extensions=suffixes,
        version=version,
        versions={
            str(v): _command(f"{name}.versions.{v}", (c or {}).get("command")) for v, c in versions.items()
        },
        origin=str(path),
    )


def _unusable(path: Path, name: str, entry: Any, problem: str) -> Application:
    """A wrong entry as an application that cannot start: launching it (``cadmcp host NAME``)
    answers ``problem``; it keeps its name (and the extensions it names) so that neither a
    built-in of that name nor another host is started in its place."""
    kind = _kind_of(entry)
    try:
        suffixes = _extensions(name, entry) if isinstance(entry, dict) else ()
    except _EntryError:
        suffixes = ()
    return Application(
        name,
        name,
        kind=kind,
        takes_files=kind != FOREIGN,
        extensions=suffixes,
        origin=str(path),
        problem=problem,
    )


def entry_application(path: Path, name: str, entry: Any, *, warn: bool = True) -> Application:
    """The application one entry of the file at ``path`` declares; a wrong entry is one that cannot
    start, whose :attr:`Application.problem` says what to fix. Keys nothing reads are named (and,
    with ``warn``, logged) with the key that was probably meant."""
    notes = _unknown_in_entry(name, entry)
    try:
        app = _configured_one(path, name, entry)
    except _EntryError as exc:
        problem = "; ".join([str(exc), *notes])
        message = (
            f"The entry {name[:80]} of the host configuration {path} cannot be used: {problem}. The "
            f"other hosts work meanwhile. Fix it; for example:\n{example(path, name[:80], _kind_of(entry))}"
        )
        if warn:
            _warn_once(message)
        return _unusable(path, name, entry, message)
    for note in notes if warn else ():
        _warn_once(f"The host configuration {path}: {note}, so it is ignored.")
    return dataclasses.replace(app, ignored=tuple(notes)) if notes else app


def configured(path: Path | None = None, *, warn: bool = True) -> list[Application]:
    """Applications from the host configuration file (none without one). A file that cannot be
    read or parsed raises :class:`ConfigError` (:class:`UnreadableConfig`); a wrong entry is only
    itself unusable (see :func:`entry_application`)."""
    path = path or config_path()
    if path is None or (not path.exists() and CONFIG_ENV not in os.environ):
        return []
    if not path.exists() and path == config_path():  # named, not made yet: no host of one's own
        if warn:
            _warn_once(missing_config_note(path))
        return []
    return configured_from(path, read_config(path), warn=warn)


def missing_config_note(path: Path) -> str:
    """What to say of the configuration file `CADMCP_HOSTS_CONFIG` names when it does not exist."""
    return (
        f"{CONFIG_ENV} names {path}, which does not exist: no host of your own is configured and no "
        "policy rule of yours applies. `cadmcp host add NAME -- COMMAND ARGS...` creates it; or point "
        f"{CONFIG_ENV} at your file."
    )


def configured_from(path: Path, data: Any, *, warn: bool = True) -> list[Application]:
    """The applications of a configuration's content (``data``, read from ``path``)."""
    if not isinstance(data, dict):
        raise ConfigError(path, 'the top level needs a "hosts" table')
    for note in _unknown("", data, TOP_KEYS) if warn else ():
        _warn_once(f"The host configuration {path}: {note}, so it is ignored.")
    hosts = data.get("hosts")
    if hosts is None and (not data or "gateway" in data or "policy" in data):
        return []  # an empty file, or only the gateway or policy section (docs/machines.md, docs/policy.md)
    if not isinstance(hosts, dict):
        raise ConfigError(path, 'the top level needs a "hosts" table')
    return [entry_application(path, str(name), entry, warn=warn) for name, entry in hosts.items()]


def applications(path: Path | None = None) -> list[Application]:
    """Every application: the configured ones first, then the built-ins they do not replace."""
    mine = configured(path)
    names = {a.name.casefold() for a in mine}
    return mine + [a for a in BUILTIN if a.name.casefold() not in names]


def find(key: str, apps: Sequence[Application] | None = None) -> Application | None:
    """The application named ``key`` (its key or host app name, any case)."""
    wanted = key.casefold()
    for app in applications() if apps is None else apps:
        if wanted in (app.key.casefold(), app.name.casefold()):
            return app
    return None


def resolve(reference: str) -> Callable[..., Any]:
    """The callable a ``module:name`` or ``file.py:name`` reference names (imported now)."""
    target, _, attr = reference.rpartition(":")
    if target.endswith(".py"):
        file = Path(target).expanduser()
        name = f"cadmcp_application_{file.stem}"
        module = sys.modules.get(name)
        if module is None:
            spec = importlib.util.spec_from_file_location(name, file)
            if spec is None or spec.loader is None:
                raise ImportError(f"{file} is not a Python file that can be imported")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
    else:
        module = importlib.import_module(target)
    found = getattr(module, attr, None)
    if not callable(found):
        raise ImportError(f"{target} has no callable {attr!r}")
    return found

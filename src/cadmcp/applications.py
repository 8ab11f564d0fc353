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

Importing this module is cheap (the daemon does): adapters are named, never imported, here.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
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
    "applications",
    "config_path",
    "configured",
    "find",
    "parse_config_file",
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

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"

    def describe(self) -> str:
        """What the server is, for the host state and messages (never a header's value)."""
        if self.url:
            return self.url
        return " ".join([self.command or "", *self.args])[:300]


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

    def launch_command(self) -> tuple[str, ...]:
        """The command `launch_host` runs (before its slots are filled in)."""
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


class ConfigError(ValueError):
    """The host configuration file cannot be used; the message says what to fix."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(
            f"The host configuration {path} is invalid: {problem}. Fix it, e.g. "
            '{"hosts": {"MyCAD": {"command": ["mycad", "--cadmcp"], "extensions": [".abc"]}}}.'
        )
        self.path = path


def config_path() -> Path | None:
    """The host configuration file in use, if any."""
    override = os.environ.get(CONFIG_ENV)
    if override:
        return Path(override)
    folder = config_dir()
    return next((p for p in (folder / "hosts.toml", folder / "hosts.json") if p.is_file()), None)


def parse_config_file(path: Path) -> Any:
    """The configuration file's content: TOML for `.toml`, else JSON (OSError, ValueError)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".toml":
        import tomllib

        return tomllib.loads(text)
    return json.loads(text)


def _command(path: Path, name: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        import shlex

        value = shlex.split(value)
    if not isinstance(value, list) or not value or not all(isinstance(p, str) for p in value):
        raise ConfigError(path, f"hosts.{name}.command must be a non-empty list of strings")
    return tuple(value)


def _strings(path: Path, where: str, value: Any, kind: type) -> Any:
    if value is None:
        return kind()
    if kind is tuple:
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
    else:
        ok = isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
    if not ok or len(value) > MAX_CONFIG_ITEMS:
        shape = "a list of strings" if kind is tuple else 'an object of strings like {"K": "env:VAR"}'
        raise ConfigError(path, f"{where} must be {shape} (at most {MAX_CONFIG_ITEMS})")
    return tuple(value) if kind is tuple else {str(k): v for k, v in value.items()}


def _seconds(path: Path, where: str, value: Any, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.1 <= value <= 3600:
        raise ConfigError(path, f"{where} must be a number of seconds between 0.1 and 3600")
    return float(value)


def _foreign_server(path: Path, name: str, raw: Any) -> ForeignServer:
    where = f"hosts.{name}.server"
    if not isinstance(raw, dict):
        raise ConfigError(
            path, f'{where} must be an object: {{"command": "...", "args": [...]}} or {{"url": "..."}}'
        )
    command, url = raw.get("command"), raw.get("url")
    if (command is None) == (url is None):
        raise ConfigError(path, f"{where} needs exactly one of command (stdio) or url (streamable HTTP)")
    if command is not None and (not isinstance(command, str) or not command.strip()):
        raise ConfigError(path, f"{where}.command must be the program to run (put its arguments in args)")
    if url is not None and (not isinstance(url, str) or not url.startswith(("http://", "https://"))):
        raise ConfigError(path, f"{where}.url must be an http:// or https:// URL")
    cwd = raw.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise ConfigError(path, f"{where}.cwd must be a folder path")
    return ForeignServer(
        command=command,
        args=_strings(path, f"{where}.args", raw.get("args"), tuple),
        env=_strings(path, f"{where}.env", raw.get("env"), dict),
        cwd=str((path.parent / Path(cwd).expanduser()).resolve()) if cwd else None,
        url=url,
        headers=_strings(path, f"{where}.headers", raw.get("headers"), dict),
        call_timeout=_seconds(path, f"{where}.callTimeoutSeconds", raw.get("callTimeoutSeconds"), 120.0),
        connect_timeout=_seconds(
            path, f"{where}.connectTimeoutSeconds", raw.get("connectTimeoutSeconds"), 30.0
        ),
    )


def _configured_one(path: Path, name: str, entry: Any) -> Application:
    if not isinstance(entry, dict):
        raise ConfigError(path, f"hosts.{name} must be an object with a command")
    if "server" in entry:
        if "command" in entry or "adapter" in entry:
            raise ConfigError(path, f"hosts.{name} names a server, so it takes no command or adapter")
        version = str(entry["version"]) if entry.get("version") is not None else None
        return Application(
            str(name),
            str(name),
            kind=FOREIGN,
            takes_files=False,
            version=version,
            origin=str(path),
            server=_foreign_server(path, str(name), entry["server"]),
            summary=str(entry.get("summary") or "")[:200],
        )
    extensions = entry.get("extensions") or []
    if not isinstance(extensions, list) or not all(isinstance(e, str) for e in extensions):
        raise ConfigError(path, f'hosts.{name}.extensions must be a list like [".abc"]')
    suffixes = tuple("." + e.lower().lstrip(".") for e in extensions)
    version = str(entry["version"]) if entry.get("version") is not None else None
    adapter = entry.get("adapter")
    if adapter is not None:
        if not isinstance(adapter, str) or ":" not in adapter or "command" in entry:
            raise ConfigError(
                path, f'hosts.{name}.adapter must be "file.py:factory" or "module:factory" (and no command)'
            )
        file_part, _, attr = adapter.rpartition(":")
        if file_part.endswith(".py") and not Path(file_part).expanduser().is_absolute():
            adapter = f"{(path.parent / file_part).resolve()}:{attr}"  # relative to the file
        return Application(
            str(name),
            str(name),
            adapter=adapter,
            extensions=suffixes,
            version=version or "1.0",
            origin=str(path),
        )
    versions = entry.get("versions") or {}
    if not isinstance(versions, dict):
        raise ConfigError(path, f'hosts.{name}.versions must map versions to {{"command": [...]}}')
    return Application(
        str(name),
        str(name),
        kind=COMMAND,
        command=_command(path, name, entry.get("command")),
        extensions=suffixes,
        version=version,
        versions={
            str(v): _command(path, f"{name}.versions.{v}", (c or {}).get("command"))
            for v, c in versions.items()
        },
        origin=str(path),
    )


def configured(path: Path | None = None) -> list[Application]:
    """Applications from the host configuration file (none without one); :class:`ConfigError`."""
    path = path or config_path()
    if path is None or (not path.exists() and CONFIG_ENV not in os.environ):
        return []
    try:
        data = parse_config_file(path)
    except FileNotFoundError:
        raise ConfigError(path, "the file does not exist") from None
    except (OSError, ValueError) as exc:
        raise ConfigError(path, f"{type(exc).__name__}: {exc}") from None
    hosts = data.get("hosts") if isinstance(data, dict) else None
    if hosts is None and isinstance(data, dict) and ("gateway" in data or "policy" in data):
        return []  # a file with only the gateway or policy section (docs/machines.md, docs/policy.md)
    if not isinstance(hosts, dict):
        raise ConfigError(path, 'the top level needs a "hosts" object')
    return [_configured_one(path, str(name), entry) for name, entry in hosts.items()]


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

"""Importing one toolset module in isolation and finding its MCP servers.

Each module gets its own unique name (`_cadmcp_toolset_<stem>_<hash of its path>`), so two
toolsets may both have a `tools.py`. Its folder (and its PEP 723 dependency directory) is
on `sys.path` only while it loads, so it can import sibling helpers (`_helpers.py`) at
module level; those helpers are private to that load (taken out of `sys.modules` again),
so two toolsets may each have a `_common.py`. A dependency directory stays at the end of
`sys.path` afterwards, so imports made inside tools still find the packages.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer

from cadmcp.host.pyexec import ExecTimeout, time_limit
from cadmcp.host.scriptdeps import prepended_to_sys_path
from cadmcp.host.toolsets import deps

log = logging.getLogger("cadmcp.host.toolsets")

IMPORT_TIMEOUT_ENV = "CADMCP_TOOLSET_IMPORT_TIMEOUT"
DEFAULT_IMPORT_TIMEOUT = 30.0
"""Seconds a module's import may take before it is stopped and reported (a loop at module level)."""
MAX_TRACEBACK = 4000


@dataclass
class ModuleError:
    """Why a module did not load (or a tool in it failed): a short line plus the traceback."""

    kind: str  # "syntax", "import", "dependency", "no_server", "tool"
    message: str
    traceback: str = ""
    tool: str | None = None
    at: float = field(default_factory=time.time)

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind, "message": self.message}
        if self.tool:
            data["tool"] = self.tool
        if self.traceback:
            data["traceback"] = self.traceback
        data["at"] = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(self.at))
        return data


@dataclass
class LoadedModule:
    """The outcome of loading one toolset file."""

    file: Path
    module_name: str
    digest: str
    servers: list[tuple[str, MCPServer[Any] | Server[Any]]] = field(default_factory=list)
    dependencies: list[str] = field(default_factory=list)
    error: ModuleError | None = None
    helpers: list[str] = field(default_factory=list)
    """Modules imported from the toolset's own folder while it loaded (private to this load)."""

    @property
    def ok(self) -> bool:
        return self.error is None


def module_name_for(file: Path) -> str:
    """A module name unique to this file path."""
    digest = hashlib.sha1(str(file).encode()).hexdigest()[:10]
    stem = "".join(c if c.isalnum() else "_" for c in file.stem)
    return f"_cadmcp_toolset_{stem}_{digest}"


def source_digest(source: bytes) -> str:
    return hashlib.sha256(source).hexdigest()


def discover(path: Path) -> list[Path]:
    """The toolset module files of a toolset path: a `.py` file itself, or a folder's top-level
    `*.py` files not starting with `_`, in file name order."""
    if path.is_file():
        return [path] if path.suffix == ".py" else []
    if not path.is_dir():
        return []
    return sorted(
        (p for p in path.iterdir() if p.suffix == ".py" and not p.name.startswith("_") and p.is_file()),
        key=lambda p: p.name,
    )


def is_module_file(file: Path) -> bool:
    return file.suffix == ".py" and not file.name.startswith("_")


def unload(loaded: LoadedModule) -> None:
    """Forget a loaded module (its helpers were never left in `sys.modules`)."""
    sys.modules.pop(loaded.module_name, None)


def load(file: Path) -> LoadedModule:
    """Import `file` as a fresh module and collect its module-level servers. Never raises."""
    name = module_name_for(file)
    try:
        source = file.read_bytes()
    except OSError as exc:
        return LoadedModule(file, name, "", error=ModuleError("import", f"cannot read {file}: {exc}"))
    loaded = LoadedModule(file, name, source_digest(source))
    text = source.decode("utf-8", errors="replace")
    try:
        loaded.dependencies, dep_dir = deps.install(text)
    except deps.DependencyError as exc:
        loaded.error = ModuleError("dependency", f"{file.name}: {exc}")
        return loaded
    extra = [str(dep_dir)] if dep_dir is not None else []
    before = set(sys.modules)
    owned: list[str] = []
    limit = import_timeout()
    try:
        with (
            prepended_to_sys_path([str(file.parent), *extra]),
            _private_imports(file.parent, before | {name}) as owned,
            time_limit(limit, _in_folder(file.parent)),
        ):
            module = _exec(file, name)
    except ExecTimeout:
        loaded.error = ModuleError(
            "import_timeout",
            f"{file.name}: its import did not finish within {limit:g} s (a loop or a wait at module level), "
            f"so it was stopped and not loaded; do long work inside a tool ({IMPORT_TIMEOUT_ENV} sets the "
            "limit).",
        )
    except SyntaxError as exc:
        loaded.error = ModuleError("syntax", f"{file.name}:{exc.lineno}: {exc.msg}", _format(exc, file))
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        loaded.error = ModuleError("import", f"{file.name}: {type(exc).__name__}: {exc}", _format(exc, file))
    else:
        loaded.servers = servers_of(module)
        if not loaded.servers:
            loaded.error = ModuleError(
                "no_server",
                f'{file.name} defines no module-level MCPServer; add `server = MCPServer("name")` '
                "and decorate tools with @server.tool(), or prefix the file name with '_' if it is a helper.",
            )
    if extra and extra[0] not in sys.path:
        sys.path.append(extra[0])  # imports made later inside tools still find the packages
    loaded.helpers = owned
    if loaded.error is not None:
        unload(loaded)
    return loaded


def import_timeout() -> float:
    """Seconds a toolset module's import may take (``CADMCP_TOOLSET_IMPORT_TIMEOUT``, default 30)."""
    try:
        value = float(os.environ.get(IMPORT_TIMEOUT_ENV, "") or DEFAULT_IMPORT_TIMEOUT)
    except ValueError:
        return DEFAULT_IMPORT_TIMEOUT
    return value if value > 0 else DEFAULT_IMPORT_TIMEOUT


def _in_folder(folder: Path) -> Callable[[Any], bool]:
    """Whether a frame runs code of the toolset folder (or code it called): where a stop may land."""
    root = str(folder.resolve())

    def inside(frame: Any) -> bool:
        while frame is not None:
            if frame.f_code.co_filename.startswith(root):
                return True
            frame = frame.f_back
        return False

    return inside


def servers_of(module: ModuleType) -> list[tuple[str, MCPServer[Any] | Server[Any]]]:
    """Every module-level MCPServer and low-level Server (not the low-level half of an MCPServer)."""
    found: list[tuple[str, MCPServer[Any] | Server[Any]]] = []
    seen: set[int] = set()
    values = [(k, v) for k, v in vars(module).items() if isinstance(v, MCPServer | Server)]
    inner = {id(v._lowlevel_server) for _, v in values if isinstance(v, MCPServer)}
    for attr, value in values:
        if id(value) in seen or id(value) in inner:
            continue
        seen.add(id(value))
        found.append((attr, value))
    return found


def _exec(file: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


@contextmanager
def _private_imports(folder: Path, before: set[str]) -> Iterator[list[str]]:
    """Let a module import helpers from its own folder without sharing them with other toolsets.

    Entries of `sys.modules` that another folder's module would shadow (same top-level name
    as a file or package here) are hidden during the load; helpers imported from `folder`
    are taken out of `sys.modules` afterwards (the toolset module keeps its references).
    """
    local = {p.stem for p in folder.glob("*.py")} | {p.name for p in folder.iterdir() if p.is_dir()}
    hidden = {
        name: sys.modules.pop(name)
        for name in list(sys.modules)
        if name.split(".", 1)[0] in local and not _inside(sys.modules[name], folder)
    }
    owned: list[str] = []
    try:
        yield owned
    finally:
        for name in set(sys.modules) - before:
            if _inside(sys.modules.get(name), folder):
                sys.modules.pop(name, None)
                owned.append(name)
        owned.sort()
        for name, module in hidden.items():
            sys.modules.setdefault(name, module)


def _inside(module: ModuleType | None, folder: Path) -> bool:
    module_file = getattr(module, "__file__", None)
    if not module_file:
        return False
    try:
        return Path(module_file).resolve().is_relative_to(folder.resolve())
    except OSError:
        return False


def _format(exc: BaseException, file: Path) -> str:
    """The traceback from the toolset file's first frame on (the loader's frames say nothing)."""
    lines = traceback.format_exception(exc)
    text = "".join(lines)
    marker = f'File "{file}"'
    start = text.find(marker)
    if start > 0:
        text = "Traceback (most recent call last):\n  " + text[start:]
    return text[-MAX_TRACEBACK:]

"""Where toolsets are configured: `toolsets.json` files per host app and version.

Three scopes, read most specific first (that order is also the collision order):

    <config>/hosts/<HostApp>/<version>/toolsets.json   one version of one application
    <config>/hosts/<HostApp>/toolsets.json             every version of that application
    <config>/toolsets.json                             every host

`<config>` is `CADMCP_CONFIG_DIR` when set, else the user config directory
(`cadmcp.userdirs.config_dir()`). Each file is `{"toolsets": ["/abs/path", ...]}`.
Entries are absolute paths to a folder of toolset modules or to one `.py` file. A missing
path stays in the file and is reported when the host loads; only `remove` takes it out.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cadmcp.userdirs import config_dir

"""Environment variable that overrides the user config directory (tests isolate themselves this way)."""

REGISTRY_FILE = "toolsets.json"


class RegistryError(Exception):
    """A toolset path or registry file that cannot be used; the message says what to do next."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _check_part(kind: str, value: str) -> str:
    value = value.strip()
    if not value or value in {".", ".."} or any(sep in value for sep in ("/", "\\", "\0")):
        raise RegistryError(
            "invalid_scope",
            f"{kind} {value!r} is not a usable name; give a plain name such as 'DXF' or '1.0'.",
        )
    return value


@dataclass(frozen=True)
class Scope:
    """Which hosts a registry file applies to: one app version, every version of an app, or all."""

    host_app: str | None = None
    version: str | None = None

    def __post_init__(self) -> None:
        if self.version is not None and self.host_app is None:
            raise RegistryError(
                "invalid_scope", "--version needs --host: a version belongs to one application."
            )
        if self.host_app is not None:
            _check_part("host app", self.host_app)
        if self.version is not None:
            _check_part("version", self.version)

    @property
    def label(self) -> str:
        if self.host_app is None:
            return "all hosts"
        if self.version is None:
            return f"{self.host_app} (every version)"
        return f"{self.host_app} {self.version}"

    def file(self, root: Path | None = None) -> Path:
        base = root or config_dir()
        if self.host_app is None:
            return base / REGISTRY_FILE
        if self.version is None:
            return base / "hosts" / self.host_app / REGISTRY_FILE
        return base / "hosts" / self.host_app / self.version / REGISTRY_FILE


def scopes_for(host_app: str, version: str) -> list[Scope]:
    """The scopes a host reads, most specific first."""
    return [Scope(host_app, version), Scope(host_app), Scope()]


def normalize(path: str | os.PathLike[str]) -> Path:
    """An absolute, normalised toolset path; relative paths are refused (`~` is expanded)."""
    raw = os.fspath(path)
    if not raw.strip():
        raise RegistryError("empty_path", "The toolset path is empty; give the absolute path of a folder.")
    expanded = os.path.expanduser(raw)
    if not os.path.isabs(expanded):
        raise RegistryError(
            "relative_path",
            f"Toolset path {raw!r} is relative; give an absolute path, e.g. {os.path.abspath(expanded)}",
        )
    return Path(os.path.normpath(expanded))


class Registry:
    """One `toolsets.json` file: an ordered list of toolset paths."""

    def __init__(self, scope: Scope, root: Path | None = None) -> None:
        self.scope = scope
        self.file = scope.file(root)

    def entries(self) -> list[str]:
        """The paths as written in the file, in order (empty when the file does not exist)."""
        try:
            text = self.file.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise RegistryError("unreadable", f"Cannot read {self.file}: {exc}") from None
        try:
            data = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as exc:
            raise RegistryError(
                "malformed", f"{self.file} is not valid JSON ({exc}); fix it or delete the file."
            ) from None
        entries = data.get("toolsets", []) if isinstance(data, dict) else None
        if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
            raise RegistryError(
                "malformed",
                f'{self.file} must look like {{"toolsets": ["/abs/path", ...]}}; fix it or delete the file.',
            )
        return list(entries)

    def add(self, path: str | os.PathLike[str]) -> Path:
        """Append a toolset path (it must exist); returns the path as stored."""
        target = normalize(path)
        if not target.exists():
            raise RegistryError(
                "missing_path", f"Toolset path {target} does not exist; create it or check the spelling."
            )
        if not (target.is_dir() or target.suffix == ".py"):
            raise RegistryError(
                "not_a_toolset",
                f"{target} is neither a folder nor a .py file; give a folder of toolset modules.",
            )
        entries = self.entries()
        if str(target) in entries:
            raise RegistryError("duplicate", f"{target} is already registered for {self.scope.label}.")
        self._write([*entries, str(target)])
        return target

    def remove(self, path: str | os.PathLike[str]) -> Path:
        """Take a toolset path out (it need not exist any more)."""
        target = normalize(path)
        entries = self.entries()
        if str(target) not in entries:
            raise RegistryError(
                "not_registered",
                f"{target} is not registered for {self.scope.label}; 'cadmcp toolset list' shows what is.",
            )
        self._write([e for e in entries if e != str(target)])
        return target

    def _write(self, entries: list[str]) -> None:
        self.file.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"toolsets": entries}, indent=2) + "\n"
        fd, tmp = tempfile.mkstemp(dir=self.file.parent, prefix=".toolsets.", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, self.file)


TOOLSETS_ENV = "CADMCP_TOOLSETS"
"""Extra toolset paths for one run (os.pathsep-separated absolute paths), after the registry's."""


@dataclass(frozen=True)
class ToolsetSource:
    """One configured toolset path and where it was configured; `error` when it is unusable."""

    raw: str
    origin: str
    path: Path | None = None
    error: RegistryError | None = None


def configured_sources(
    host_app: str, version: str, extra: tuple[str, ...] | list[str] = (), *, root: Path | None = None
) -> list[ToolsetSource]:
    """Every toolset path a host should load, in collision order.

    The registry files (most specific scope first, each in file order), then
    `CADMCP_TOOLSETS`, then `extra` (`--toolset`, relative to the working directory).
    Problems become sources with an `error` so they can be reported, never dropped.
    """
    sources: list[ToolsetSource] = []
    for scope in scopes_for(host_app, version):
        registry = Registry(scope, root)
        try:
            entries = registry.entries()
        except RegistryError as exc:
            sources.append(ToolsetSource(str(registry.file), f"registry {registry.file}", error=exc))
            continue
        sources.extend(_source(e, f"registry {registry.file}") for e in entries)
    for raw in filter(None, os.environ.get(TOOLSETS_ENV, "").split(os.pathsep)):
        sources.append(_source(raw, TOOLSETS_ENV))
    for raw in extra:
        sources.append(_source(os.path.abspath(os.path.expanduser(raw)), "--toolset"))
    return sources


def _source(raw: str, origin: str) -> ToolsetSource:
    try:
        path = normalize(raw)
    except RegistryError as exc:
        return ToolsetSource(raw, origin, error=exc)
    if not path.exists():
        error = RegistryError(
            "missing_path",
            f"Toolset path {path} ({origin}) does not exist; create it, or take it out with "
            "'cadmcp toolset remove'.",
        )
        return ToolsetSource(raw, origin, path, error)
    return ToolsetSource(raw, origin, path)

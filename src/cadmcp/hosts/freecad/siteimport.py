"""Make cadmcp's host runtime importable inside another interpreter (FreeCAD's), and nothing else.

FreeCAD embeds its own Python (Debian: /usr/bin/python3.11) with its own libraries (numpy,
PySide2, matplotlib...). cadmcp lives in its own environment. Putting that environment's whole
``site-packages`` on FreeCAD's ``sys.path`` would shadow FreeCAD's numpy with another one and
break FreeCAD's own modules. Instead, :func:`install` adds one import finder that serves, from
cadmcp's environment, exactly cadmcp and the distributions its host runtime needs (the
requirement closure of :data:`RUNTIME_REQUIREMENTS`: mcp, pydantic, anyio...); every other
import resolves in FreeCAD's interpreter as before. ``importlib.metadata`` sees those
distributions too.

Compiled parts of those libraries (pydantic-core, watchfiles, rpds) load only in the Python
version they were built for: :func:`check` says exactly what to do when the versions differ.

Standard library only: this module is loaded by file path before anything else of cadmcp
can be imported (by ``bootstrap.py`` and by the FreeCAD macro).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.metadata
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "PATHS_ENV",
    "REQUEST_ENV",
    "RUNTIME_REQUIREMENTS",
    "RuntimeFinder",
    "VersionMismatch",
    "check",
    "env_python_version",
    "install",
    "plan",
]

PATHS_ENV = "CADMCP_FREECAD_PATHS"
"""JSON given to FreeCAD by the launcher: {"cadmcp": package dir, "site": [dirs], "python": "3.11"}."""
REQUEST_ENV = "CADMCP_FREECAD_REQUEST"
"""JSON given to FreeCAD by the launcher: {"files": [...], "exec_timeout": s, "toolsets": [...]}."""
RUNTIME_REQUIREMENTS = ("mcp", "anyio", "platformdirs", "watchfiles", "uv", "typing-extensions")
"""What the host runtime and the built-in surface import; their dependencies come along."""
_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?")
_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")
_PY = re.compile(r"python(\d+)\.(\d+)")


class VersionMismatch(RuntimeError):
    """cadmcp's environment was made for another Python than the one running now."""


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass
class Dist:
    """One installed distribution: its metadata folder, requirements and top-level import names."""

    name: str
    info: Path
    requires: list[str] = field(default_factory=list)
    """Unconditional requirements (normalised names)."""
    optional: list[str] = field(default_factory=list)
    """Requirements behind an environment marker (platform, Python version): taken when installed."""
    extras: dict[str, list[str]] = field(default_factory=dict)
    """Requirements of each optional feature (``pyjwt[crypto]`` asks for pyjwt's ``crypto``)."""
    tops: set[str] = field(default_factory=set)


def _read_dist(info: Path) -> Dist | None:
    try:
        metadata = (info / "METADATA").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    name = ""
    requires: list[str] = []
    optional: list[str] = []
    extras: dict[str, list[str]] = {}
    for line in metadata.splitlines():
        if not line.strip():
            break  # the headers end at the first blank line
        if line.startswith("Name:"):
            name = line.split(":", 1)[1].strip()
        elif line.startswith("Requires-Dist:"):
            spec = line.split(":", 1)[1]
            marker = spec.split(";", 1)[1] if ";" in spec else ""
            match = _NAME.match(spec)
            if not match:
                continue
            required = normalise(match.group(1)) + (f"[{match.group(2)}]" if match.group(2) else "")
            extra = _EXTRA.search(marker)
            if extra:  # an optional feature: taken only when a requirement asks for it
                extras.setdefault(normalise(extra.group(1)), []).append(required)
            else:
                (optional if marker.strip() else requires).append(required)
    if not name:
        return None
    return Dist(normalise(name), info, requires, optional, extras, _top_level(info))


def _top_level(info: Path) -> set[str]:
    tops: set[str] = set()
    try:
        text = (info / "top_level.txt").read_text(encoding="utf-8")
        tops.update(line.strip() for line in text.splitlines() if line.strip())
    except OSError:
        pass
    try:
        record = (info / "RECORD").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return tops
    for line in record.splitlines():
        path = line.split(",", 1)[0].strip().strip('"')
        first = path.split("/", 1)[0]
        if not first or first.startswith("..") or first.endswith((".dist-info", ".data", ".pth")):
            continue
        if first == "__pycache__" or first.startswith("__editable__"):
            continue
        if "/" in path:
            tops.add(first)
        elif first.endswith(".py"):
            tops.add(first[:-3])
        elif first.endswith((".so", ".pyd")):
            tops.add(first.split(".", 1)[0])
    return tops


def scan(site_dirs: Iterable[Path]) -> dict[str, Dist]:
    """Every distribution installed in ``site_dirs`` (first one wins), by normalised name."""
    found: dict[str, Dist] = {}
    for site in site_dirs:
        try:
            entries = sorted(Path(site).glob("*.dist-info"))
        except OSError:
            continue
        for info in entries:
            dist = _read_dist(info)
            if dist is not None and dist.name not in found:
                found[dist.name] = dist
    return found


@dataclass
class Plan:
    """What the finder serves: import names to folders, and distributions by name."""

    modules: dict[str, Path]
    dists: dict[str, Dist]
    missing: list[str]


def plan(cadmcp_dir: Path, site_dirs: Iterable[Path], roots: Iterable[str] = RUNTIME_REQUIREMENTS) -> Plan:
    """The closure of ``roots`` found in ``site_dirs`` plus the cadmcp package at ``cadmcp_dir``."""
    sites = [Path(s) for s in site_dirs]
    available = scan(sites)
    wanted: dict[str, Dist] = {}
    missing: list[str] = []
    stack = [(normalise(r), True) for r in roots]
    seen: set[str] = set()
    while stack:
        spec, needed = stack.pop()
        if spec in seen:
            continue
        seen.add(spec)
        name, _, features = spec.partition("[")
        dist = available.get(name)
        if dist is None:
            if needed:
                missing.append(name)
            continue
        if name not in wanted:
            wanted[name] = dist
            stack.extend((r, True) for r in dist.requires)
            stack.extend((r, False) for r in dist.optional)
        for feature in filter(None, (normalise(f) for f in features.rstrip("]").split(","))):
            stack.extend((r, needed) for r in dist.extras.get(feature, []))
    modules: dict[str, Path] = {}
    for dist in wanted.values():
        for top in dist.tops:
            modules.setdefault(top, dist.info.parent)
    modules["cadmcp"] = Path(cadmcp_dir).resolve().parent
    return Plan(modules, wanted, sorted(set(missing)))


class RuntimeFinder(importlib.abc.MetaPathFinder):
    """Finds cadmcp and its runtime libraries in cadmcp's environment; declines everything else."""

    def __init__(self, chosen: Plan) -> None:
        self.plan = chosen

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> object:
        if path is not None:
            return None  # submodules are found through their package's own __path__
        folder = self.plan.modules.get(fullname)
        if folder is None:
            return None
        return importlib.machinery.PathFinder.find_spec(fullname, [str(folder)])

    def find_distributions(
        self, context: importlib.metadata.DistributionFinder.Context | None = None
    ) -> Iterator[importlib.metadata.Distribution]:
        name = getattr(context, "name", None)
        dists = self.plan.dists.values() if name is None else [self.plan.dists.get(normalise(name))]
        for dist in dists:
            if dist is not None:
                yield importlib.metadata.PathDistribution(dist.info)


def env_python_version(site_dirs: Iterable[Path]) -> tuple[int, int] | None:
    """The Python version cadmcp's environment was made for, from its ``lib/pythonX.Y`` folder."""
    for site in site_dirs:
        match = _PY.search(str(site))
        if match:
            return int(match.group(1)), int(match.group(2))
    return None


def check(site_dirs: Iterable[Path], running: tuple[int, int] | None = None) -> None:
    """Raise :class:`VersionMismatch` with exact instructions when the versions differ."""
    sites = [Path(s) for s in site_dirs]
    made_for = env_python_version(sites)
    running = running or (sys.version_info.major, sys.version_info.minor)
    if made_for is None or made_for == running:
        return
    want = f"{running[0]}.{running[1]}"
    have = f"{made_for[0]}.{made_for[1]}"
    raise VersionMismatch(
        f"cadmcp is installed for Python {have} ({sites[0]}), but this FreeCAD runs Python {want} "
        f"({sys.prefix}). Their compiled libraries (pydantic-core, watchfiles) cannot be shared. Make a "
        f"cadmcp environment with Python {want} and use it for FreeCAD:\n    python{want} -m venv "
        "~/.local/share/cadmcp/freecad-env\n    ~/.local/share/cadmcp/freecad-env/bin/pip install cadmcp\n  "
        "  ~/.local/share/cadmcp/freecad-env/bin/cadmcp freecad install\n(or with uv: uv venv --python "
        f"{want} ~/.local/share/cadmcp/freecad-env && uv pip install --python "
        "~/.local/share/cadmcp/freecad-env cadmcp). See docs/hosts/freecad.md."
    )


def install(cadmcp_dir: Path, site_dirs: Iterable[Path]) -> RuntimeFinder:
    """Check the Python version and put a :class:`RuntimeFinder` first on ``sys.meta_path``.

    Idempotent: a finder installed earlier is replaced. Raises :class:`VersionMismatch`, or
    ``ImportError`` naming what cadmcp's environment lacks.
    """
    sites = [Path(s) for s in site_dirs]
    check(sites)
    chosen = plan(Path(cadmcp_dir), sites)
    if chosen.missing:
        raise ImportError(
            f"cadmcp's environment ({', '.join(map(str, sites))}) lacks {', '.join(chosen.missing)}. "
            "Reinstall cadmcp there (pip install --force-reinstall cadmcp)."
        )
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, RuntimeFinder)]
    finder = RuntimeFinder(chosen)
    sys.meta_path.insert(0, finder)
    return finder

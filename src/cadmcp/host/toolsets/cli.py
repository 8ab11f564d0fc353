"""`cadmcp toolset add|remove|list [PATH] [--host APP [--version V]]`: edit the toolset registry.

Without `--host` the path applies to every host; with `--host` alone to every version of
that application; with both to that one version. `list` without `--host` shows every
registry file found.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from cadmcp.host.toolsets.loader import discover
from cadmcp.host.toolsets.registry import REGISTRY_FILE, Registry, RegistryError, Scope
from cadmcp.userdirs import config_dir


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cadmcp toolset", description="Register folders of Python toolsets for cadmcp hosts."
    )
    sub = parser.add_subparsers(dest="action", required=True)
    for action, text in (
        ("add", "register a toolset folder (or .py file) by absolute path"),
        ("remove", "unregister a toolset path (it need not exist any more)"),
    ):
        cmd = sub.add_parser(action, help=text)
        cmd.add_argument("path", help="absolute path of a folder of toolset modules, or one .py file")
        _scope_args(cmd)
    ls = sub.add_parser("list", help="show registered toolset paths and whether they exist")
    _scope_args(ls)
    ls.add_argument("--json", action="store_true", help="print JSON instead of text")
    return parser


def _scope_args(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("--host", dest="host_app", default=None, help="host app, e.g. DXF or IFC (default: all)")
    cmd.add_argument("--version", default=None, help="host version (default: every version of --host)")


def _registries(scope: Scope, explicit: bool) -> list[Registry]:
    """The registry files `list` shows: the scope's chain, or every file under the config dir."""
    if explicit:
        chain = [scope]
        if scope.host_app is not None:
            chain += [Scope(scope.host_app)] if scope.version is not None else []
            chain += [Scope()]
        return [Registry(s) for s in chain]
    found = [Registry(Scope())]
    hosts = config_dir() / "hosts"
    for file in sorted(hosts.glob(f"*/{REGISTRY_FILE}")) + sorted(hosts.glob(f"*/*/{REGISTRY_FILE}")):
        rel = file.relative_to(hosts).parts
        found.append(Registry(Scope(rel[0], rel[1] if len(rel) == 3 else None)))
    return found


def _describe(path: str) -> dict[str, object]:
    target = Path(path)
    if not target.is_absolute():
        return {"path": path, "status": "relative", "modules": []}
    if not target.exists():
        return {"path": path, "status": "missing", "modules": []}
    return {"path": path, "status": "ok", "modules": [p.name for p in discover(target)]}


def _list(scope: Scope, explicit: bool, as_json: bool) -> int:
    rows = []
    status = 0
    for registry in _registries(scope, explicit):
        try:
            entries = [_describe(e) for e in registry.entries()]
        except RegistryError as exc:
            rows.append({"scope": registry.scope.label, "file": str(registry.file), "error": exc.message})
            status = 1
            continue
        if entries or explicit:
            rows.append({"scope": registry.scope.label, "file": str(registry.file), "toolsets": entries})
    if as_json:
        print(json.dumps(rows, indent=2))
        return status
    if not rows:
        print(f"No toolsets registered (config directory {config_dir()}).")
    for row in rows:
        print(f"{row['scope']}: {row['file']}")
        if "error" in row:
            print(f"  error: {row['error']}")
        for entry in row.get("toolsets", []):
            modules = entry["modules"]
            detail = {
                "missing": "MISSING (remove it with 'cadmcp toolset remove')",
                "relative": "RELATIVE (edit the file: paths must be absolute)",
            }.get(str(entry["status"]), f"{len(modules)} module(s)")  # type: ignore[arg-type]
            print(f"  {entry['path']}  {detail}")
        if not row.get("toolsets") and "error" not in row:
            print("  (none)")
    return status


def _known_apps() -> dict[str, str]:
    """The host app names the built-in hosts and the host configuration give, by their casefold."""
    from cadmcp import applications

    try:
        apps = [*applications.BUILTIN, *applications.configured(warn=False)]
    except applications.ConfigError:
        apps = list(applications.BUILTIN)
    return {a.name.casefold(): a.name for a in apps}


def main(argv: Sequence[str] | None = None) -> int:
    """Run `cadmcp toolset ...`; returns the exit code (2 for a usage problem)."""
    args = _parser().parse_args(list(argv) if argv is not None else None)
    known = _known_apps() if args.host_app is not None else {}
    if args.host_app is not None:  # "dxf" is the DXF host's: a registry under "dxf" no host reads
        args.host_app = known.get(args.host_app.casefold(), args.host_app)
    try:
        scope = Scope(args.host_app, args.version)
        if args.action == "list":
            return _list(scope, args.host_app is not None, args.json)
        registry = Registry(scope)
        if args.action == "add":
            path = registry.add(args.path)
            modules = discover(path)
            print(f"Added {path} for {scope.label} ({len(modules)} module(s)); file {registry.file}.")
            if not modules:
                print("Note: no toolset modules yet (top-level *.py files not starting with '_').")
            if known and args.host_app.casefold() not in known:
                listed = ", ".join(sorted(known))
                print(
                    f"Note: no host app is called {args.host_app!r} here (known: {listed}); the toolset "
                    "loads only in a host of that name."
                )
            print("Running hosts pick it up on restart; edits inside it reload live.")
        else:
            path = registry.remove(args.path)
            print(f"Removed {path} for {scope.label}; file {registry.file}.")
        return 0
    except RegistryError as exc:
        print(f"cadmcp toolset {args.action}: {exc.message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

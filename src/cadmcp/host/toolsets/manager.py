"""The toolset manager: loads configured toolsets into a host's catalog and keeps them fresh.

    manager = load_toolsets(runtime)   # on the application thread, after adding built-ins

Collision rule (one rule, always reported in `cadmcp://toolsets` and the host log): built-in
capabilities win; between toolsets, the earlier path wins (registry order: this version's
`toolsets.json`, then the app's, then the global one, then `CADMCP_TOOLSETS`, then
`--toolset`), and within one path the module whose file name sorts first wins.

Loading runs on the application thread; the watcher thread only posts reload jobs there.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer

from cadmcp.host.catalog import CatalogStore, Conflict
from cadmcp.host.providers import Provider
from cadmcp.host.runtime import HostRuntime
from cadmcp.host.toolsets import loader
from cadmcp.host.toolsets.failures import FailureLog, watch_tools
from cadmcp.host.toolsets.registry import ToolsetSource, configured_sources
from cadmcp.host.toolsets.watcher import ToolsetWatcher
from cadmcp.wire.jsonwire import dumps

log = logging.getLogger("cadmcp.host.toolsets")

BASE_PRIORITY = 1000
"""Toolset providers rank after every built-in (built-ins use priority 0)."""

REPORT_URI = "cadmcp://toolsets"
COLLISION_RULE = (
    "Built-in capabilities win. Between toolsets the earlier path wins (this version's toolsets.json, "
    "then the app's, then the global one, then CADMCP_TOOLSETS, then --toolset; each in file order), "
    "and within one path the module whose file name sorts first."
)


@dataclass(eq=False)
class _Module:
    loaded: loader.LoadedModule
    failures: FailureLog
    providers: list[Provider] = field(default_factory=list)
    unserved_prompts: list[str] = field(default_factory=list)
    """Prompts its servers declare: cadmcp serves a toolset's tools, resources and templates only."""


@dataclass(eq=False)
class _Toolset:
    source: ToolsetSource
    index: int
    modules: dict[Path, _Module] = field(default_factory=dict)

    @property
    def folder(self) -> Path | None:
        path = self.source.path
        if path is None or self.source.error is not None:
            return None
        return path if path.is_dir() else path.parent

    def owns(self, file: Path) -> bool:
        """Whether `file` is one of this toolset's module files (present or not)."""
        path = self.source.path
        if path is None or self.source.error is not None:
            return False
        if path.suffix == ".py" and not path.is_dir():
            return file == path
        return file.parent == path and loader.is_module_file(file)

    def contains(self, file: Path) -> bool:
        """Whether `file` lies under this toolset's folder (a helper module, say)."""
        path = self.source.path
        return path is not None and self.source.error is None and path.is_dir() and file.is_relative_to(path)


class ToolsetManager:
    """Every configured toolset of one host: loaded modules, their providers, errors, conflicts."""

    def __init__(self, runtime: HostRuntime, sources: Sequence[ToolsetSource]) -> None:
        self.runtime = runtime
        self.toolsets = [_Toolset(source, i) for i, source in enumerate(sources)]
        self._lock = threading.Lock()
        self._watcher: ToolsetWatcher | None = None
        self._reported: set[Conflict] = set()
        self.reloads = 0
        for ts in self.toolsets:
            if ts.source.error is not None:
                log.error("toolset %s: %s", ts.source.raw, ts.source.error.message)

    # -- loading (application thread) ---------------------------------------------------------
    def load_all(self) -> None:
        """Load every module of every usable toolset path."""
        self._apply({ts: {f: True for f in self._module_files(ts)} for ts in self.toolsets})

    def apply_changes(self, files: set[Path]) -> None:
        """Reload what the changed `.py` files affect: the module itself, or (for a helper) its
        whole toolset; deleted modules are unloaded, new ones loaded."""
        plan: dict[_Toolset, dict[Path, bool]] = {}
        for file in files:
            for ts in self.toolsets:
                if ts.owns(file):
                    plan.setdefault(ts, {})[file] = False
                elif ts.contains(file):
                    known = set(ts.modules) | set(self._module_files(ts))
                    plan.setdefault(ts, {}).update({f: True for f in known})
        if plan:
            self._apply(plan)

    def _module_files(self, ts: _Toolset) -> list[Path]:
        if ts.source.path is None or ts.source.error is not None:
            return []
        return loader.discover(ts.source.path)

    def _apply(self, plan: dict[_Toolset, dict[Path, bool]]) -> None:
        """Load, reload (`True` forces it) or unload files, then update the catalog once."""
        removed: list[Provider] = []
        added: list[Provider] = []
        for ts in sorted(plan, key=lambda t: t.index):
            for file, force in sorted(plan[ts].items()):
                old = ts.modules.get(file)
                shadow = self._owner_before(ts, file)
                if not file.is_file() or shadow is not None:
                    if shadow is not None:
                        log.warning("toolset %s: %s is already loaded from %s", ts.source.raw, file, shadow)
                    if old is not None:
                        with self._lock:
                            del ts.modules[file]
                        loader.unload(old.loaded)
                        removed.extend(old.providers)
                        log.info("toolset %s: unloaded %s", ts.source.raw, file.name)
                    continue
                timed_out = (
                    old is not None
                    and old.loaded.error is not None
                    and old.loaded.error.kind == "import_timeout"
                )  # its import held the application thread for the whole limit: not again, unchanged
                if old is not None and not force and (old.loaded.ok or timed_out):
                    try:
                        if loader.source_digest(file.read_bytes()) == old.loaded.digest:
                            continue  # touched, not changed
                    except OSError:
                        pass
                if old is not None:
                    loader.unload(old.loaded)
                    removed.extend(old.providers)
                module = self._load(ts, file)
                with self._lock:
                    ts.modules[file] = module
                added.extend(module.providers)
        failed = sorted(
            f.name for ts in self.toolsets for f, m in ts.modules.items() if m.loaded.error is not None
        )  # in the host state: an agent whose id went stale learns a module failed to load
        self.runtime.update_state(toolsetLoadErrors=failed[:10] or None)  # a module serving nothing
        if not removed and not added:  # broke, or was fixed or deleted, changes no catalog but this
            return
        self._rank()
        for provider in removed:
            self.runtime.catalog.remove(provider)
        for provider in added:
            self.runtime.catalog.add(provider)
        self.reloads += 1
        self.runtime.catalog_changed()
        self._log_conflicts()

    def _owner_before(self, ts: _Toolset, file: Path) -> str | None:
        """The earlier toolset path that already serves this very file, if any."""
        for other in self.toolsets:
            if other.index >= ts.index:
                return None
            if file in other.modules:
                return other.source.raw
        return None

    def _load(self, ts: _Toolset, file: Path) -> _Module:
        started = time.perf_counter()
        loaded = loader.load(file)
        module = _Module(loaded, FailureLog(f"{ts.source.raw} {file.name}"))
        if loaded.error is not None:
            log.error(
                "toolset %s: %s not loaded: %s\n%s",
                ts.source.raw,
                file.name,
                loaded.error.message,
                loaded.error.traceback,
            )
            return module
        several = len(loaded.servers) > 1
        for attr, server in loaded.servers:
            watch_tools(server, module.failures)
            origin = f"toolset {file}" + (f":{attr}" if several else "")
            name = getattr(server, "name", None) or attr
            provider = Provider(name, server, origin, BASE_PRIORITY)
            module.providers.append(provider)
            module.unserved_prompts += _prompts_of(server)
        if module.unserved_prompts:
            log.warning(
                "toolset %s: %s declares prompts, which toolsets do not serve: %s",
                ts.source.raw,
                file.name,
                ", ".join(module.unserved_prompts),
            )
        log.info(
            "toolset %s: loaded %s (%s) in %.0f ms",
            ts.source.raw,
            file.name,
            ", ".join(p.name for p in module.providers),
            (time.perf_counter() - started) * 1000,
        )
        return module

    def _rank(self) -> None:
        """Give every toolset provider its priority from the collision rule."""
        rank = 0
        for ts in self.toolsets:
            for file in sorted(ts.modules, key=lambda f: f.name):
                for provider in ts.modules[file].providers:
                    provider.priority = BASE_PRIORITY + rank
                    rank += 1

    def _log_conflicts(self) -> None:
        conflicts = set(offline_conflicts(self.runtime.catalog.providers))
        for c in sorted(conflicts - self._reported, key=lambda c: (c.kind, c.name)):
            log.warning(
                "name collision: %s %r is served by %s; the one from %s is hidden (%s)",
                c.kind,
                c.name,
                c.served_by,
                c.shadowed,
                COLLISION_RULE,
            )
        self._reported = conflicts

    # -- watching ------------------------------------------------------------------------------
    def start_watching(self) -> None:
        """Reload toolset modules when their files change (watchfiles on a background thread)."""
        roots = [ts.folder for ts in self.toolsets if ts.folder is not None]
        self._watcher = ToolsetWatcher([r for r in roots if r is not None], self._post_changes)
        self._watcher.start()

    def _post_changes(self, files: set[Path]) -> None:
        def job() -> None:
            try:
                self.apply_changes(files)
            except Exception:  # never break the application thread
                log.exception("toolset reload failed")

        self.runtime.app_thread.post(job)

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()

    # -- reporting -----------------------------------------------------------------------------
    def state(self) -> list[dict[str, Any]]:
        """Toolset paths, modules, servers and errors as plain JSON data (any thread)."""
        out: list[dict[str, Any]] = []
        with self._lock:
            for ts in self.toolsets:
                entry: dict[str, Any] = {
                    "path": str(ts.source.path) if ts.source.path else ts.source.raw,
                    "source": ts.source.origin,
                    "status": "error" if ts.source.error else "ok",
                    "modules": [],
                }
                if ts.source.error is not None:
                    entry["error"] = {"code": ts.source.error.code, "message": ts.source.error.message}
                elif ts.source.path is not None and not ts.source.path.exists():  # gone while serving
                    entry["status"] = "error"
                    entry["error"] = {
                        "code": "missing_path",
                        "message": f"Toolset path {ts.source.path} no longer exists (it was moved or "
                        "deleted while the host ran). Put it back and restart the host, or remove it "
                        "with `cadmcp toolset remove`.",
                    }
                for file in sorted(ts.modules, key=lambda f: f.name):
                    entry["modules"].append(_module_state(ts.modules[file]))
                out.append(entry)
        return out

    async def report(self) -> dict[str, Any]:
        """The `cadmcp://toolsets` document: state plus what the live catalog serves and hides."""
        snap = await self.runtime.catalog.snapshot()
        with self._lock:
            origins = {
                id(p): p.origin for ts in self.toolsets for m in ts.modules.values() for p in m.providers
            }
        served: dict[str, dict[str, list[str]]] = {}
        for kind, owners in (("tools", snap.tool_owner), ("resources", snap.resource_owner)):
            for name, provider in owners.items():
                if id(provider) in origins:
                    served.setdefault(provider.origin, {}).setdefault(kind, []).append(name)
        for template, provider in snap.template_owner:
            if id(provider) in origins:
                served.setdefault(provider.origin, {}).setdefault("resourceTemplates", []).append(
                    str(template)
                )
        for c in snap.conflicts:
            if c.shadowed in origins.values():
                served.setdefault(c.shadowed, {}).setdefault("hidden", []).append(f"{c.kind} {c.name}")
        toolsets = self.state()
        errors: list[dict[str, Any]] = []
        for ts in toolsets:
            if "error" in ts:
                errors.append({"path": ts["path"], **ts["error"]})
            for module in ts["modules"]:
                for server in module["servers"]:
                    server.update(served.get(server["origin"], {}))
                for err in [module.get("error"), *module["toolErrors"]]:
                    if err:
                        errors.append({"path": ts["path"], "file": module["file"], **err})
        toolset_origins = set(origins.values())
        conflicts = [
            {"kind": c.kind, "name": c.name, "servedBy": c.served_by, "shadowed": c.shadowed}
            for c in snap.conflicts
            if c.shadowed in toolset_origins or c.served_by in toolset_origins
        ]
        return {
            "host": {"app": self.runtime.host_app, "version": self.runtime.version},
            "collisionRule": COLLISION_RULE,
            "toolsets": toolsets,
            "conflicts": conflicts,
            "errors": errors,
            "reloads": self.reloads,
        }

    def report_server(self) -> MCPServer[Any]:
        """A small built-in server with the `cadmcp://toolsets` resource."""
        server: MCPServer[Any] = MCPServer("toolsets")

        @server.resource(
            REPORT_URI,
            name="toolsets",
            mime_type="application/json",
            description=(
                "Python toolsets loaded into this host: each toolset path, its modules, servers, tools, "
                "load and tool errors (with tracebacks), and name collisions with the rule that settled them."
            ),
            meta={"io.cadmcp/keywords": ["toolsets", "plugins", "extensions", "load errors", "collisions"]},
        )
        async def toolsets_report() -> str:
            return dumps(await self.report())

        return server


def _module_state(module: _Module) -> dict[str, Any]:
    loaded = module.loaded
    data: dict[str, Any] = {
        "file": str(loaded.file),
        "module": loaded.module_name,
        "status": "loaded" if loaded.ok else "error",
        "dependencies": loaded.dependencies,
        "servers": [
            {"name": p.name, "attribute": attr, "origin": p.origin, "priority": p.priority}
            for p, (attr, _) in zip(module.providers, loaded.servers, strict=False)
        ],
        "toolErrors": [e.as_json() for e in module.failures.items],
    }
    if loaded.error is not None:
        data["error"] = loaded.error.as_json()
    elif module.unserved_prompts:
        data["error"] = {
            "kind": "prompts_not_served",
            "message": f"{loaded.file.name} declares prompts ({', '.join(module.unserved_prompts[:10])}), "
            "which a toolset does not serve: cadmcp serves its tools, resources and resource templates "
            "(the agent reaches prompts through the host's own)",
        }
    return data


def _prompts_of(server: Any) -> list[str]:
    manager = getattr(server, "_prompt_manager", None)
    try:
        return [prompt.name for prompt in manager.list_prompts()] if manager is not None else []
    except Exception:
        return []


def offline_conflicts(providers: Sequence[Provider]) -> list[Conflict]:
    """Name collisions among `providers`, merged outside the live catalog (no cache touched).

    Low-level servers list nothing without a request context, so their clashes show only in
    the live report.
    """
    result: list[Conflict] = []

    def run() -> None:
        store = CatalogStore()
        for provider in providers:
            store.add(provider)
        result.extend(asyncio.run(store.snapshot()).conflicts)

    thread = threading.Thread(target=run, name="cadmcp-toolset-conflicts")
    thread.start()
    thread.join()
    return result


def load_toolsets(
    runtime: HostRuntime, extra: Sequence[str] = (), *, watch: bool = True, root: Path | None = None
) -> ToolsetManager:
    """Load the toolsets configured for this host and serve `cadmcp://toolsets`.

    Call on the application thread (or, before `runtime.run()`, on the thread that will
    run it), after adding the built-ins. `extra` are one-run paths (`--toolset`); `root`
    overrides the config directory. With `watch`, edits reload modules while the host runs.
    """
    sources = configured_sources(runtime.host_app, runtime.version, list(extra), root=root)
    manager = ToolsetManager(runtime, sources)
    runtime.add_server(manager.report_server(), origin="builtin", name="toolsets")
    manager.load_all()
    if watch:
        manager.start_watching()
    return manager

"""The machines-and-hosts panel: what the daemon's host directory already knows, shaped for the page."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cadmcp import __version__
from cadmcp.daemon import machines
from cadmcp.wire.meta import ALIASES

if TYPE_CHECKING:
    from cadmcp.daemon.gateway import Gateway
    from cadmcp.daemon.hosts import HostDirectory

_BOOT: float | None = None


def started_at(pid: int) -> float | None:
    """When process `pid` started (Linux /proc), as a Unix time; None where that cannot be told."""
    global _BOOT
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        ticks = int(stat.rsplit(")", 1)[1].split()[19])
        if _BOOT is None:
            for line in Path("/proc/stat").read_text().splitlines():
                if line.startswith("btime "):
                    _BOOT = float(line.split()[1])
        return None if _BOOT is None else _BOOT + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def hosts(directory: HostDirectory, toolsets: dict[str, Any]) -> list[dict[str, Any]]:
    """Every connected host (local and through the gateway) and every endpoint not connected."""
    now = time.time()
    by_endpoint = {str(s.endpoint.path): s for s in directory.states.values()}
    out = []
    for entry in sorted(directory.hosts().values(), key=lambda e: (e.machine or "", e.host_app, e.key.pid)):
        state = entry.state or {}
        link_state = by_endpoint.get(entry.endpoint)
        started = started_at(entry.key.pid) if entry.machine is None else None
        busy_since = link_state.busy_since if link_state is not None else None
        wedged = state.get("wedged") if isinstance(state.get("wedged"), dict) else None
        documents = state.get("documents") if isinstance(state.get("documents"), list) else []
        out.append(
            {
                "instanceId": entry.key.instance_id,
                "hostApp": entry.host_app,
                "version": entry.version,
                "pid": entry.key.pid,
                "machine": entry.machine,
                "logName": f"{entry.host_app}/{entry.version}/{entry.key.pid}",
                "uptimeSeconds": round(now - started) if started else None,
                "phase": state.get("phase"),
                "status": "wedged" if wedged else "busy" if busy_since else "connected",
                "busySince": busy_since,
                "wedged": wedged,
                "documents": [
                    {k: d.get(k) for k in ("title", "path", "active", "modified")}
                    for d in documents[:50]
                    if isinstance(d, dict)
                ],
                "problem": _problem(state),
                "capabilities": len(entry.capabilities),
                "toolsets": toolsets.get(entry.key.instance_id),
                "canView": entry.machine is None and entry.find("tool", "view_screenshot") is not None,
                "viewOptions": view_options(entry) if entry.machine is None else [],
                "canUndo": entry.machine is None and entry.find("tool", "navigate_history") is not None,
            }
        )
    connected = {e.endpoint for e in directory.hosts().values()}
    for path, s in sorted(by_endpoint.items()):
        if path in connected:
            continue
        out.append(
            {
                "instanceId": None,
                "hostApp": s.endpoint.host_app,
                "version": s.endpoint.version,
                "pid": s.endpoint.pid,
                "machine": None,
                "status": s.status,
                "problem": s.error,
                "documents": [],
            }
        )
    return out


def view_options(entry: Any) -> list[dict[str, Any]]:
    """The choices of a host's `view_screenshot` the page offers (its options with a fixed set of values)."""
    cap = entry.find("tool", "view_screenshot")
    props = ((cap.raw.get("inputSchema") or {}).get("properties") or {}) if cap is not None else {}
    out = []
    for name, spec in list(props.items())[:12]:
        if not isinstance(spec, dict) or name in ("width", "height"):
            continue
        # an optional choice is `anyOf: [{enum: [...]}, {type: null}]` (null: the host decides)
        choice = next(
            (c for c in [spec, *(spec.get("anyOf") or [])] if isinstance(c, dict) and "enum" in c), None
        )
        if choice is not None and isinstance(choice["enum"], list):
            aliases = spec.get(ALIASES) if isinstance(spec.get(ALIASES), dict) else {}
            values = [str(v) for v in choice["enum"][:12] if isinstance(v, str) and v not in aliases]
            out.append({"name": name, "enum": values, "default": spec.get("default")})
    return out


def view_marks(entry: Any) -> bool:
    """Whether a host's `view_screenshot` can mark objects by id (a `mark` list of ids)."""
    cap = entry.find("tool", "view_screenshot")
    props = ((cap.raw.get("inputSchema") or {}).get("properties") or {}) if cap is not None else {}
    return isinstance(props.get("mark"), dict)


def machine_panel(directory: HostDirectory, gateway: Gateway | None) -> dict[str, Any]:
    """This machine and the others the gateway knows (or why there are none)."""
    listing: dict[str, Any] = {}
    with contextlib.suppress(Exception):
        listing = machines.list_machines(directory, gateway)
    return {
        "daemon": {"pid": os.getpid(), "version": __version__},
        "machines": listing.get("machines", []),
        "gateway": listing.get("gateway", {}),
    }


def _problem(state: dict[str, Any]) -> str | None:
    """Why a host cannot serve (a foreign server down or refused, with when it is tried again)."""
    error = state.get("error")
    if not isinstance(error, str) or not error:
        return None
    at = state.get("retryAt")
    if isinstance(at, int | float) and (left := at - time.time()) > 0:
        return f"{error} (tried again in {left:.0f} s)"
    return error

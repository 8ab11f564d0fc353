"""`cadmcp eval dump-catalog`: write the catalogs of running hosts as an evaluation `catalog.json`.

    cadmcp eval dump-catalog --out FILE [--host APP ...] [--runtime-dir DIR]

Connects to every host endpoint in the runtime directory (or only those of the named apps),
lists its tools, resources and resource templates as the daemon would, and writes them raw
(MCP JSON) in the shared evaluation format, so a toolset author can write queries against the
real catalog and run `cadmcp eval search` on it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

#: How long one host may take to answer its list requests.
TIMEOUT_S = 10.0


async def dump_host(path: Path) -> dict[str, Any]:
    """Tools, resources and resource templates listed by the host at endpoint `path`, as the
    daemon lists them (raw JSON), plus the `tools/list` result's `_meta` (minus volatile state)."""
    import anyio

    from cadmcp.daemon.hostlink import HostLink
    from cadmcp.wire.meta import HOST_STATE
    from cadmcp.wire.sockets import connect

    out: dict[str, Any] = {}
    # the result is kept outside the blocks: closing the connection cancels its task group
    with anyio.fail_after(TIMEOUT_S):
        async with connect(path) as (read, write), HostLink(read, write) as link:
            await link.connect()
            out["tools"], meta = await link.list_all("tools/list", "tools", TIMEOUT_S)
            out["resources"], _ = await link.list_all("resources/list", "resources", TIMEOUT_S)
            out["resourceTemplates"], _ = await link.list_all(
                "resources/templates/list", "resourceTemplates", TIMEOUT_S
            )
    meta = {k: v for k, v in meta.items() if k != HOST_STATE}  # volatile, not part of a catalog
    if meta:
        out["_meta"] = meta
    return out


async def dump_catalog(runtime_dir: Path | None = None, apps: list[str] | None = None) -> dict[str, Any]:
    """A `catalog.json` object with every live host endpoint (optionally only the named apps)."""
    from cadmcp.wire.endpoints import list_endpoints, pid_alive

    wanted = {a.casefold() for a in apps} if apps else None
    hosts: list[dict[str, Any]] = []
    for ep in list_endpoints(runtime_dir):
        if not pid_alive(ep.pid) or (wanted is not None and ep.host_app.casefold() not in wanted):
            continue
        listed = await dump_host(ep.path)
        hosts.append({"hostApp": ep.host_app, "version": ep.version, "pid": ep.pid, **listed})
    return {"hosts": hosts}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cadmcp eval dump-catalog", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="catalog.json to write ('-' for stdout)")
    parser.add_argument("--host", action="append", help="only hosts of this app (repeatable)")
    parser.add_argument("--runtime-dir", type=Path, help="host endpoint folder (default: usual)")
    return parser


def main(argv: list[str]) -> int:
    """Entry point of `cadmcp eval dump-catalog`; returns the process exit code."""
    args = _parser().parse_args(argv)
    import anyio

    try:
        catalog = anyio.run(dump_catalog, args.runtime_dir, args.host)
    except (OSError, TimeoutError) as exc:
        print(f"cadmcp eval dump-catalog: cannot read a host ({exc}); is it still running?", file=sys.stderr)
        return 1
    if not catalog["hosts"]:
        print(
            "cadmcp eval dump-catalog: no running host; start one with `cadmcp host ...`",
            file=sys.stderr,
        )
        return 1
    text = json.dumps(catalog, indent=1, ensure_ascii=False) + "\n"
    if str(args.out) == "-":
        sys.stdout.write(text)
    else:
        args.out.write_text(text, encoding="utf-8")
        n = sum(len(h["tools"]) + len(h["resources"]) + len(h["resourceTemplates"]) for h in catalog["hosts"])
        print(f"wrote {len(catalog['hosts'])} host(s), {n} capabilities to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

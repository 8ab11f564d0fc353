"""Build the catalog of the MCP-servers set: five real servers beside the live CAD hosts.

The servers are those `bench/bench_foreign.py` fronts (mcp-server-time and mcp-server-git from
PyPI, dev dependencies; @modelcontextprotocol/server-everything, server-memory and
server-filesystem from npm, installed by `.ci/deps/mcp-servers.sh`): each is started over
stdio, and its `tools/list`, `resources/list` and `resources/templates/list` are written as
one host named as `hosts.toml` would name it (Time, Git, Everything, Memory, Filesystem).
The DXF, IFC and FreeCAD hosts of `eval/cadbim-heldout/catalog.json` join them, as a CAD
user's other servers run beside cadmcp's own hosts.

    ./dev python eval/mcp-servers/build.py
writes catalog.json beside this script. `queries.jsonl` is not built: see README.md.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from bench_foreign import elicit, servers  # noqa: E402  (the bench's servers, started the same way)

FIRST_PID = 3000


def _json(model: Any) -> dict[str, Any]:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


async def listed(name: str, command: str, args: list[str], env: dict[str, str], pid: int) -> dict[str, Any]:
    """One server's catalog as a set's host entry."""
    params = StdioServerParameters(command=command, args=args, env=env or None)
    with open(os.devnull, "w") as quiet:
        async with (
            stdio_client(params, errlog=quiet) as (read, write),
            ClientSession(read, write, elicitation_callback=elicit) as session,
        ):
            opened = await session.initialize()
            await anyio.sleep(0.5)  # servers that add tools once a client is known (server-everything)
            has_resources = opened.capabilities.resources is not None
            return {
                "hostApp": name,
                "version": opened.server_info.version,
                "pid": pid,
                "tools": [_json(t) for t in (await session.list_tools()).tools],
                "resources": [_json(r) for r in (await session.list_resources()).resources]
                if has_resources
                else [],
                "resourceTemplates": [
                    _json(t) for t in (await session.list_resource_templates()).resource_templates
                ]
                if has_resources
                else [],
            }


async def build() -> None:
    with tempfile.TemporaryDirectory() as work:
        found = servers(Path(work))
        if len(found) < 5:
            raise SystemExit("the npm servers are missing: run bash .ci/deps/mcp-servers.sh")
        hosts = [
            await listed(name, command, args, env, pid)
            for pid, (name, (command, args, env)) in enumerate(found.items(), FIRST_PID)
        ]
    cad = json.loads((ROOT / "eval" / "cadbim-heldout" / "catalog.json").read_text(encoding="utf-8"))
    catalog = {"hosts": [*cad["hosts"], *hosts]}
    (HERE / "catalog.json").write_text(
        json.dumps(catalog, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    for host in catalog["hosts"]:
        print(host["hostApp"], len(host["tools"]), len(host["resources"]), len(host["resourceTemplates"]))


if __name__ == "__main__":
    anyio.run(build)

"""`cadmcp demo`: start a host on a bundled sample and walk through search -> invoke.

The walk is what an agent does: list hosts, search for a capability, run it by id, read the
live model context, change the model, look at it, and undo. Afterwards the host keeps running
so an MCP client (Claude Code, Cursor...) started with `cadmcp daemon` finds it.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from cadmcp.applications import BUILTIN

COUNT_WALLS = {
    "dxf": "sum(1 for e in msp.query('LWPOLYLINE') if e.dxf.layer == 'A-WALL')",
    "ifc": "len(model.by_type('IfcWall'))",
}
ADD_WALL = {
    "dxf": "msp.add_lwpolyline([(0, -2000), (12000, -2000), (12000, -2200), (0, -2200)], close=True, "
    "dxfattribs={'layer': 'A-WALL'})",
    "ifc": (
        "import numpy, ifcopenshell.api.geometry as geo, ifcopenshell.api.root as root\n"
        "import ifcopenshell.api.spatial as spatial, ifcopenshell.util.representation as rep\n"
        "body = rep.get_context(model, 'Model', 'Body', 'MODEL_VIEW')\n"
        "wall = root.create_entity(model, ifc_class='IfcWall', name='Demo wall')\n"
        "placement = numpy.eye(4)\n"
        "placement[:3, 3] = (-3.0, -3.0, 0.0)\n"
        "geo.edit_object_placement(model, product=wall, matrix=placement)\n"
        "shape = geo.add_wall_representation(model, context=body, length=6.0, height=3.0, thickness=0.3)\n"
        "geo.assign_representation(model, product=wall, representation=shape)\n"
        "storey = model.by_type('IfcBuildingStorey')[0]\n"
        "spatial.assign_container(model, products=[wall], relating_structure=storey)\n"
        "wall.GlobalId"
    ),
}


WALKS = sorted(COUNT_WALLS.keys() & ADD_WALL.keys())
"""The applications the walk knows how to drive (their sample comes from the registry)."""
SAMPLES = {a.key: a.sample for a in BUILTIN if a.key in WALKS and a.sample}


def sample_path(kind: str) -> Path | None:
    """The bundled sample for a host kind (found beside the source tree or the working directory)."""
    for base in (Path(__file__).resolve().parents[2], Path.cwd()):
        candidate = base / "samples" / SAMPLES[kind]
        if candidate.exists():
            return candidate
    return None


def _say(step: str, detail: str = "") -> None:
    print(f"\n== {step}")
    if detail:
        print(detail)


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def walk(kind: str, env: dict[str, str]) -> None:
    """Drive a real daemon over stdio like an agent would."""
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "cadmcp", "daemon"], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.discover()
        _say(
            "daemon connected",
            f"protocol {session.protocol_version}; tools: "
            f"{[t.name for t in (await session.list_tools()).tools]}",
        )
        with anyio.fail_after(60):
            while True:
                hosts = (await session.call_tool("list_host_instances", {})).structured_content
                if hosts["count"]:
                    break
                await anyio.sleep(0.2)
        host = hosts["hosts"][0]
        _say(
            "list_host_instances",
            f"{host['hostApp']} {host['version']} pid {host['pid']} ({host['capabilities']} capabilities)",
        )

        found = (
            await session.call_tool("search_dynamic", {"query": "wall count", "limit": 5})
        ).structured_content
        _say(
            'search_dynamic "wall count"',
            "\n".join(f"  {i['id']}  {i['kind']:<17} {i['target']}" for i in found["items"]),
        )

        async def by_target(target: str) -> dict[str, Any]:
            answer = await session.call_tool("search_dynamic", {"query": target, "limit": 32})
            return next(i for i in answer.structured_content["items"] if i["target"] == target)

        run = await by_target("execute_python_code")

        async def python(code: str, description: str) -> str:
            result = await session.call_tool(
                "invoke_dynamic", {"id": run["id"], "arguments": {"code": code, "description": description}}
            )
            return _text(result)

        _say("count walls", await python(COUNT_WALLS[kind], "count walls"))
        context = await by_target(f"{kind}://model/context")
        ctx = await session.call_tool("invoke_dynamic", {"id": context["id"]})
        summary = json.loads(ctx.content[0].resource.text)
        _say(f"{kind}://model/context", json.dumps(summary, indent=None)[:400] + " ...")

        shot = await by_target("view_screenshot")
        before = await session.call_tool("invoke_dynamic", {"id": shot["id"], "arguments": {"width": 800}})
        _say("add a wall", await python(ADD_WALL[kind], "add a demo wall"))
        _say("count walls again", await python(COUNT_WALLS[kind], "count walls"))
        after = await session.call_tool("invoke_dynamic", {"id": shot["id"], "arguments": {"width": 800}})
        png = base64.b64decode(after.content[0].data)
        from cadmcp.userdirs import cache_dir

        out = cache_dir() / "demo" / f"cadmcp-demo-{kind}.png"  # not into the folder it was run from
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(png)
        changed = before.content[0].data != after.content[0].data
        _say(
            "view_screenshot",
            f"{len(png)} bytes PNG written to {out}; changed after the edit: {changed}",
        )

        history = await by_target("navigate_history")
        back = await session.call_tool(
            "invoke_dynamic", {"id": history["id"], "arguments": {"direction": "back"}}
        )
        _say("navigate_history back", json.dumps(back.structured_content))
        _say("count walls after undo", await python(COUNT_WALLS[kind], "count walls"))


def main(kind: str = "dxf", *, wait: bool = True) -> int:
    """Start the host, run the walk, then keep the host up for MCP clients until Ctrl-C."""
    sample = sample_path(kind)
    if sample is None:
        print(
            f"cadmcp demo: the {kind} sample was not found; run it from the project folder", file=sys.stderr
        )
        return 2
    env = dict(os.environ)
    host = subprocess.Popen([sys.executable, "-m", "cadmcp", "host", kind, str(sample)], env=env)
    try:
        _say(f"started the {kind.upper()} host on {sample.name}", f"pid {host.pid}")
        import anyio

        anyio.run(walk, kind, env)
        if not wait:
            return 0
        print(
            "\nThe host keeps running. Point your AI client at the daemon, e.g.\n"
            f"  claude mcp add cadmcp -- {Path(sys.executable).parent / 'cadmcp'} daemon\n"
            "and ask it to work on the drawing. Ctrl-C stops the host."
        )
        while host.poll() is None:
            time.sleep(0.5)
        return host.returncode or 0
    except KeyboardInterrupt:
        return 0
    finally:
        if host.poll() is None:
            host.terminate()
            host.wait(10)

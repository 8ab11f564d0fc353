"""Small readers for MCP results in the IFC host tests."""

from __future__ import annotations

import json
from typing import Any

from mcp import Client


def text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


async def run(client: Client, code: str, description: str | None = None) -> Any:
    args = {"code": code} if description is None else {"code": code, "description": description}
    return await client.call_tool("execute_python_code", args)


async def read_json(client: Client, uri: str) -> Any:
    result = await client.read_resource(uri)
    return json.loads(result.contents[0].text)


async def counts(client: Client) -> dict[str, int]:
    return (await read_json(client, "ifc://model/context"))["elementCounts"]


ADD_WALL = """
import numpy as np
storey = model.by_type("IfcBuildingStorey")[0]
body = util.representation.get_context(model, "Model", "Body", "MODEL_VIEW")
wall = api.root.create_entity(model, ifc_class="IfcWall", name="Added wall")
rep = api.geometry.add_wall_representation(model, context=body, length=4.0, height=3.0, thickness=0.2)
api.geometry.assign_representation(model, product=wall, representation=rep)
m = np.eye(4); m[:3, 3] = (2.0, 12.0, 0.0)
api.geometry.edit_object_placement(model, product=wall, matrix=m)
api.spatial.assign_container(model, products=[wall], relating_structure=storey)
wall.GlobalId
"""

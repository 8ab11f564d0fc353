"""The cheatsheet's recipes put things where they say on a millimetre model too (ifcopenshell.api
takes metres; what the model holds is in project units)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ifc_helpers import read_json, run, text
from mcp import Client

from cadmcp.hosts.ifc import create_server
from cadmcp.hosts.ifc.modelgen import new_project

pytestmark = pytest.mark.anyio


@pytest.fixture
def millimetre_model(tmp_path: Path) -> Path:
    path = tmp_path / "mm.ifc"
    new_project("Millimetre project", storeys=(("Ground", 0.0), ("Upper", 3.0)), millimetres=True).file.write(
        str(path)
    )
    return path


async def test_wall_recipe_lands_on_the_upper_storey_of_a_millimetre_model(millimetre_model: Path) -> None:
    async with Client(create_server([str(millimetre_model)], exec_timeout=30).server) as client:
        assert (await read_json(client, "ifc://model/context"))["units"] == {"length": "MILLIMETRE"}
        sheet = (await client.read_resource("ifc://python-cheatsheet")).contents[0].text
        recipe = sheet.split("# Add a 5 m wall on a storey")[1].split("\n", 1)[1].split("```")[0]
        upper = 'next(s for s in model.by_type("IfcBuildingStorey") if s.Name == "Upper")'
        recipe = recipe.replace('model.by_type("IfcBuildingStorey")[0]', upper)
        assert upper in recipe
        added = await run(client, recipe, "add wall")
        assert not added.is_error, text(added)
        guid = text(added).split("Result: ")[1].split()[0].strip("'")
        placed = await run(
            client,
            "import ifcopenshell.util.placement as p\n"
            f"matrix = p.get_local_placement(model.by_guid('{guid}').ObjectPlacement)\n"
            "[round(float(v), 3) for v in matrix[:3, 3]]",
        )
        # project units: 2 m, 4 m and the storey's 3 m, in millimetres
        assert "Result: [2000.0, 4000.0, 3000.0]" in text(placed)
        box = (await read_json(client, f"ifc://element/{guid}"))["boundingBox"]
        assert box["min"][2] == pytest.approx(3.0, abs=1e-3) and box["max"][2] == pytest.approx(6.0, abs=1e-3)
        assert box["max"][0] - box["min"][0] == pytest.approx(5.0, abs=1e-3)

"""A material layer's thickness edited by a script: the walls using it keep their old shape
(IfcOpenShell does not regenerate them), and the run's answer says so, naming them."""

from __future__ import annotations

import pytest
from ifc_helpers import run, text

pytestmark = pytest.mark.anyio

LAYERED = """
walls = model.by_type("IfcWall")[:3]
concrete = api.material.add_material(model, name="Concrete")
layers = api.material.add_material_set(model, name="WALL200", set_type="IfcMaterialLayerSet")
layer = api.material.add_layer(model, layer_set=layers, material=concrete)
api.material.edit_layer(model, layer=layer, attributes={"LayerThickness": 0.2})
for wall in walls:
    api.material.assign_material(model, products=[wall], type="IfcMaterialLayerSetUsage", material=layers)
layer.id()
"""


async def test_a_layer_thickness_edit_names_the_walls_whose_shape_was_left_as_it_was(client) -> None:
    made = await run(client, LAYERED, "layered walls")
    assert not made.is_error, text(made)
    layer = int(text(made).split("Result: ")[1].split()[0])

    edited = await run(client, f"model.by_id({layer}).LayerThickness = 0.3", "thicker walls")
    said = text(edited)
    assert not edited.is_error and "[UNDO STEP]" in said
    warned = "[WARNING] a material layer edit (thickness, layers or offset) changed what 3 elements"
    assert warned in said, said
    walls = await run(client, "[w.id() for w in model.by_type('IfcWall')[:3]]")
    for wall in eval(text(walls).split("Result: ")[1].splitlines()[0]):
        assert f"#{wall} IfcWall" in said
    assert "regenerate_wall_representation" in said and "navigate_history" in said

    renamed = await run(client, f"model.by_id({layer}).Name = 'Core'", "a name is not a shape")
    assert "[WARNING]" not in text(renamed), text(renamed)
    read = await run(client, f"model.by_id({layer}).LayerThickness")
    assert "[WARNING]" not in text(read) and "0.3" in text(read)


async def test_walls_whose_body_the_run_rebuilt_are_not_named(client) -> None:
    made = await run(client, LAYERED, "layered walls")
    layer = int(text(made).split("Result: ")[1].split()[0])
    rebuilt = (
        f"model.by_id({layer}).LayerThickness = 0.25\n"
        "body = util.representation.get_context(model, 'Model', 'Body', 'MODEL_VIEW')\n"
        "wall = model.by_type('IfcWall')[0]\n"
        "old = [r for r in wall.Representation.Representations if r.RepresentationIdentifier == 'Body'][0]\n"
        "api.geometry.unassign_representation(model, product=wall, representation=old)\n"
        "rep = api.geometry.add_wall_representation(\n"
        "    model, context=body, length=4.0, height=3.0, thickness=0.25)\n"
        "api.geometry.assign_representation(model, product=wall, representation=rep)\n"
        "wall.id()"
    )
    answer = await run(client, rebuilt, "one wall rebuilt")
    said = text(answer)
    assert not answer.is_error, said
    wall = said.split("Result: ")[1].split()[0]
    assert "changed what 2 elements" in said and f"#{wall} IfcWall" not in said, said


async def test_a_preview_warns_as_the_run_would_and_an_offset_edit_counts_too(client) -> None:
    made = await run(client, LAYERED, "layered walls")
    layer = int(text(made).split("Result: ")[1].split()[0])

    preview = await client.call_tool(
        "execute_python_code", {"code": f"model.by_id({layer}).LayerThickness = 0.3", "dryRun": True}
    )
    said = text(preview)
    assert not preview.is_error and "Preview (nothing was changed" in said, said
    assert "[WARNING] a material layer edit (thickness, layers or offset) changed what 3 elements" in said
    assert preview.structured_content["warnings"][0].startswith("a material layer edit")
    unchanged = await run(client, f"model.by_id({layer}).LayerThickness")
    assert "Result: 0.2" in text(unchanged)  # the preview changed nothing

    offset = await run(
        client,
        "usage = [r.RelatingMaterial for r in model.by_type('IfcRelAssociatesMaterial')"
        " if r.RelatingMaterial.is_a('IfcMaterialLayerSetUsage')][0]\n"
        "usage.OffsetFromReferenceLine = 0.05",
        "move the layers off the axis",
    )
    assert "changed what 1 element should look like" in text(offset), text(offset)


async def test_without_a_body_context_the_note_says_the_regenerator_cannot_run(client) -> None:
    made = await run(client, LAYERED, "layered walls")
    layer = int(text(made).split("Result: ")[1].split()[0])
    answer = await run(
        client,
        "body = util.representation.get_context(model, 'Model', 'Body', 'MODEL_VIEW')\n"
        "body.TargetView = 'PLAN_VIEW'\n"  # as in models whose body context is named otherwise
        f"model.by_id({layer}).LayerThickness = 0.3",
        "thicker, in a model without a Model/Body/MODEL_VIEW context",
    )
    assert "cannot rebuild the walls here (the model has no Model/Body/MODEL_VIEW context)" in text(answer)


async def test_a_preview_names_the_element_a_script_deletes_before_its_many_parts(client) -> None:
    """Removing a window deletes its property values and quantities too, many more than the one
    window: the preview's sentence names the window first (the person is asked on it)."""
    preview = await client.call_tool(
        "execute_python_code",
        {"code": "api.root.remove_product(model, product=model.by_type('IfcWindow')[0])", "dryRun": True},
    )
    said = text(preview)
    assert not preview.is_error, said
    deleted = said.split("deletes ", 1)[1]
    assert deleted.split("(", 1)[1].startswith("1 IfcWindow"), said
    sample = preview.structured_content["deleted"]["sample"]
    assert sample[0]["kind"] == "IfcWindow" and sample[0]["name"], sample

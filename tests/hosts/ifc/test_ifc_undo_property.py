"""Undo is exact: any sequence of api edits, undone step by step, gives back the original file."""

from __future__ import annotations

from pathlib import Path

import ifcopenshell
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cadmcp.host.builtins import navigate
from cadmcp.host.builtins.scripts import run_script
from cadmcp.hosts.ifc.adapter import IfcAdapter

ADD_WALL = """
import numpy as np
storey = model.by_type("IfcBuildingStorey")[{storey}]
body = util.representation.get_context(model, "Model", "Body", "MODEL_VIEW")
wall = api.root.create_entity(model, ifc_class="IfcWall", name="W{n}")
rep = api.geometry.add_wall_representation(model, context=body, length={length}, height=3.0, thickness=0.2)
api.geometry.assign_representation(model, product=wall, representation=rep)
m = np.eye(4); m[:3, 3] = ({n}, 20.0, storey.Elevation)
api.geometry.edit_object_placement(model, product=wall, matrix=m)
api.spatial.assign_container(model, products=[wall], relating_structure=storey)
pset = api.pset.add_pset(model, product=wall, name="Pset_WallCommon")
api.pset.edit_pset(model, pset=pset, properties={{"IsExternal": False}})
"""
DELETE = """
products = sorted(model.by_type("{cls}"), key=lambda e: e.id())
if products:
    api.root.remove_product(model, product=products[{pick} % len(products)])
"""
RENAME = """
walls = sorted(model.by_type("IfcWall"), key=lambda e: e.id())
walls[{pick} % len(walls)].Name = "{name}"
"""
EDIT_PSET = """
doors = sorted(model.by_type("IfcDoor"), key=lambda e: e.id())
if doors:
    door = doors[{pick} % len(doors)]
    pset = element.get_pset(door, "Pset_DoorCommon")
    api.pset.edit_pset(model, pset=model.by_id(pset["id"]), properties={{"FireRating": "{rating}"}})
"""

edits = st.one_of(
    st.builds(
        ADD_WALL.format,
        storey=st.integers(0, 1),
        n=st.integers(0, 50),
        length=st.floats(0.5, 8.0).map(lambda v: round(v, 2)),
    ),
    st.builds(
        DELETE.format,
        cls=st.sampled_from(["IfcWall", "IfcDoor", "IfcWindow", "IfcSlab"]),
        pick=st.integers(0, 99),
    ),
    st.builds(RENAME.format, pick=st.integers(0, 99), name=st.text("abcXYZ 0123", min_size=1, max_size=12)),
    st.builds(
        EDIT_PSET.format, pick=st.integers(0, 99), rating=st.sampled_from(["EI30", "EI60", "EI90", "REI120"])
    ),
)

SAMPLE = Path(__file__).resolve().parents[3] / "samples" / "house.ifc"


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(edits, min_size=1, max_size=5))
def test_undoing_every_step_restores_the_exact_file(scripts: list[str]) -> None:
    host = IfcAdapter(exec_timeout=30)
    doc = host.workspace.add(ifcopenshell.open(str(SAMPLE)), None, "house.ifc")
    original = doc.file.to_string()
    recorded = 0
    for script in scripts:
        result = run_script(host, script, None)
        assert not result.is_error, result.text()
        recorded += "[UNDO STEP]" in result.text()
    assert doc.history.back_remaining == recorded
    after_edits = doc.file.to_string()
    undone = navigate(host.history(), "back", len(scripts) + 3)
    assert undone["navigated"] == recorded and undone["back_remaining"] == 0
    assert doc.file.to_string() == original
    assert not doc.modified
    navigate(host.history(), "forward", len(scripts))
    assert doc.file.to_string() == after_edits


def test_history_depth_matches_ifcopenshell() -> None:
    host = IfcAdapter()
    doc = host.workspace.new()
    for n in range(70):
        run_script(host, f"model.by_type('IfcProject')[0].Name = 'v{n}'", None)
    assert doc.history.back_remaining == len(doc.file.history) == 64
    result = navigate(host.history(), "back", 100)
    assert result["navigated"] == 64
    assert doc.file.by_type("IfcProject")[0].Name == "v5"

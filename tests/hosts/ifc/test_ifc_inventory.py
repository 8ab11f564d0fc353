"""An IFC model's revision (the inventory's digest, which previews and approvals compare) is its
content: not the order of a SET, not the times ifcopenshell.api stamps, not fresh GlobalIds."""

from __future__ import annotations

import ifcopenshell
import ifcopenshell.api

from cadmcp.host.builtins.preview import revision
from cadmcp.hosts.ifc.inventory import inventory


def _typed_walls(order: list[int]) -> ifcopenshell.file:
    model = ifcopenshell.file(schema="IFC4")
    walls = [model.createIfcWall(ifcopenshell.guid.new(), None, f"W{n}") for n in range(5)]
    kind = model.createIfcWallType(ifcopenshell.guid.new(), None, "Exterior 300")
    typed = [walls[i] for i in order]
    model.createIfcRelDefinesByType("3ST22ejWkEoOTOyxpks2dy", None, None, None, typed, kind)
    return model


def test_a_set_in_another_order_is_the_same_revision_and_a_list_is_not() -> None:
    """ThatOpen's AC20-FZK-Haus.ifc: removing one of a type's walls with root.remove_product gave
    the type relationship's RelatedObjects (a SET) in another order every other run (ifcopenshell.api
    rebuilds it from a Python set), so an approved removal was refused as not the previewed one."""
    forward, backward = _typed_walls([0, 1, 2, 3, 4]), _typed_walls([4, 2, 0, 3, 1])
    assert revision(inventory(forward)) == revision(inventory(backward))
    assert revision(inventory(forward)) != revision(inventory(_typed_walls([0, 1, 2, 3])))

    lists = [ifcopenshell.file(schema="IFC4") for _ in range(2)]
    for model, points in zip(lists, ([(0.0, 0.0), (1.0, 0.0)], [(1.0, 0.0), (0.0, 0.0)]), strict=True):
        model.createIfcPolyline([model.createIfcCartesianPoint(p) for p in points])  # a LIST: order counts
    assert revision(inventory(lists[0])) != revision(inventory(lists[1]))

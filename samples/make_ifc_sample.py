"""Generate the IFC sample model ``samples/house.ifc`` (reproducible: fixed GlobalIds and timestamp).

    python samples/make_ifc_sample.py            # writes samples/house.ifc next to this script
    python samples/make_ifc_sample.py out.ifc    # or to a path of your choice

The house is built with ``ifcopenshell.api`` by :func:`cadmcp.hosts.ifc.modelgen.build_house`:
two storeys, exterior and interior walls, doors and windows in openings, slabs, a roof slab,
spaces, property sets, quantities and types. The bench's 2,000-wall model comes from
:func:`cadmcp.hosts.ifc.modelgen.build_wall_grid` and is not committed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from cadmcp.hosts.ifc.modelgen import build_house


def main(argv: list[str]) -> int:
    target = Path(argv[0]) if argv else Path(__file__).with_name("house.ifc")
    build_house().write(str(target))
    print(f"wrote {target} ({target.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

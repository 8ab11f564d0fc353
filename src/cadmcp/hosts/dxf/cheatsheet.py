"""The ``dxf://python-cheatsheet`` resource text."""

CHEATSHEET = """# DXF host: Python cheatsheet for execute_python_code

## In scope
- `doc`  – the active ezdxf `Drawing` (https://ezdxf.readthedocs.io)
- `msp`  – its modelspace (`doc.modelspace()`)
- `ezdxf` – the ezdxf package
Each call starts with a fresh namespace: variables do not carry over between calls (an undo
could not take them back), so look entities up again, e.g. by handle.
The value of the last expression is returned (like a notebook cell); `print` output too.

## Undo rules
- One call that changes the document = one undo step, named by `description`
  (default: the first line of code). Undo/redo with `navigate_history`.
- If the code raises or times out, every change it made is rolled back ([ROLLBACK]).
- Read-only code records no step.
- Runaway code is stopped after CADMCP_EXEC_TIMEOUT seconds (default 60).

## Dependencies
Add a PEP 723 block to install pure-Python packages for the call:
```
# /// script
# dependencies = ["shapely>=2"]
# ///
```

## Recipes
```python
# count entities by type / layer
from collections import Counter
Counter(e.dxftype() for e in msp)
Counter(e.dxf.layer for e in msp)

# query (ezdxf query language)
doors = msp.query('INSERT[name=="DOOR"]')
[(d.dxf.handle, d.get_attrib_text("NUMBER")) for d in doors]

# a dynamic block's references insert anonymous blocks (*U12): find them by the dynamic block's name
from ezdxf import dynblkhelper
def block_name(ref):  # the dynamic block's name, else the block's own
    b = dynblkhelper.get_dynamic_block_definition(ref)
    return b.name if b is not None else ref.dxf.name
callouts = [r for r in msp.query("INSERT") if block_name(r) == "Section Callout"]

# change an attribute value of block references
for d in msp.query('INSERT[name=="DOOR"]'):
    if d.get_attrib_text("NUMBER") == "D101":
        d.get_attrib("FIRE_RATING").dxf.text = "EI30"

# add geometry on a layer
if "A-NOTE" not in doc.layers:
    doc.layers.add("A-NOTE", color=1)
msp.add_line((0, 0), (1000, 0), dxfattribs={"layer": "A-NOTE"})
msp.add_lwpolyline([(0, 0), (500, 0), (500, 500)], close=True)
msp.add_mtext("ROOM\\\\P101", dxfattribs={"char_height": 250}).set_location((1000, 1000))

# move / delete
e = doc.entitydb["2A"]          # by handle
e.translate(100, 0, 0)
msp.delete_entity(e)

# header variables and units
doc.header["$INSUNITS"]          # 4 = millimetres, 6 = metres
doc.header["$ACADVER"]

# blocks
blk = doc.blocks.new("MARK")
blk.add_circle((0, 0), 100)
msp.add_blockref("MARK", (2000, 2000))

# bounding box
from ezdxf import bbox
bbox.extents(msp, fast=True)
```

## Related resources
`dxf://model/context` (layers, counts, blocks, extents), `dxf://element/{handle}`,
`dxf://schedules` and `dxf://schedule/{id}/preview`, `dxf://model/warnings`.
"""

"""A minimal Compound File Binary (CFB v3, 512-byte sectors) writer for test fixtures.

olefile only reads compound files. This writes what Revit's files are: storages and
streams in a directory tree, small streams in the mini stream, large ones in regular
sectors, one FAT (no DIFAT sectors, so up to 109 FAT sectors, about 7 MB).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

SECTOR = 512
MINI_SECTOR = 64
MINI_CUTOFF = 4096
FREESECT, ENDOFCHAIN, FATSECT, NOSTREAM = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD, 0xFFFFFFFF
SIGNATURE = bytes.fromhex("D0CF11E0A1B11AE1")
STORAGE, STREAM, ROOT = 1, 2, 5
BLACK = 1


@dataclass
class _Node:
    name: str
    kind: int
    data: bytes = b""
    children: dict[str, _Node] = field(default_factory=dict)
    sid: int = 0
    start: int = ENDOFCHAIN
    left: int = NOSTREAM
    right: int = NOSTREAM
    child: int = NOSTREAM


def _order(name: str) -> tuple[int, str]:
    """CFB sibling order: shorter names first, then by upper-case name."""
    return len(name), name.upper()


def _tree(root: _Node, streams: dict[str, bytes]) -> list[_Node]:
    for path, data in streams.items():
        *folders, leaf = path.strip("/").split("/")
        node = root
        for folder in folders:
            node = node.children.setdefault(folder, _Node(folder, STORAGE))
        node.children[leaf] = _Node(leaf, STREAM, data)
    entries = [root]
    pending = [root]
    while pending:
        storage = pending.pop(0)
        kids = sorted(storage.children.values(), key=lambda n: _order(n.name))
        for kid in kids:
            kid.sid = len(entries)
            entries.append(kid)
            if kid.kind == STORAGE:
                pending.append(kid)
        storage.child = _balance(kids)
    return entries


def _balance(kids: list[_Node]) -> int:
    """Link sorted siblings as a balanced binary search tree; returns the subtree root's id."""
    if not kids:
        return NOSTREAM
    middle = len(kids) // 2
    node = kids[middle]
    node.left = _balance(kids[:middle])
    node.right = _balance(kids[middle + 1 :])
    return node.sid


def _pad(data: bytes, size: int) -> bytes:
    return data + b"\0" * (-len(data) % size)


def _entry(node: _Node, size: int) -> bytes:
    name = node.name.encode("utf-16-le") + b"\0\0"
    assert len(name) <= 64, f"CFB names are at most 31 characters: {node.name!r}"
    return struct.pack(
        "<64sHBBIII16sIQQIQ",
        name,
        len(name),
        node.kind,
        BLACK,
        node.left,
        node.right,
        node.child,
        b"\0" * 16,
        0,
        0,
        0,
        node.start,
        size,
    )


def build_cfb(streams: dict[str, bytes]) -> bytes:
    """The bytes of a compound file holding ``streams`` ("Storage/Stream" paths)."""
    root = _Node("Root Entry", ROOT)
    entries = _tree(root, streams)
    # Small streams go to the mini stream, chained in the mini FAT.
    mini_stream = b""
    mini_fat: list[int] = []
    big: list[_Node] = []
    for node in entries:
        if node.kind != STREAM or not node.data:
            continue
        if len(node.data) >= MINI_CUTOFF:
            big.append(node)
            continue
        first = len(mini_stream) // MINI_SECTOR
        count = -(-len(node.data) // MINI_SECTOR)
        node.start = first
        mini_fat += [*range(first + 1, first + count), ENDOFCHAIN]
        mini_stream += _pad(node.data, MINI_SECTOR)
    directory = b""  # filled once sector numbers are known; sized now
    dir_sectors = -(-len(entries) * 128 // SECTOR)
    minifat_bytes = _pad(struct.pack(f"<{len(mini_fat)}I", *mini_fat), SECTOR) if mini_fat else b""
    blobs: list[tuple[str, bytes | int]] = [("dir", dir_sectors * SECTOR), ("minifat", minifat_bytes)]
    blobs.append(("ministream", _pad(mini_stream, SECTOR)))
    blobs += [(f"stream{n.sid}", _pad(n.data, SECTOR)) for n in big]
    sizes = [(b if isinstance(b, int) else len(b)) // SECTOR for _, b in blobs]
    payload = sum(sizes)
    fat_sectors = 1
    while fat_sectors * (SECTOR // 4) < payload + fat_sectors:
        fat_sectors += 1
    assert fat_sectors <= 109, "fixture too large for a header-only DIFAT"
    fat = [FATSECT] * fat_sectors
    starts: dict[str, int] = {}
    for (label, _), count in zip(blobs, sizes, strict=True):
        starts[label] = len(fat) if count else ENDOFCHAIN
        fat += [*range(len(fat) + 1, len(fat) + count), ENDOFCHAIN] if count else []
    fat += [FREESECT] * (fat_sectors * (SECTOR // 4) - len(fat))
    root.start = starts["ministream"] if mini_stream else ENDOFCHAIN
    for node in big:
        node.start = starts[f"stream{node.sid}"]
    for node in entries:
        size = len(mini_stream) if node is root else len(node.data)
        directory += _entry(node, size)
    directory = _pad(directory + _unused_entries(len(entries), dir_sectors), SECTOR)
    difat = [*range(fat_sectors), *[FREESECT] * (109 - fat_sectors)]
    header = SIGNATURE + b"\0" * 16
    header += struct.pack("<HHHHH6sIIIIIIIII", 0x3E, 3, 0xFFFE, 9, 6, b"\0" * 6, 0, fat_sectors,
                          starts["dir"], 0, MINI_CUTOFF,
                          starts["minifat"] if mini_fat else ENDOFCHAIN, len(minifat_bytes) // SECTOR,
                          ENDOFCHAIN, 0)  # fmt: skip
    header += struct.pack("<109I", *difat)
    body = struct.pack(f"<{len(fat)}I", *fat)
    for label, blob in blobs:
        body += directory if label == "dir" else blob  # type: ignore[operator]
    return header + body


def _unused_entries(used: int, dir_sectors: int) -> bytes:
    free = dir_sectors * (SECTOR // 128) - used
    empty = struct.pack(
        "<64sHBBIII16sIQQIQ", b"", 0, 0, 0, NOSTREAM, NOSTREAM, NOSTREAM, b"\0" * 16, 0, 0, 0, 0, 0
    )
    return empty * free


def write_cfb(path: Path, streams: dict[str, bytes]) -> Path:
    """Write a compound file holding ``streams`` to ``path``; returns ``path``."""
    path.write_bytes(build_cfb(streams))
    return path

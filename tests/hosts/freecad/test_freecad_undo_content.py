"""Saved property content is compared by what it holds: FreeCAD's ``dumpPropertyContent`` is a zip
archive stamped with the time it was written, so one value dumped twice a few seconds apart gives
other bytes, and a put-back that compared bytes depended on the clock (no FreeCAD needed)."""

from __future__ import annotations

import io
import zipfile

from cadmcp.hosts.freecad.undo import comparable

LENGTH = b'<Content>\n<Float value="8.0"/>\n</Content>\n'


def dumped(content: bytes, when: tuple[int, int, int, int, int, int]) -> bytes:
    """Content as FreeCAD dumps it: one Persistence.xml member, deflated, stamped ``when``."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(zipfile.ZipInfo("Persistence.xml", date_time=when), content)
    return out.getvalue()


def test_one_value_dumped_at_two_times_is_the_same_value() -> None:
    first, later = dumped(LENGTH, (2026, 12, 2, 1, 0, 0)), dumped(LENGTH, (2026, 12, 2, 1, 0, 4))
    assert first != later
    assert comparable(first) == comparable(later)


def test_another_value_is_another_value() -> None:
    other = LENGTH.replace(b"8.0", b"2.0")
    when = (2026, 12, 2, 1, 0, 0)
    assert comparable(dumped(LENGTH, when)) != comparable(dumped(other, when))


def test_content_that_is_not_an_archive_compares_as_it_is() -> None:
    assert comparable(b"not a zip") == b"not a zip"
    assert comparable((("Length", "Params.thickness"),)) == (("Length", "Params.thickness"),)

"""Which characters of a text the font a view draws it in has no glyph for.

ezdxf draws such a character as an empty box (the font's .notdef glyph, or a box for stroke
fonts) and says nothing: a Chinese plan drawn on a machine with no CJK font shows rows of boxes
where its room names are, though the drawing holds them intact. The view names those texts.
"""

from __future__ import annotations

from typing import Any

MAX_CHECKED = 4096
"""Characters of one text looked at; a longer text is judged by its beginning."""


def lacking(font: Any, text: str) -> str:
    """The characters of ``text`` (spaces and controls aside) that ``font`` (an ezdxf AbstractFont)
    has no glyph for, in order of first use; "" when it has them all or cannot say."""
    cache = getattr(font, "glyph_cache", None)
    has = _glyph_test(cache)
    if has is None:
        return ""
    out: dict[str, None] = {}
    for char in text[:MAX_CHECKED]:
        if ord(char) > 32 and not char.isspace() and char not in out and not has(ord(char)):
            out[char] = None
    return "".join(out)


def _glyph_test(cache: Any) -> Any:
    """A test of a code point against one of ezdxf's glyph caches (TrueType, SHX, LibreCAD)."""
    cmap = getattr(cache, "cmap", None)
    if isinstance(cmap, dict):  # TrueType / OpenType
        return cmap.__contains__
    inner = getattr(cache, "font", None)
    shapes = getattr(inner, "shapes", None)
    if isinstance(shapes, dict):  # SHX / SHP shape file
        return shapes.__contains__
    if inner is not None and hasattr(inner, "__getitem__"):  # LibreCAD stroke font

        def has(code: int) -> bool:
            try:
                inner[code]
            except (KeyError, IndexError):
                return False
            return True

        return has
    return None

"""Characters a drawing's code page cannot hold, written as AutoCAD reads them.

ezdxf writes such a character as ``\\U+xxxx`` (AutoCAD's escape) unless its code is below 256,
which it writes as ``\\xe4``: AutoCAD shows that as it stands. A drawing in a code page without
the Latin-1 letters (ANSI_936 Chinese, ANSI_1251 Cyrillic, ANSI_1253 Greek, ANSI_932 Japanese)
had "ändern" saved as "\\xe4ndern". With `autocad_escapes`, ezdxf's save writes ``\\U+00e4``,
which AutoCAD and ezdxf both read back as "ä".
"""

from __future__ import annotations

import codecs
from collections.abc import Callable

_Handler = Callable[[UnicodeError], tuple[str, int]]
_ezdxf: _Handler | None = None


def _escape(exc: UnicodeError) -> tuple[str, int]:
    if isinstance(exc, UnicodeEncodeError):
        chars = exc.object[exc.start : exc.end]
        if all(ord(c) <= 0xFFFF and not 0xD800 <= ord(c) <= 0xDFFF for c in chars):
            return "".join(f"\\U+{ord(c):04x}" for c in chars), exc.end
    assert _ezdxf is not None
    return _ezdxf(exc)  # what AutoCAD cannot read either (beyond the basic plane, surrogates)


def autocad_escapes() -> None:
    """Make ezdxf's `dxfreplace` error handler write AutoCAD's escape for every character a
    drawing's code page lacks (once per process; the rest stays ezdxf's)."""
    global _ezdxf
    import ezdxf  # noqa: F401  (registers its own handler first)

    current = codecs.lookup_error("dxfreplace")
    if current is not _escape:
        _ezdxf = current
        codecs.register_error("dxfreplace", _escape)

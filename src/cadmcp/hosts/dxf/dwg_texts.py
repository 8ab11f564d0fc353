"""The texts of a converted DWG, checked against the DWG itself.

LibreDWG's DXF writer can add stray characters after a text holding a line break or another
control character (it reads past the end of the string it escaped), and garbles such a text's
characters outside ASCII in drawings before R2007; nothing flags it. The converter therefore also
reports each text-bearing entity's string as the decoded drawing holds it, and the host sets every
text that differs from it in the ezdxf drawing, by handle, to the DWG's own.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ezdxf.document import Drawing

__all__ = ["TextCheck", "dxf_form", "mend_texts"]

_ATTRIBUTE = {"TEXT": "text", "ATTRIB": "text", "ATTDEF": "text", "TOLERANCE": "content", "DIMENSION": "text"}
"""The ezdxf attribute holding each kind's text (MTEXT's is its ``text`` property)."""
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f]")
"""Control characters DXF writes in caret notation (all but tab)."""


@dataclass
class TextCheck:
    """What comparing the drawing's texts with the DWG's found."""

    checked: int = 0
    """Texts compared with the DWG's."""
    mended: Counter[str] = field(default_factory=Counter)
    """Texts set to the DWG's own, by kind (they differed from it)."""
    unread: list[tuple[str, str]] = field(default_factory=list)
    """``(kind, handle)`` of the entities whose text the reader could not give: not checked."""

    def notes(self) -> list[str]:
        """What the open answer says of the check (nothing when every text agreed)."""
        said = []
        if self.mended:
            count = sum(self.mended.values())
            kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(self.mended.items()))
            said.append(
                f"{count} text(s) ({kinds}) came out of the reader's DXF unlike the DWG (stray characters "
                "after a line break, garbled characters) and were set to the DWG's own text."
            )
        if self.unread:
            shown = ", ".join(f"{kind} {handle}" for kind, handle in self.unread[:10])
            more = f" and {len(self.unread) - 10} more" if len(self.unread) > 10 else ""
            said.append(
                f"The text of {len(self.unread)} entit{'y' if len(self.unread) == 1 else 'ies'} could not "
                f"be read from the DWG to check it ({shown}{more}, by handle): it may carry stray "
                "characters; compare it with the original before relying on it."
            )
        return said

    def as_json(self) -> dict[str, Any]:
        return {
            "checked": self.checked,
            "mended": dict(sorted(self.mended.items())),
            "unchecked": [{"type": kind, "handle": handle} for kind, handle in self.unread],
        }


def dxf_form(raw: str) -> str:
    """A DWG string as ezdxf holds it once read from a correct DXF: control characters other than tab
    in caret notation (a line break is ``^J``), as DXF writes them, and ``\\U+XXXX`` escapes decoded."""
    raw = _CONTROL.sub(lambda found: "^" + chr(ord(found.group()) + 0x40), raw)
    if "\\U+" not in raw:
        return raw
    from ezdxf.lldxf.encoding import decode_dxf_unicode

    return decode_dxf_unicode(raw)


def mend_texts(doc: Drawing, texts: Iterable[Sequence[Any]], unread: Iterable[Sequence[Any]]) -> TextCheck:
    """Set each entity's text that differs from the DWG's (``[handle, kind, value, is_bytes]`` each, the
    value being the drawing's code-page bytes as latin1 characters when ``is_bytes``) to the DWG's."""
    check = TextCheck(unread=[(str(kind), str(handle)) for handle, kind in unread])
    encoding = doc.encoding
    for handle, name, value, is_bytes in texts:
        entity = doc.entitydb.get(str(handle))
        kind = "DIMENSION" if str(name).startswith("DIMENSION") else str(name)
        if entity is None or entity.dxftype() != kind:  # not carried over: said elsewhere
            continue
        raw = value.encode("latin1").decode(encoding, errors="replace") if is_bytes else value
        if "\\M+" in raw:  # old Asian escapes: the DXF holds them converted, not comparable here
            continue
        wanted = dxf_form(raw)
        check.checked += 1
        if kind == "MTEXT":
            if entity.text != wanted:  # type: ignore[attr-defined]
                entity.text = wanted  # type: ignore[attr-defined]
                check.mended[kind] += 1
        elif entity.dxf.get(_ATTRIBUTE[kind], "") != wanted:
            entity.dxf.set(_ATTRIBUTE[kind], wanted)
            check.mended[kind] += 1
    return check

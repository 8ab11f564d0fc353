"""What each open file looked like on disk when this host last read or wrote it.

It also remembers which undo steps each file was written with, so an undo past a save can say
that the file still holds the steps undone (a revert of an agent's call after a save).

A save in place over a file that changed since (another host with the same file open saved it,
or another program did) would silently throw those changes away; a save in place over a file
that was cut short when it was read would throw away what could not be read. Both are refused,
saying how to keep both or replace the file on purpose.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

from cadmcp.host.builtins.adapter import HostError
from cadmcp.host.builtins.ending import unfinished
from cadmcp.wire.echo import echo

__all__ = ["DiskStamps"]

MAX_FILES = 1000


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


class DiskStamps:
    """Modification time and size of files as this host last read or wrote them, and which of
    those it read were cut short (see `cadmcp.host.builtins.ending`) or read without part of them."""

    def __init__(self) -> None:
        self._stamps: dict[str, tuple[tuple[int, int], float]] = {}
        self._unfinished: dict[str, str] = {}
        self._lacking: dict[str, str] = {}  # what the reader left out of a file, said by its host
        self._steps: dict[str, tuple[tuple[str, ...], int]] = {}

    def note(
        self,
        path: Path | str | None,
        *,
        read: bool = False,
        steps: Sequence[str] = (),
        dropped: int = 0,
        lacking: str | None = None,
    ) -> None:
        """Remember ``path`` as it is now (call after reading it, with ``read`` and what the reader
        left out of it, ``lacking``, or writing it with the document's undo step names, ``steps``,
        most recent first, and how many older steps had fallen off its history, ``dropped``)."""
        if not path:
            return
        stamp = _stamp(Path(path))
        key = os.path.realpath(path)
        self._unfinished.pop(key, None)
        self._lacking.pop(key, None)
        self._steps.pop(key, None)
        if len(self._steps) >= MAX_FILES:
            self._steps.pop(next(iter(self._steps)))
        self._steps[key] = (tuple(steps), dropped)
        if read and (why := unfinished(Path(path))) is not None:
            self._unfinished[key] = why
        elif read and lacking:
            self._lacking[key] = lacking
        if stamp is None:
            self._stamps.pop(key, None)
            return
        if len(self._stamps) >= MAX_FILES and key not in self._stamps:
            self._stamps.pop(next(iter(self._stamps)))
            for marks in (self._unfinished, self._lacking):
                if len(marks) > MAX_FILES:
                    marks.pop(next(iter(marks)))
        self._stamps[key] = (stamp, time.time())

    def undone_in_file(self, path: Path | str | None, steps: Sequence[str], dropped: int = 0) -> list[str]:
        """The steps ``path`` was last written with that the document no longer has, given its undo
        step names now (``steps``, most recent first; ``dropped``: older steps fallen off its
        history): undone past the save, the file still holds them. Empty when unknown (a file this
        host neither read nor wrote). Steps are matched by their place since the document was
        opened, so steps falling off the history after the save are no difference."""
        written, written_dropped = self._steps.get(os.path.realpath(path), ((), 0)) if path else ((), 0)
        if not written:
            return []
        now = {dropped + k: name for k, name in enumerate(reversed(steps))}
        for j, name in enumerate(reversed(written)):  # oldest first, at its place since the opening
            place = written_dropped + j
            if place >= dropped and now.get(place) != name:  # fallen off since: the same step
                return list(written[: len(written) - j])
        return []

    def unfinished(self, path: Path | str | None) -> str | None:
        """Why the file at ``path`` looked cut short when it was read, or None."""
        return self._unfinished.get(os.path.realpath(path)) if path else None

    def warning(self, path: Path | str | None) -> str | None:
        """What the agent must be told of a file read cut short, or None."""
        why = self.unfinished(path)
        if why is None:
            return None
        return (
            f"{echo(Path(str(path)).name)} looks cut short ({why}): what was read may lack what came "
            "after, and it will not be saved over; save_document(filePath=...) saves it elsewhere."
        )

    def check_unchanged(self, path: Path | str | None) -> None:
        """Raise :class:`HostError` when ``path`` changed on disk since :meth:`note` (unknown: fine)."""
        if not path:
            return
        if (lacking := self._lacking.get(os.path.realpath(path))) is not None:
            raise HostError(
                f"{echo(Path(path).name)} was read without part of it ({lacking}), so "
                "saving over it would throw that part away: nothing was written. Save under another name "
                "with save_document(filePath=...), or replace the file on purpose with "
                f"save_document(filePath={echo(str(path), 200)}).",
                "failed",
            )
        if (why := self.unfinished(path)) is not None:
            raise HostError(
                f"{echo(Path(path).name)} looked cut short when it was read ({why}), so what is open may "
                "lack part of it, and saving over it would throw that part away: nothing was written. "
                "Save under another name with save_document(filePath=...), or replace the file on purpose "
                f"with save_document(filePath={echo(str(path), 200)}).",
                "failed",
            )
        known = self._stamps.get(os.path.realpath(path))
        if known is None:
            return
        stamp, when = known
        now = _stamp(Path(path))
        if now is None or now == stamp:
            return
        since = time.strftime("%H:%M:%S", time.localtime(when))
        raise HostError(
            f"{echo(Path(path).name)} changed on disk since this host read or saved it at {since} (another "
            "host with the same file open, or another program, saved it). Saving here would overwrite those "
            "changes, so nothing was written. Save this copy under another name with "
            f"save_document(filePath=...), or replace the file on purpose with save_document(filePath="
            f"{echo(str(path), 200)}).",
            "failed",
        )

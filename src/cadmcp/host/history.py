"""Per-document undo/redo history of named steps, shared by host adapters.

A step is anything with a ``name`` and ``undo()``/``redo()`` methods (see :class:`Step` for a
ready-made one built from two callables). The adapter records one step per successful
mutating ``execute_python_code`` run; :meth:`History.navigate` implements the
``navigate_history`` tool and returns its result shape::

    {"direction": "back", "navigated": 1, "operations": ["Add a wall"],
     "back_remaining": 3, "forward_available": 1, "depth": 64, "dropped": 0,
     "message": "Undid 1 step: Add a wall. 3 more can be undone, 1 redone."}

Recording a new step clears the redo stack; past ``max_depth`` the oldest step falls off and
:meth:`History.record` says which. The depth every host uses is ``CADMCP_UNDO_DEPTH``
(:func:`undo_depth`). Keep one :class:`History` per open document.
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, NotRequired, Protocol, TypedDict, runtime_checkable

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "MAX_UNDO_DEPTH",
    "UNDO_DEPTH_ENV",
    "ChangeReport",
    "History",
    "HistoryError",
    "NavigationResult",
    "Step",
    "Touched",
    "UndoableStep",
    "navigation_result",
    "undo_depth",
]

DEFAULT_MAX_DEPTH = 64
"""Undo steps kept per document unless CADMCP_UNDO_DEPTH says otherwise (IfcOpenShell's own default)."""
MAX_UNDO_DEPTH = 10_000
UNDO_DEPTH_ENV = "CADMCP_UNDO_DEPTH"

log = logging.getLogger(__name__)


def undo_depth(default: int = DEFAULT_MAX_DEPTH) -> int:
    """The undo depth CADMCP_UNDO_DEPTH asks for (1-10000), else ``default``.

    A value that is no whole number in range is logged and ``default`` is used.
    """
    raw = os.environ.get(UNDO_DEPTH_ENV, "").strip()
    if not raw:
        return default
    try:
        depth = int(raw)
    except ValueError:
        depth = 0
    if not 1 <= depth <= MAX_UNDO_DEPTH:
        log.warning(
            "%s=%r is not a whole number from 1 to %d: keeping %d undo steps", UNDO_DEPTH_ENV, raw,
            MAX_UNDO_DEPTH, default,
        )  # fmt: skip
        return default
    return depth


Direction = Literal["back", "forward"]


@runtime_checkable
class UndoableStep(Protocol):
    """One recorded change that knows how to revert and re-apply itself."""

    name: str

    def undo(self) -> None: ...

    def redo(self) -> None: ...


MAX_TOUCHED = 200
"""Object ids a step's report names per kind of change (the counts are always complete)."""


@dataclass(frozen=True)
class Touched:
    """What one step created, modified and deleted: object ids as the host's views and elements
    name them (DXF handles, IFC step ids, FreeCAD object names)."""

    created: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()

    def report(self) -> dict[str, dict[str, object]]:
        """``{"created": {"count": n, "ids": [...]}, ...}``, ids cut at :data:`MAX_TOUCHED`."""
        kinds = (("created", self.created), ("modified", self.modified), ("deleted", self.deleted))
        return {kind: {"count": len(ids), "ids": list(ids[:MAX_TOUCHED])} for kind, ids in kinds}


@dataclass
class Step:
    """An :class:`UndoableStep` made of two callables."""

    name: str
    undo_fn: Callable[[], None]
    redo_fn: Callable[[], None]
    changes: Touched | None = None
    """What the step changed, where the adapter can say."""

    def undo(self) -> None:
        self.undo_fn()

    def redo(self) -> None:
        self.redo_fn()


@runtime_checkable
class ChangeReport(Protocol):
    """A step that says which objects it changed (:class:`Step` with ``changes``, IFC's steps)."""

    changes: Touched | None


class NavigationResult(TypedDict):
    """Result of ``navigate_history``."""

    direction: Direction
    navigated: int
    operations: list[str]
    back_remaining: int
    forward_available: int
    depth: int
    """Steps the history keeps; older ones fall off."""
    dropped: int
    """Steps that fell off the history since the document was opened (they can no longer be undone)."""
    message: str
    savedFileHolds: NotRequired[list[str]]
    """Steps undone past the document's last save: its file on disk still holds them."""


class HistoryError(Exception):
    """Bad navigation arguments, or a step failed to undo/redo (the message says which)."""


class History:
    """Bounded undo/redo stacks of named steps for one document."""

    def __init__(self, max_depth: int | None = None) -> None:
        """``max_depth`` steps are kept; None: :func:`undo_depth` (CADMCP_UNDO_DEPTH, default 64)."""
        max_depth = undo_depth() if max_depth is None else max_depth
        if max_depth < 1:
            raise ValueError("max_depth must be at least 1")
        self.max_depth = max_depth
        self.dropped = 0
        """Steps that fell off the bottom since the history was made or cleared."""
        self.recorded = 0
        """Steps recorded since the history was made (never reset); each kept step's number is its place
        in that count (:meth:`undo_ids`)."""
        self._numbers: dict[int, int] = {}
        """``id()`` of each kept step -> its number."""
        self._floor = 0
        """The number of the newest step that fell off the bottom (0: none): applied for good."""
        self._back: deque[UndoableStep] = deque()
        self._forward: list[UndoableStep] = []

    def record(self, step: UndoableStep) -> str:
        """Add a step that has just been applied; clears the redo stack.

        Returns the name of the oldest step if it fell off to make room, else ''.
        """
        for gone in self._forward:
            self._numbers.pop(id(gone), None)
        self._forward.clear()
        self._back.append(step)
        self.recorded += 1
        self._numbers[id(step)] = self.recorded
        fell = ""
        while len(self._back) > self.max_depth:
            oldest = self._back.popleft()
            self._floor = self._numbers.pop(id(oldest), self._floor)
            fell = oldest.name
            self.dropped += 1
        return fell

    def clear(self) -> None:
        """Forget all steps (e.g. after the document was reloaded)."""
        self._back.clear()
        self._forward.clear()
        self._numbers.clear()
        self._floor = self.recorded  # whatever the document holds now is where it stands
        self.dropped = 0

    @property
    def back_remaining(self) -> int:
        """Steps that can be undone."""
        return len(self._back)

    @property
    def forward_available(self) -> int:
        """Steps that can be redone."""
        return len(self._forward)

    def last_touched(self) -> Touched | None:
        """What the most recent undoable step changed, where it says (:class:`ChangeReport`)."""
        step = self._back[-1] if self._back else None
        return step.changes if isinstance(step, ChangeReport) else None

    def undo_names(self) -> list[str]:
        """Names of undoable steps, most recent first."""
        return [step.name for step in reversed(self._back)]

    def redo_names(self) -> list[str]:
        """Names of redoable steps, next first."""
        return [step.name for step in reversed(self._forward)]

    def undo_ids(self) -> list[int | None]:
        """Numbers of the undoable steps (in the order they were recorded), most recent first: two
        steps of the same name are told apart."""
        return [self._numbers.get(id(step)) for step in reversed(self._back)]

    def position(self) -> int:
        """Where the document's history stands: the number of the newest step applied (0: none, as
        opened; a step that fell off the bottom stays applied). A document saved at one position
        and back at it holds what its file holds."""
        return self._numbers.get(id(self._back[-1]), -1) if self._back else self._floor

    def navigate(self, direction: str, steps: int = 1) -> NavigationResult:
        """Undo (``back``) or redo (``forward``) up to ``steps`` steps.

        Asking for more steps than exist moves as far as possible; an empty stack is not an
        error (``navigated`` is 0 and the message says so). A step that fails stays where it
        was and raises :class:`HistoryError` naming the steps already moved.
        """
        if direction not in ("back", "forward"):
            raise HistoryError(f"direction must be 'back' (undo) or 'forward' (redo), not {direction!r}.")
        if not isinstance(steps, int) or steps < 1:
            raise HistoryError(f"steps must be a whole number of at least 1, not {steps!r}.")
        back = direction == "back"
        source: deque[UndoableStep] | list[UndoableStep] = self._back if back else self._forward
        done: list[str] = []
        for _ in range(min(steps, len(source))):
            step = source[-1]
            try:
                step.undo() if back else step.redo()
            except Exception as exc:
                moved = f" after {'undoing' if back else 'redoing'} {done}" if done else ""
                raise HistoryError(
                    f"Could not {'undo' if back else 'redo'} step {step.name!r}{moved}: {exc}"
                ) from exc
            source.pop()
            if back:
                self._forward.append(step)
            else:
                self._back.append(step)
            done.append(step.name)
        return navigation_result(
            back, done, self.back_remaining, self.forward_available, self.max_depth, self.dropped
        )


def _steps(n: int) -> str:
    return f"{n} step{'s' if n != 1 else ''}"


def navigation_result(
    back: bool,
    done: list[str],
    back_remaining: int,
    forward_available: int,
    depth: int,
    dropped: int = 0,
) -> NavigationResult:
    """What `navigate_history` answers after undoing (`back`) or redoing the steps in `done`.

    The message says how many steps remain each way and, once the undo side is empty, whether
    older steps fell off the history (kept: ``depth``).
    """
    if done:
        verb = "Undid" if back else "Redid"
        message = f"{verb} {_steps(len(done))}: " + "; ".join(done) + "."
    elif back:
        message = "Nothing to undo: the history has no earlier steps."
    else:
        message = "Nothing to redo: there are no undone steps to re-apply."
    message += f" Now {_steps(back_remaining)} can be undone, {forward_available} redone."
    if back and back_remaining == 0 and dropped:
        message += (
            f" {_steps(dropped)} older than these fell off the history (it keeps {depth}) and can no longer "
            "be undone."
        )
    return NavigationResult(
        direction="back" if back else "forward",
        navigated=len(done),
        operations=done,
        back_remaining=back_remaining,
        forward_available=forward_available,
        depth=depth,
        dropped=dropped,
        message=message,
    )

"""navigate_history's semantics, once: move whole steps back or forward, report what moved.

Over any :class:`UndoStack` (the application's own undo stack, or a
:class:`cadmcp.host.history.History` through :class:`HistoryStack`). Asking for more steps
than exist moves as far as possible; an empty stack is not an error; a step that fails stops
the walk and says which steps had already moved.
"""

from __future__ import annotations

from collections.abc import Callable

from cadmcp.host.builtins.adapter import HostError, UndoStack
from cadmcp.host.history import History, HistoryError, NavigationResult, Touched, navigation_result
from cadmcp.wire.echo import echo

__all__ = ["MAX_STEPS", "HistoryStack", "navigate"]

MAX_STEPS = 1000
"""More steps than any application keeps; bounds the loop."""


def navigate(stack: UndoStack, direction: str, steps: int) -> NavigationResult:
    """Undo (``back``) or redo (``forward``) up to ``steps`` steps of ``stack``."""
    if direction not in ("back", "forward"):
        raise HostError(
            f"direction must be 'back' (undo) or 'forward' (redo), not {echo(direction)}.", "invalid"
        )
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise HostError(f"steps must be a whole number of at least 1, not {echo(steps)}.", "invalid")
    back = direction == "back"
    available = stack.undo_names() if back else stack.redo_names()
    done: list[str] = []
    for name in available[: min(steps, MAX_STEPS)]:
        try:
            stack.undo() if back else stack.redo()
        except Exception as exc:
            moved = f" after {'undoing' if back else 'redoing'} {done}" if done else ""
            raise HostError(f"Could not {'undo' if back else 'redo'} step {name!r}{moved}: {exc}") from exc
        done.append(name)
    return navigation_result(
        back, done, len(stack.undo_names()), len(stack.redo_names()), stack.depth(), stack.dropped()
    )


class HistoryStack:
    """A :class:`History` of recorded steps as an :class:`UndoStack`.

    ``moved`` runs after every step that moved (e.g. to mark the document modified).
    """

    def __init__(self, history: History, moved: Callable[[], None] | None = None) -> None:
        self.history = history
        self._moved = moved

    def undo_names(self) -> list[str]:
        return self.history.undo_names()

    def touched(self) -> Touched | None:
        return self.history.last_touched()

    def redo_names(self) -> list[str]:
        return self.history.redo_names()

    def depth(self) -> int:
        return self.history.max_depth

    def dropped(self) -> int:
        return self.history.dropped

    def undo_ids(self) -> list[int | None]:
        return self.history.undo_ids()

    def _step(self, direction: str) -> None:
        try:
            self.history.navigate(direction, 1)
        except HistoryError as exc:
            cause = exc.__cause__
            raise HostError(str(cause) if cause is not None else str(exc)) from exc
        if self._moved is not None:
            self._moved()

    def undo(self) -> None:
        self._step("back")

    def redo(self) -> None:
        self._step("forward")

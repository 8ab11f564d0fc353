"""execute_python_code's semantics, once: one run is one undo step or nothing at all.

The adapter gives a fresh namespace and transaction hooks (:class:`ScriptRun`); this module
names the step, runs the code through :func:`cadmcp.host.pyexec.run_code` and words the
notes the same for every application.
"""

from __future__ import annotations

from cadmcp.host import pyexec
from cadmcp.host.builtins.adapter import DocumentAdapter, RecordedStep, ScriptRun

__all__ = ["MAX_STEP_NAME", "run_script", "run_transaction", "step_name"]

MAX_STEP_NAME = 80


def _clip(text: str) -> str:
    return text if len(text) <= MAX_STEP_NAME else text[: MAX_STEP_NAME - 1] + "…"


def step_name(code: str, description: str | None = None) -> str:
    """The undo step's name: ``description``, else the script's leading comment, else its first line.

    A PEP 723 block (``# /// script`` … ``# ///``) and a shebang are not a description.
    """
    if description and description.strip():
        return _clip(" ".join(description.split()))
    in_metadata = False
    for line in code.splitlines():
        text = line.strip()
        if not text:
            continue
        if in_metadata:
            in_metadata = text != "# ///"
            continue
        if text.startswith("# /// "):
            in_metadata = True
            continue
        if text.startswith("#!"):
            continue
        if text.startswith("#"):
            comment = text.lstrip("#").strip()
            if comment:
                return _clip(comment)
            continue
        return _clip(text)
    return "Python code"


def run_script(adapter: DocumentAdapter, code: str, description: str | None) -> pyexec.ExecResult:
    """Run ``code`` on the adapter's active document as one undo step (rolled back on failure)."""
    run = adapter.script(step_name(code, description))
    return run_transaction(run, code, timeout=adapter.exec_timeout, noun=adapter.profile.noun)


def run_transaction(run: ScriptRun, code: str, *, timeout: float | None, noun: str) -> pyexec.ExecResult:
    """Run ``code`` in ``run``'s namespace: commit it as one step, or roll it back on any failure."""

    def commit(_token: object) -> str | None:
        step = run.commit()
        return None if step is None else _recorded(step)

    def rollback(_token: object) -> str:
        if run.rollback():
            return (
                f"[ROLLBACK] Every change the script made was undone; the {noun} is as it was before it ran."
            )
        return f"[ROLLBACK] The script had not changed the {noun}; nothing was undone."

    return pyexec.run_code(
        code,
        run.namespace,
        timeout=timeout,
        begin=run.begin,
        commit=commit,
        rollback=rollback,
    )


def _recorded(step: RecordedStep) -> str:
    if not step.recorded:
        return f"[WARNING] {step.warning}"
    detail = f" ({step.detail})" if step.detail else ""
    note = f"[UNDO STEP] Recorded {step.name!r}{detail}. Undo it with navigate_history(direction='back')."
    if step.undo_steps is not None:
        kept = f" (the history keeps {step.depth})" if step.depth is not None else ""
        note += f" {step.undo_steps} step{'s' if step.undo_steps != 1 else ''} can be undone now{kept}."
    if step.dropped:
        note += (
            f" The oldest step, {step.dropped!r}, fell off the history to make room: it can no longer be "
            "undone."
        )
    if step.warning:
        note += f"\n[WARNING] {step.warning}"
    return note

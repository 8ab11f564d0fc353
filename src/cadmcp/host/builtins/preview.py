"""A preview of execute_python_code (`dryRun`), and applying exactly what was previewed.

The script runs inside the document's own transaction as usual; instead of committing, the
host takes an inventory of the document (every object by id: kind, name and a digest of its
content), compares it with the inventory from before the run, renders the after-picture,
and rolls the transaction back. The answer says what would be created, modified and deleted
(by kind and name: a count and a sample), shows the before- and after-pictures, and gives
the document's revision before and after: a digest of the whole inventory.

Applying a preview (`previewed`) first checks that the document is still at the previewed
revision (someone may have changed it meanwhile: then nothing runs), runs the script, and
commits only if the document ends at the previewed after-revision; otherwise it is rolled back.

An adapter offers previews by having `inventory()` (and `forget_views()` when it caches
renderings); others answer that this host cannot preview. An adapter whose rollback would cost
the document something (FreeCAD drops the redo steps at the first change of any transaction,
aborted or not) runs previews elsewhere with `preview_place()` (:class:`Isolating`). An
inventory whose entries carry their parts (:class:`Entry`, e.g. FreeCAD's properties) names the
parts of each modified object that changed; a script run with `prepare()` (e.g. FreeCAD's
recompute) is brought to what its commit would record before the after-inventory and -picture
are taken.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, runtime_checkable

import mcp_types as types

from cadmcp.host import pyexec, sideeffects
from cadmcp.host.builtins.adapter import DocumentAdapter, HostError
from cadmcp.host.builtins.scripts import run_transaction, step_name

SAMPLE = 12
"""Objects named per change kind (the count is always complete)."""
PICTURE_WIDTH = 640

KINDS_NAMED = 4
"""Kinds of object named in a preview's sentence; the rest are counted together (`report` has all)."""
MAX_PARTS = 24
"""Changed parts named per modified object in the sample."""


class Entry(NamedTuple):
    """One object of an inventory whose parts (e.g. properties) are told apart."""

    kind: str
    name: str
    digest: str
    """Digest of the whole content (its parts included)."""
    parts: Mapping[str, str]
    """Part name -> digest of that part."""


Inventory = Mapping[str, tuple[str, str, str] | Entry]
"""Object id -> (kind, name, digest of its content), or an :class:`Entry` with its parts."""


@runtime_checkable
class Previewable(Protocol):
    """What an adapter adds to offer previews."""

    def inventory(self, baseline: Inventory | None = None) -> Inventory:
        """Every object of the active document: id -> (kind, name, content digest). With the
        inventory from before a change, objects created since get ids that repeat when the same
        change is made again (where the application never reuses its own ids)."""
        ...


@runtime_checkable
class Preparable(Protocol):
    """A script run that has work to do between the code and the commit (e.g. a recompute)."""

    def prepare(self) -> None:
        """Bring the document to what a commit would record, leaving the transaction open."""
        ...


@runtime_checkable
class Cautioning(Protocol):
    """A script run that can tell, before its commit, what the change leaves out of step (e.g.
    shapes an edit should have changed): the same warning the applied run's answer gives."""

    def caution(self) -> str:
        """The warning, or "" when there is none."""
        ...


@runtime_checkable
class Isolating(Protocol):
    """An adapter that may run a preview somewhere other than in the active document itself."""

    def preview_place(self) -> contextlib.AbstractContextManager[list[str]]:
        """Inside the block, the active document is where the preview runs (the document itself, or
        a copy of it); the notes yielded say so, and go into the preview's answer."""
        ...


def _prepare(run: object) -> None:
    if isinstance(run, Preparable):
        run.prepare()


def revision(inventory: Inventory) -> str:
    """The document's revision: a digest of its whole inventory (equal content, equal revision)."""
    h = hashlib.blake2b(digest_size=12)
    for key in sorted(inventory):
        kind, name, digest = inventory[key][:3]
        h.update(f"{key}\x1f{kind}\x1f{name}\x1f{digest}\x1e".encode())
    return h.hexdigest()


@dataclass(frozen=True)
class Difference:
    """What a run changed, by object."""

    created: list[tuple[str, str, str]]
    modified: list[tuple[str, str, str]]
    deleted: list[tuple[str, str, str]]
    parts: Mapping[str, list[str]]
    """Modified object id -> the parts that changed (where the inventory tells parts apart)."""

    @classmethod
    def between(cls, before: Inventory, after: Inventory) -> Difference:
        def rows(keys: Any, side: Inventory) -> list[tuple[str, str, str]]:
            return sorted(((k, side[k][0], side[k][1]) for k in keys), key=lambda r: (r[2] == "", r[1], r[0]))

        created = after.keys() - before.keys()
        deleted = before.keys() - after.keys()
        modified = {k for k in before.keys() & after.keys() if before[k][:3] != after[k][:3]}
        parts: dict[str, list[str]] = {}
        for key in modified:
            old, new = before[key], after[key]
            if isinstance(old, Entry) and isinstance(new, Entry):
                names = old.parts.keys() | new.parts.keys()
                parts[key] = sorted(n for n in names if old.parts.get(n) != new.parts.get(n))
        return cls(rows(created, after), rows(modified, after), rows(deleted, before), parts)

    @property
    def is_empty(self) -> bool:
        return not (self.created or self.modified or self.deleted)

    def report(self) -> dict[str, Any]:
        def part(rows: list[tuple[str, str, str]]) -> dict[str, Any]:
            return {
                "count": len(rows),
                "byKind": _by_kind(rows),
                "sample": [
                    {
                        "id": i,
                        "kind": k,
                        **({"name": n} if n else {}),
                        **({"changed": self.parts[i][:MAX_PARTS]} if self.parts.get(i) else {}),
                    }
                    for i, k, n in rows[:SAMPLE]
                ],
            }

        return {"created": part(self.created), "modified": part(self.modified), "deleted": part(self.deleted)}

    def sentence(self) -> str:
        def words(label: str, rows: list[tuple[str, str, str]]) -> str:
            if not rows:
                return f"{label} nothing"
            counts = _by_kind(rows)
            ranked = list(counts)
            kinds = ", ".join(f"{counts[k]} {k}" for k in ranked[:KINDS_NAMED])
            if others := sum(counts[k] for k in ranked[KINDS_NAMED:]):
                kinds += f", {others} more"
            return f"{label} {len(rows)} ({kinds})"

        return "; ".join(
            (words("creates", self.created), words("modifies", self.modified), words("deletes", self.deleted))
        )


def _by_kind(rows: list[tuple[str, str, str]]) -> dict[str, int]:
    """Objects per kind, the kinds whose objects have names first (what a person names: doors, walls,
    furniture; not the property values and placements that go with them), then by count."""
    named = Counter(k for _, k, n in rows if n)
    counts = Counter(k for _, k, _ in rows)
    return {k: counts[k] for k in sorted(counts, key=lambda k: (k not in named, -counts[k], k))}


def _previewable(adapter: DocumentAdapter) -> Previewable:
    if not isinstance(adapter, Previewable):
        raise HostError(
            f"The {adapter.profile.app} host cannot preview scripts (dryRun); run it without dryRun, "
            "or preview on a DXF, IFC or FreeCAD host.",
            "invalid",
        )
    return adapter


def _picture(adapter: DocumentAdapter, notes: list[str], when: str) -> bytes | None:
    """The picture, its view's notes (layers hidden, objects not drawn) added to ``notes`` once: the
    person approving from the pictures must know what they cannot show."""
    try:
        shot = adapter.screenshot(PICTURE_WIDTH, None, {})
    except Exception as exc:  # a picture that cannot be made is said, the preview still stands
        notes.append(f"The {when}-picture could not be rendered ({_why(exc)}).")
        return None
    notes.extend(note for note in shot.notes if note not in notes)
    return shot.png


def _why(exc: BaseException) -> str:
    said = " ".join(str(exc).split())[:200]
    return f"{type(exc).__name__}: {said}" if said else type(exc).__name__


def _forget_views(adapter: DocumentAdapter) -> None:
    forget = getattr(adapter, "forget_views", None)
    if callable(forget):
        forget()


class _Previewed(Exception):
    """Raised from the commit hook so that the run is rolled back after its report."""


def preview_script(adapter: DocumentAdapter, code: str, description: str | None) -> types.CallToolResult:
    """Run `code` in a transaction, report and picture what it changed, and roll it back."""
    source = _previewable(adapter)
    place = adapter.preview_place() if isinstance(adapter, Isolating) else contextlib.nullcontext([])
    with place as notes:
        return _preview(adapter, source, code, description, list(notes))


def _preview(
    adapter: DocumentAdapter, source: Previewable, code: str, description: str | None, notes: list[str]
) -> types.CallToolResult:
    before = dict(source.inventory())
    before_png = _picture(adapter, notes, "before")
    found: dict[str, Any] = {}
    run = adapter.script(step_name(code, description))
    tried: list[str] = []

    def begin() -> object:
        token = run.begin()
        sideeffects.start(tried)  # the script's own code only: not the inventory, not the pictures
        return token

    def report(_token: object) -> str | None:
        sideeffects.stop()
        if tried:  # it went on past a refusal: what it did is not what the real run would do
            raise _Previewed
        _prepare(run)
        found["caution"] = run.caution() if isinstance(run, Cautioning) else ""
        after = dict(source.inventory(before))
        found["difference"] = Difference.between(before, after)
        found["after"] = revision(after)
        try:
            _forget_views(adapter)  # cached meshes must not outlive the rolled-back change
        except Exception as exc:  # no picture of the change can be trusted: said, the preview stands
            notes.append(f"The after-picture could not be rendered ({_why(exc)}).")
        else:
            found["png"] = _picture(adapter, notes, "after")
        raise _Previewed

    def rollback(_token: object) -> str:
        sideeffects.stop()
        run.rollback()
        _forget_views(adapter)
        return ""

    try:
        result = pyexec.run_code(
            code, run.namespace, timeout=adapter.exec_timeout, begin=begin, commit=report, rollback=rollback
        )
    finally:
        sideeffects.stop()
    if tried:
        return _not_previewable(tried)
    difference: Difference | None = found.get("difference")
    if difference is None:  # the script failed: it was rolled back like any failed run
        result.notes.append("Preview only: nothing was changed.")
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result.text())], is_error=True
        )
    before_revision = revision(before)
    structured = {
        "dryRun": True,
        **difference.report(),
        "revision": {"before": before_revision, "after": found["after"]},
        "applyWith": {"previewed": f"{before_revision}:{found['after']}"},
        "notes": notes,
    }
    result.error, result.status, result.notes = None, "ok", []
    text = (
        f"Preview (nothing was changed; the run was rolled back): the script {difference.sentence()}. "
        f"To apply exactly this change, call execute_python_code again with the same code and "
        f"previewed={structured['applyWith']['previewed']!r}."
    )
    if found["caution"]:
        text += f"\n[WARNING] {found['caution']}"
        structured["warnings"] = [found["caution"]]
    if before_png is not None and before_png == found.get("png") and not difference.is_empty:
        same = (
            "The before- and after-pictures are the same: this view does not show the change (inside "
            "the model, behind other objects, too small, or not drawn). After applying it, view_screenshot "
            "with mark and another view shows it."
        )
        notes.append(same)
        text += f"\n[SAME PICTURES] {same}"
    missing = [n for n in notes if "-picture could not be rendered" in n]
    if missing:  # said beside the pictures there are, not only in the structured notes
        text += "\n[NO PICTURE] " + " ".join(missing)
    printed = result.text() if (result.output or result.has_value) else ""
    content: list[Any] = [types.TextContent(type="text", text=text + (f"\n\n{printed}" if printed else ""))]
    for label, png in (("before", before_png), ("after", found.get("png"))):
        if png is not None:
            content.append(types.TextContent(type="text", text=f"{label}:"))
            content.append(
                types.ImageContent(type="image", data=base64.b64encode(png).decode(), mime_type="image/png")
            )
    return types.CallToolResult(content=content, structured_content=structured, is_error=False)


def _not_previewable(tried: list[str]) -> types.CallToolResult:
    """The answer of a preview whose script acts outside the document: what it tried, and that the
    document is as it was."""
    said = "; ".join(tried)
    text = (
        f"No preview: the script {said}, outside the document, which a preview cannot do without doing "
        "it for real. It was stopped there and rolled back: nothing changed. Run it without dryRun to "
        "apply it (where the person is asked before changes, they are asked without a preview, told "
        "what it does outside the document)."
    )
    structured = {"dryRun": True, "outsideDocument": tried, "applyWith": None, "notes": []}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured, is_error=False
    )


def apply_previewed(
    adapter: DocumentAdapter, code: str, description: str | None, previewed: str
) -> pyexec.ExecResult | str:
    """Run `code` as one undo step only if the document is at the previewed revision and ends at
    the previewed result; an error text (nothing changed) otherwise."""
    source = _previewable(adapter)
    expected_before, _, expected_after = previewed.partition(":")
    if not expected_before or not expected_after:
        raise HostError("previewed must be the applyWith.previewed value of a dryRun answer.", "invalid")
    current = dict(source.inventory())
    now = revision(current)
    if now != expected_before:
        return (
            f"[NOT APPLIED] The document changed since the preview (revision {now}, previewed "
            f"{expected_before}); nothing ran. Preview again (dryRun) and confirm the new preview."
        )
    run = adapter.script(step_name(code, description))
    mismatch: list[str] = []

    class _Checked:
        namespace = run.namespace

        def begin(self) -> None:
            run.begin()

        def commit(self) -> Any:
            _prepare(run)
            after = revision(source.inventory(current))
            if after != expected_after:
                mismatch.append(after)
                raise HostError(
                    f"the run ended at revision {after}, not the previewed {expected_after} (the script does "
                    "not give the same result twice, e.g. it uses time or random numbers); it was rolled "
                    "back and nothing changed",
                    "invalid",
                )
            return run.commit()

        def rollback(self) -> bool:
            done = run.rollback()
            _forget_views(adapter)
            return done

    result = run_transaction(_Checked(), code, timeout=adapter.exec_timeout, noun=adapter.profile.noun)
    if mismatch:
        return f"[NOT APPLIED] {result.error or ''}".strip()
    return result

"""Change tracking for ezdxf documents: exact undo/redo without copying the document.

ezdxf has no undo, and whole-document snapshots cost seconds at 100k entities. Instead,
while agent code runs, :class:`ChangeTracker` hooks the few places through which ezdxf
state changes and saves the *previous* state of each entity the code reaches for, just
before it can change (copy on first touch):

* ``DXFEntity.__getattribute__`` — reading a method, a property or a mutable attribute
  (points, vertices, paths, xdata, entity spaces …) of an entity saves its state first;
  reading plain immutable values (``e.dxf``, ``e.text``, a handle) does not;
* ``DXFEntity.__setattr__``/``__delattr__`` and mutating dunders (``__setitem__``,
  ``__delitem__``, ``__iadd__``) of entity classes;
* writes through the DXF attribute namespace (``e.dxf.layer = …``, ``set``, ``update``,
  ``discard``, ``unprotected_set``);
* the entity database (``EntityDB.__setitem__``/``__delitem__``/``discard``/``purge``),
  which records created and deleted handles.

Document-level containers that are not entities (header variables, classes, table
indexes, layouts, objects section, handle seed, …) are small and are captured shallowly
before the run. After the run :meth:`ChangeTracker.finish` compares and keeps only what
changed as a :class:`ChangeSet`; undo and redo swap saved and live entity state in place,
so both cost time proportional to the change, not to the drawing.

Cost: a few milliseconds before a run whatever the drawing size; scripts that touch many
entities pay one state copy per touched entity. Code that mutates ezdxf objects reached
by other means than an entity (e.g. a ``Vec3``-like mutable kept from a previous run) is
not seen; ezdxf keeps its entity data in immutable values, so this does not arise in
practice.
"""

from __future__ import annotations

import array
import copy
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ezdxf.document import Drawing
from ezdxf.entities.dxfentity import DXFEntity
from ezdxf.entities.dxfns import DXFNamespace
from ezdxf.entitydb import EntityDB, EntitySpace
from ezdxf.layouts.base import BaseLayout
from ezdxf.math import Vec2, Vec3

from cadmcp.host.history import Touched
from cadmcp.hosts.dxf.inventory import PARTS, changed_header, part_owners

__all__ = ["ChangeSet", "ChangeTracker", "is_active", "tracked"]

_MISSING: Any = object()
_object_getattribute = object.__getattribute__
_IMMUTABLE = frozenset({str, int, float, bool, type(None), Vec3, Vec2, bytes, complex})
_SAFE_NAMES = frozenset(
    {
        "dxf",
        "doc",
        "dxftype",
        "is_alive",
        "is_virtual",
        "is_bound",
        "is_copy",
        "uuid",
        "DXFTYPE",
        "DXFATTRIBS",
        "MIN_DXF_VERSION_FOR_EXPORT",
        "dxfattribs",
        "has_xdata",
        "get_xdata",
        "has_xdata_list",
        "has_app_data",
        "get_app_data",
        "has_reactors",
        "get_reactors",
        "has_extension_dict",
        "get_extension_dict",
        "graphic_properties",
        "ocs",
        "has_source_of_copy",
        "has_source_block_reference",
    }
)
_MUTATING_DUNDERS = ("__setitem__", "__delitem__", "__iadd__")
_NAMESPACE_MUTATORS = (
    "__setattr__",
    "__delattr__",
    "set",
    "unprotected_set",
    "update",
    "discard",
    "rewire",
    "reset_handles",
)
_DB_MUTATORS = ("__setitem__", "__delitem__", "discard", "purge")

_active: ChangeTracker | None = None


@dataclass
class _SpaceState:
    """Saved content of an entity space that must keep its identity."""

    space: EntitySpace
    entities: list[DXFEntity]


@dataclass
class _ContainerDelta:
    obj: Any
    key: str
    kind: str  # "value" | "dict" | "list" | "set" | "space"
    before: Any
    after: Any


@dataclass
class ChangeSet:
    """What one run changed; :meth:`undo` and :meth:`redo` apply it either way."""

    db: EntityDB
    entities: list[tuple[DXFEntity, dict[str, Any]]] = field(default_factory=list)
    untracked: list[str] = field(default_factory=list)
    """Entities whose previous state could not be copied: undo cannot restore them exactly."""
    db_entries: list[tuple[str, Any, Any]] = field(default_factory=list)
    containers: list[_ContainerDelta] = field(default_factory=list)

    @property
    def is_empty(self) -> bool:
        """True when the run changed nothing."""
        return not (self.entities or self.db_entries or self.containers or self.untracked)

    @property
    def summary(self) -> dict[str, int]:
        """Counts of created, deleted and modified objects, as a preview's inventory counts them
        (`cadmcp.hosts.dxf.inventory`): an object whose only change is which entities it holds (a
        block's or a layout's entity space) is not modified, the entities added to it or taken from
        it are counted themselves; an object replaced under its handle (an exploded block's ATTRIB
        become a TEXT) is modified; so is a header variable set to a new value (created, deleted:
        one that was not set, or is set no more)."""
        created, removed, replaced = set(), set(), set()
        parts: list[Any] = []
        """Parts (a POLYLINE's vertices) made, removed or changed: their live owner is modified."""
        for handle, before, after in self.db_entries:
            entity = after if before is _MISSING else before
            if entity is not _MISSING and type(entity).DXFTYPE in PARTS:
                parts.append(entity)
            elif before is _MISSING:
                created.add(handle)
            elif after is _MISSING:
                removed.add(handle)
            else:
                replaced.add(handle)
        destroyed: set[Any] = set()
        modified: set[Any] = set(replaced)
        for entity, saved in self.entities:
            live = _object_getattribute(entity, "__dict__")
            namespace = live.get("dxf")
            if type(entity).DXFTYPE in PARTS:
                parts.append(entity)
            elif namespace is None:  # destroyed: deleted, unless another object took its handle
                before = saved.get("dxf")
                destroyed.add(before.__dict__.get("handle") if before is not None else id(entity))
            elif namespace.__dict__.get("handle") not in created and not _members_only(saved, live):
                modified.add(namespace.__dict__.get("handle") or id(entity))
        deleted = removed | (destroyed - replaced)
        if parts:  # a part of a deleted owner is not found: the owner's deletion counts
            owner_of = part_owners(self.db.values())
            owners = {owner_of.get(id(part)) for part in parts}
            modified |= {o for o in owners if o is not None and o not in created and o not in deleted}
        counts = {"created": len(created), "deleted": len(deleted), "modified": len(modified)}
        for delta in self.containers:
            if delta.key == "hdrvars" and delta.kind == "dict":  # the header's variables, by name
                for name in changed_header(delta.before, delta.after):
                    side = (
                        "created"
                        if name not in delta.before
                        else "deleted"
                        if name not in delta.after
                        else "modified"
                    )
                    counts[side] += 1
        return counts

    @property
    def touched(self) -> Touched:
        """The handles of the graphical entities created, modified and deleted (what views draw and
        elements name; table entries, layouts and objects are left out)."""
        from ezdxf.entities import DXFGraphic

        created, deleted, modified = [], [], []
        parts: list[Any] = []  # a polyline's vertices: their owner is what changed
        for handle, before, after in self.db_entries:
            entity = after if before is _MISSING else before
            if entity is not _MISSING and type(entity).DXFTYPE in PARTS:
                parts.append(entity)
            elif before is _MISSING and isinstance(after, DXFGraphic):
                created.append(handle)
            elif after is _MISSING and isinstance(before, DXFGraphic):
                deleted.append(handle)
        for entity, saved in self.entities:
            if type(entity).DXFTYPE in PARTS:
                parts.append(entity)
                continue
            if not isinstance(entity, DXFGraphic):
                continue
            live = _object_getattribute(entity, "__dict__").get("dxf")
            namespace = live or saved.get("dxf")
            handle = namespace.__dict__.get("handle") if namespace is not None else None
            if isinstance(handle, str):
                (modified if live is not None else deleted).append(handle)  # destroyed: no namespace
        if parts:
            owner_of = part_owners(self.db.values())
            modified += [o for o in (owner_of.get(id(part)) for part in parts) if o is not None]
        gone = set(created) | set(deleted)
        modified = [h for h in dict.fromkeys(modified) if h not in gone]
        return Touched(tuple(created), tuple(modified), tuple(dict.fromkeys(deleted)))

    def undo(self) -> None:
        """Put the document back to its state before the run."""
        self._swap_entities()
        self._apply_db(back=True)
        for delta in self.containers:
            _restore(delta, delta.before)

    def redo(self) -> None:
        """Re-apply the run's changes after :meth:`undo`."""
        self._swap_entities()
        self._apply_db(back=False)
        for delta in self.containers:
            _restore(delta, delta.after)

    def _swap_entities(self) -> None:
        swapped = []
        for entity, saved in self.entities:
            live = _object_getattribute(entity, "__dict__")
            current = dict(live)
            restored = dict(saved)
            for key, value in saved.items():
                if type(value) is _SpaceState:
                    # entity spaces are shared with layout objects: restore in place
                    current[key] = _SpaceState(value.space, list(value.space.entities))
                    value.space.entities[:] = value.entities
                    restored[key] = value.space
            live.clear()
            live.update(restored)
            swapped.append((entity, current))
        self.entities = swapped

    def _apply_db(self, *, back: bool) -> None:
        database = self.db._database
        for handle, before, after in self.db_entries:
            value = before if back else after
            if value is _MISSING:
                database.pop(handle, None)
            else:
                database[handle] = value


def _restore(delta: _ContainerDelta, state: Any) -> None:
    if delta.kind == "value":
        if state is _MISSING:
            delattr(delta.obj, delta.key)
        else:
            setattr(delta.obj, delta.key, state)
        return
    target = getattr(delta.obj, delta.key)
    if delta.kind == "dict":
        target.clear()
        target.update(state)
    elif delta.kind == "list":
        target[:] = state
    elif delta.kind == "set":
        target.clear()
        target.update(state)
    elif delta.kind == "space":
        target.entities[:] = state


class ChangeTracker:
    """Records the changes to one document while code runs inside :func:`tracked`."""

    def __init__(self, doc: Drawing) -> None:
        self.doc = doc
        self.db = doc.entitydb
        self._saved: dict[int, tuple[DXFEntity, dict[str, Any]]] = {}
        self._db_before: dict[str, Any] = {}
        self._containers: list[tuple[Any, dict[str, tuple[str, Any]]]] = []
        self._failed: dict[int, str] = {}
        self._busy = False

    # -- before -------------------------------------------------------------------------
    def start(self) -> None:
        """Capture the document-level containers (cheap: no per-entity work)."""
        self._containers = [(obj, _capture(obj)) for obj in _doc_containers(self.doc)]

    # -- during -------------------------------------------------------------------------
    def touch(self, entity: DXFEntity) -> None:
        """Save ``entity``'s state unless already saved, new in this run, or not in the document."""
        key = id(entity)
        if key in self._saved or key in self._failed or self._busy:
            return
        try:
            namespace = _object_getattribute(entity, "__dict__").get("dxf")
        except AttributeError:
            return
        if namespace is None:
            return
        handle = namespace.__dict__.get("handle")
        if handle is None:
            return
        if handle in self._db_before:
            if self._db_before[handle] is not entity:
                return
        elif self.db._database.get(handle) is not entity:
            return
        self._busy = True
        try:
            self._saved[key] = (entity, _clone_state(entity, self.doc))
        except Exception as exc:  # state that cannot be copied: report instead of failing the run
            self._failed[key] = f"{type(entity).__name__} #{handle}: {type(exc).__name__}: {exc}"
        finally:
            self._busy = False

    def db_changing(self, handle: str) -> None:
        """Called before the database entry ``handle`` changes."""
        old = self.db._database.get(handle, _MISSING)
        if old is not _MISSING:
            self.touch(old)
        self._db_before.setdefault(handle, old)

    # -- after --------------------------------------------------------------------------
    def finish(self) -> ChangeSet:
        """Compare saved and live state and return what changed."""
        changes = ChangeSet(self.db, untracked=list(self._failed.values()))
        for entity, saved in self._saved.values():
            live = _object_getattribute(entity, "__dict__")
            if not _same_state(saved, live):
                changes.entities.append((entity, saved))
        database = self.db._database
        for handle, before in self._db_before.items():
            after = database.get(handle, _MISSING)
            if after is not before:
                changes.db_entries.append((handle, before, after))
        for obj, captured in self._containers:
            now = _capture(obj)
            for key in captured.keys() | now.keys():
                kind, before = captured.get(key, ("value", _MISSING))
                kind_now, after = now.get(key, ("value", _MISSING))
                if kind != kind_now:
                    kind, before, after = "value", _raw(obj, key, captured), getattr(obj, key, _MISSING)
                if not _same_shallow(kind, before, after):
                    changes.containers.append(_ContainerDelta(obj, key, kind, before, after))
        return changes


def is_active() -> bool:
    """Whether a change tracker is recording right now (inside :func:`tracked`)."""
    return _active is not None


@contextmanager
def tracked(tracker: ChangeTracker) -> Iterator[ChangeTracker]:
    """Install the hooks for the duration of the block (not re-entrant)."""
    global _active
    if _active is not None:
        raise RuntimeError("Another change tracker is already active.")
    tracker.start()
    _active = tracker
    _install_hooks()
    try:
        yield tracker
    finally:
        _remove_hooks()
        _active = None


# --- hooks -----------------------------------------------------------------------------


def _entity_getattribute(self: DXFEntity, name: str) -> Any:
    tracker = _active
    if tracker is not None and name not in _SAFE_NAMES and name[:2] != "__":
        instance = _object_getattribute(self, "__dict__")
        if name not in instance or type(instance[name]) not in _IMMUTABLE:
            tracker.touch(self)
    return _object_getattribute(self, name)


def _touching(original: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        tracker = _active
        if tracker is not None:
            tracker.touch(self)
        return original(self, *args, **kwargs)

    wrapper.__wrapped__ = original  # type: ignore[attr-defined]
    return wrapper


def _namespace_touching(original: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(self: DXFNamespace, *args: Any, **kwargs: Any) -> Any:
        tracker = _active
        if tracker is not None:
            entity = self.__dict__.get("_entity")
            if entity is not None:
                tracker.touch(entity)
        return original(self, *args, **kwargs)

    wrapper.__wrapped__ = original  # type: ignore[attr-defined]
    return wrapper


def _db_setitem(original: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(self: EntityDB, handle: str, *args: Any) -> Any:
        tracker = _active
        if tracker is not None and tracker.db is self:
            tracker.db_changing(handle)
        return original(self, handle, *args)

    return wrapper


def _db_discard(original: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(self: EntityDB, entity: DXFEntity) -> Any:
        tracker = _active
        if tracker is not None and tracker.db is self:
            handle = _object_getattribute(entity, "__dict__").get("dxf")
            handle = handle.__dict__.get("handle") if handle is not None else None
            if handle is not None:
                tracker.db_changing(handle)
        return original(self, entity)

    return wrapper


def _db_purge(original: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(self: EntityDB) -> Any:
        tracker = _active
        if tracker is not None and tracker.db is self:
            for handle, entity in list(self._database.items()):
                if not entity.is_alive:
                    tracker.db_changing(handle)
        return original(self)

    return wrapper


_patches: list[tuple[type, str, Any, Any]] | None = None


def _entity_classes() -> list[type]:
    seen: set[type] = set()
    stack: list[type] = [DXFEntity]
    while stack:
        cls = stack.pop()
        for sub in cls.__subclasses__():
            if sub not in seen:
                seen.add(sub)
                stack.append(sub)
    return [DXFEntity, *seen]


def _build_patches() -> list[tuple[type, str, Any, Any]]:
    patches: list[tuple[type, str, Any, Any]] = []

    def add(cls: type, name: str, make: Callable[[Any], Any]) -> None:
        original = cls.__dict__.get(name, _MISSING)
        base = original if original is not _MISSING else getattr(cls, name)
        patches.append((cls, name, original, make(base)))

    add(DXFEntity, "__getattribute__", lambda _: _entity_getattribute)
    for cls in _entity_classes():
        for name in ("__setattr__", "__delattr__", *_MUTATING_DUNDERS):
            if name in cls.__dict__ or (cls is DXFEntity and name in ("__setattr__", "__delattr__")):
                add(cls, name, _touching)
    for name in _NAMESPACE_MUTATORS:
        add(DXFNamespace, name, _namespace_touching)
    add(EntityDB, "__setitem__", _db_setitem)
    add(EntityDB, "__delitem__", _db_setitem)
    add(EntityDB, "discard", _db_discard)
    add(EntityDB, "purge", _db_purge)
    return patches


def _install_hooks() -> None:
    global _patches
    if _patches is None:
        _patches = _build_patches()
    for cls, name, _original, patched in _patches:
        setattr(cls, name, patched)


def _remove_hooks() -> None:
    assert _patches is not None
    for cls, name, original, _patched in reversed(_patches):
        if original is _MISSING:
            delattr(cls, name)
        else:
            setattr(cls, name, original)


# --- state copies and comparison -------------------------------------------------------


def _identity_deepcopy(self: Any, memo: dict[int, Any]) -> Any:
    """Entities, layouts and entity spaces are shared structure: copies keep references."""
    return self


def _clone_state(entity: DXFEntity, doc: Drawing) -> dict[str, Any]:
    """Copy an entity's attribute dict: other entities and the document by reference."""
    state = _object_getattribute(entity, "__dict__")
    out: dict[str, Any] = {}
    memo: dict[int, Any] = {id(doc): doc}
    shared = (DXFEntity, BaseLayout, EntitySpace)
    for cls in shared:
        cls.__deepcopy__ = _identity_deepcopy  # type: ignore[attr-defined]
    try:
        for key, value in state.items():
            kind = type(value)
            if kind in _IMMUTABLE or isinstance(value, DXFEntity | BaseLayout):
                out[key] = value
            elif kind is DXFNamespace:
                out[key] = value.copy(entity)
            elif kind is EntitySpace:
                out[key] = _SpaceState(value, list(value.entities))
            else:
                out[key] = copy.deepcopy(value, memo)
    finally:
        for cls in shared:
            del cls.__deepcopy__  # type: ignore[attr-defined]
    return out


def _same_state(saved: dict[str, Any], live: dict[str, Any]) -> bool:
    if saved.keys() != live.keys():
        return False
    for key, value in saved.items():
        if type(value) is _SpaceState:
            if value.space is not live[key] or not _same_list(value.entities, value.space.entities):
                return False
        elif not _same(value, live[key], 0):
            return False
    return True


def _members_only(saved: dict[str, Any], live: dict[str, Any]) -> bool:
    """Whether an object changed only in the entity spaces it holds (`_same_state` found it changed)."""
    if saved.keys() != live.keys():
        return False
    return all(type(value) is _SpaceState or _same(value, live[key], 0) for key, value in saved.items())


def _same(a: Any, b: Any, depth: int) -> bool:
    if a is b:
        return True
    kind = type(a)
    if kind is not type(b):
        return False
    if kind in _IMMUTABLE:
        return bool(a == b)
    if isinstance(a, DXFEntity | BaseLayout):
        return False  # different entity objects
    if depth > 20:
        return False
    if kind is DXFNamespace:
        return a.__dict__ == b.__dict__
    if kind is EntitySpace:
        return _same_list(a.entities, b.entities)
    if isinstance(a, list | tuple):
        if len(a) != len(b) or not all(_same(x, y, depth + 1) for x, y in zip(a, b, strict=True)):
            return False
        return kind in (list, tuple) or _same(_attrs(a), _attrs(b), depth + 1)
    if isinstance(a, dict):
        if a.keys() != b.keys() or not all(_same(a[k], b[k], depth + 1) for k in a):
            return False
        return kind is dict or _same(_attrs(a), _attrs(b), depth + 1)
    if isinstance(a, set | frozenset | array.array):
        return bool(a == b)
    if hasattr(a, "__array_interface__"):
        import numpy as np

        return bool(np.array_equal(a, b))
    if hasattr(a, "__dict__") or hasattr(type(a), "__slots__"):
        return _same(_attrs(a), _attrs(b), depth + 1)
    if kind.__eq__ is object.__eq__:  # a compiled type that compares by identity (ezdxf's accelerated
        try:  # Matrix44): a copy is never equal, so compare what copying and pickling keep of it
            return _same(a.__reduce_ex__(2), b.__reduce_ex__(2), depth + 1)
        except Exception:
            return False
    try:
        return bool(a == b)
    except Exception:
        return False


def _attrs(obj: Any) -> dict[str, Any]:
    out = dict(getattr(obj, "__dict__", {}))
    for cls in type(obj).__mro__:
        for slot in getattr(cls, "__slots__", ()):
            if slot not in out and hasattr(obj, slot):
                out[slot] = getattr(obj, slot)
    return out


def _same_list(a: list[Any], b: list[Any]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


# --- document-level containers ---------------------------------------------------------


def _doc_containers(doc: Drawing) -> list[Any]:
    objs: list[Any] = [doc, doc.header, doc.header.custom_vars, doc.classes, doc.tables, doc.blocks]
    objs += [doc.layouts, doc.objects, doc.entitydb.handles, doc.block_records]
    objs += [getattr(doc.tables, name) for name in vars(doc.tables) if name != "doc"]
    for name in ("groups", "materials", "mleader_styles", "mline_styles", "acdsdata"):
        value = getattr(doc, name, None)
        if value is not None and hasattr(value, "__dict__"):
            objs.append(value)
    unique: dict[int, Any] = {}
    for obj in objs:
        unique.setdefault(id(obj), obj)
    return list(unique.values())


def _capture(obj: Any) -> dict[str, tuple[str, Any]]:
    out: dict[str, tuple[str, Any]] = {}
    for key, value in vars(obj).items():
        if isinstance(value, dict):
            out[key] = ("dict", dict(value))
        elif isinstance(value, list):
            out[key] = ("list", list(value))
        elif isinstance(value, set):
            out[key] = ("set", set(value))
        elif type(value) is EntitySpace:
            out[key] = ("space", list(value.entities))
        else:
            out[key] = ("value", value)
    return out


def _raw(obj: Any, key: str, captured: dict[str, tuple[str, Any]]) -> Any:
    return captured[key][1] if key in captured else _MISSING


def _same_shallow(kind: str, before: Any, after: Any) -> bool:
    if before is after:
        return True
    if kind in ("list", "space"):
        return _same_list(before, after)
    if kind == "dict":
        return before.keys() == after.keys() and all(before[k] is after[k] for k in before)
    if kind == "set":
        return bool(before == after)
    if type(before) in _IMMUTABLE and type(after) in _IMMUTABLE:
        return bool(before == after)
    return False

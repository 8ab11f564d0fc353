"""Run one file as an agent would, through a real daemon and an MCP SDK client.

For each file: a daemon of its own (stdio, with a private runtime directory so no other
host is seen), `launch_host` on the file, the model context, a default and a top
screenshot, a canonical state dump, one typical change, undo, the dump again, save-as,
reopen of the saved file and a last dump. Every call is bounded in time; a file's result
records what happened at each step rather than stopping the corpus.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import anyio

from cadmcp.corpus import compare as comparing
from cadmcp.corpus import pictures, probes
from cadmcp.corpus.files import CorpusFile

SCHEMES = {"dxf": "dxf", "ifc": "ifc", "freecad": "freecad"}
TOP_VIEW: dict[str, dict[str, Any] | None] = {
    "dxf": None,
    "ifc": {"view": "plan"},
    "freecad": {"view": "top"},
}
"""The screenshot arguments of a view from above (None: the default view already is one)."""
DUMP_CALL = {"dxf": "dump(doc)", "ifc": "dump(model)", "freecad": "dump(doc)"}
SAVED_CALL = {"dxf": "dump(doc, normalized=True)", "ifc": "dump(model)", "freecad": "dump(doc)"}
"""The dump to compare a reopened file with: the document as a save writes it."""
CHANGE_CALL = {"dxf": "change(doc, msp)", "ifc": "change(model)", "freecad": "change(doc)"}
SHOWN_ERROR = 300
SAVED_SUFFIX = {".dwg": ".dxf"}
"""The extension a file is saved as when it is not its own (a DWG-opened drawing saves as DXF)."""
UNDO_STEP = "[UNDO STEP]"
"""What execute_python_code's answer says when a run recorded an undo step."""


@dataclass
class Settings:
    """Bounds of one run (seconds)."""

    launch_timeout: float = 180.0
    call_timeout: float = 300.0
    jobs: int = 1
    """Files run at once, each worker with a daemon of its own."""
    python: str = sys.executable


@dataclass
class Picture:
    """One screenshot: whether it came back, how much of it is drawn, and the note beside it."""

    view: str
    ok: bool = False
    blank: bool | None = None
    share: float | None = None
    cells: int | None = None
    note: str | None = None
    error: str | None = None

    @property
    def unexplained_blank(self) -> bool:
        return bool(self.ok and self.blank and not self.note)


@dataclass
class FileResult:
    """What happened to one file at each step (None: the step did not run)."""

    path: str
    app: str
    size: int
    launched: bool = False
    host_pid: int | None = None
    launch_error: str | None = None
    phase: str | None = None
    launch_ms: int | None = None
    listed: bool | None = None
    context_error: str | None = None
    dump_error: str | None = None
    opened: bool = False
    """The launch said ready and the document answered its context and a dump."""
    warnings: list[str] = field(default_factory=list)
    """What the launch said about the file itself (cut short, a part not carried over...)."""
    pictures: list[Picture] = field(default_factory=list)
    picture_changed: str | None = None
    """How taking the pictures changed the document (None: not at all)."""
    change: str | None = None
    change_error: str | None = None
    changed: bool | None = None
    undo_error: str | None = None
    undo_exact: bool | None = None
    undo_diff: str | None = None
    save_error: str | None = None
    reopen_exact: bool | None = None
    reopen_diff: str | None = None
    records: int | None = None
    dump_steps: list[str] = field(default_factory=list)
    """Dumps whose run recorded an undo step: reading the state changed the document."""
    seconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds spent in each kind of call (launch_host, dump, screenshot default ...)."""
    error: str | None = None
    """A failure outside the steps (a call that timed out, the daemon gone)."""

    @property
    def ready_but_failed(self) -> bool:
        return self.launched and not self.opened

    def failures(self) -> list[str]:
        """The failure classes of this file, in the order the steps ran."""
        out = []
        if not self.launched:
            out.append("launch refused")
        elif not self.opened:
            out.append("ready but failed")
        out += [f"blank {p.view} picture" for p in self.pictures if p.unexplained_blank]
        out += [f"{p.view} picture error" for p in self.pictures if p.error]
        if self.picture_changed:
            out.append("picture changed the model")
        if self.change_error:
            out.append("change failed")
        elif self.changed is False:
            out.append("change had no effect")
        if self.undo_error:
            out.append("undo failed")
        if self.undo_exact is False:
            out.append("undo inexact")
        if self.save_error:
            out.append("save/reopen failed")
        if self.reopen_exact is False:
            out.append("reopen inexact")
        if self.error:
            out.append("run error")
        return out

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["failures"] = self.failures()
        return data


class StepError(Exception):
    """A step whose call answered with an error; the message is the host's own text."""


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def _clip(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= SHOWN_ERROR else text[: SHOWN_ERROR - 3] + "..."


class Agent:
    """The calls an agent makes on one host: find a capability by target, invoke it."""

    def __init__(self, session: Any, settings: Settings, timings: dict[str, float] | None = None) -> None:
        self.session = session
        self.settings = settings
        self.timings = timings if timings is not None else {}
        self.dump_steps: list[str] = []
        """Dumps that recorded an undo step (reading the state changed the document)."""
        self.host: str | None = None
        self.ids: dict[str, str] = {}

    async def call(
        self, name: str, args: dict[str, Any], timeout: float | None = None, label: str | None = None
    ) -> Any:
        started = time.monotonic()
        try:
            with anyio.fail_after(timeout or self.settings.call_timeout):
                return await self.session.call_tool(name, args)
        finally:
            key = label or name
            self.timings[key] = round(self.timings.get(key, 0.0) + time.monotonic() - started, 3)

    async def learn(self, host: str) -> None:
        """Remember the ids of every capability of ``host`` (an empty query lists them)."""
        self.host = host
        answer = await self.call("search_dynamic", {"query": "", "hostInstanceId": host, "limit": 32})
        for item in (answer.structured_content or {}).get("items", []):
            self.ids.setdefault(item["target"], item["id"])

    async def _id(self, target: str) -> str:
        if target not in self.ids:
            answer = await self.call(
                "search_dynamic", {"query": target, "hostInstanceId": self.host, "limit": 32}
            )
            for item in (answer.structured_content or {}).get("items", []):
                self.ids.setdefault(item["target"], item["id"])
        if target not in self.ids:
            raise StepError(f"the host offers no {target}")
        return self.ids[target]

    async def invoke(
        self, target: str, arguments: dict[str, Any] | None = None, label: str | None = None
    ) -> Any:
        """Invoke ``target``; an error result raises StepError with its text."""
        args: dict[str, Any] = {"id": await self._id(target)}
        if arguments is not None:
            args["arguments"] = arguments
        result = await self.call("invoke_dynamic", args, label=label or target)
        if result.is_error:
            raise StepError(_text(result) or "error without text")
        return result

    async def python(self, code: str, description: str, label: str) -> str:
        result = await self.invoke("execute_python_code", {"code": code, "description": description}, label)
        return _text(result)


def dump_script(app: str, out: Path, saved: bool = False) -> str:
    """The script that writes ``app``'s canonical dump of the active document to ``out`` as JSON
    (``saved``: as it reads back from a saved file)."""
    return (
        f"{probes.source(app)}\n\n"
        "import json as _json\n"
        f"_state = {(SAVED_CALL if saved else DUMP_CALL)[app]}\n"
        f"with open({str(out)!r}, 'w', encoding='utf-8') as _fh:\n"
        "    _json.dump(_state, _fh, sort_keys=True)\n"
        "_state['summary']\n"
    )


def change_script(app: str) -> str:
    return f"{probes.source(app)}\n\n{CHANGE_CALL[app]}\n"


async def _dump(agent: Agent, app: str, work: Path, label: str, saved: bool = False) -> dict[str, Any]:
    out = work / f"dump-{label}.json"
    out.unlink(missing_ok=True)
    text = await agent.python(dump_script(app, out, saved), f"corpus: read the {label} state", "dump")
    if UNDO_STEP in text:
        agent.dump_steps.append(label)
    return json.loads(out.read_text(encoding="utf-8"))


async def _picture(agent: Agent, view: str, arguments: dict[str, Any]) -> Picture:
    picture = Picture(view)
    try:
        result = await agent.invoke("view_screenshot", arguments, label=f"screenshot {view}")
    except (StepError, TimeoutError) as exc:
        picture.error = _clip(str(exc) or type(exc).__name__)
        return picture
    images = [c for c in result.content if getattr(c, "type", "") == "image"]
    if not images:
        picture.error = "no image in the result"
        return picture
    ink = pictures.measure(base64.b64decode(images[0].data))
    picture.ok, picture.blank, picture.share, picture.cells = True, ink.blank, round(ink.share, 5), ink.cells
    picture.note = _clip(_text(result)) or None
    return picture


async def run_file(
    session: Any, file: CorpusFile, work: Path, settings: Settings, result: FileResult
) -> None:
    """Run every step on ``file`` through ``session`` (a connected daemon client), filling ``result``."""
    agent = Agent(session, settings, result.timings)
    launch = await agent.call(
        "launch_host",
        {"filePath": str(file.path), "timeoutSeconds": settings.launch_timeout},
        timeout=settings.launch_timeout + 30,
    )
    if launch.is_error:
        result.launch_error = _clip(_text(launch))
        return
    info = launch.structured_content or {}
    result.launched, result.phase, result.launch_ms = True, info.get("phase"), info.get("startupMs")
    result.host_pid = info.get("pid")
    documents = [d for d in info.get("documents") or [] if isinstance(d, dict)]
    result.warnings = [_clip(str(w)) for d in documents for w in d.get("warnings") or []]
    await agent.learn(info["hostInstanceId"])
    app, scheme = file.app, SCHEMES[file.app]

    try:
        listing = await agent.invoke("list_documents")
        documents = (listing.structured_content or {}).get("documents", [])
        result.listed = any(d.get("path") and Path(d["path"]).resolve() == file.path for d in documents)
        await agent.invoke(f"{scheme}://model/context")
    except StepError as exc:
        result.context_error = _clip(str(exc))
    try:
        before = await _dump(agent, app, work, "before")
        result.records = sum(len(v) for k, v in before.items() if k != "summary" and isinstance(v, dict))
    except (StepError, OSError, ValueError) as exc:
        result.dump_error = _clip(str(exc))
        return
    result.opened = result.context_error is None and result.listed is not False

    result.pictures.append(await _picture(agent, "default", {}))
    top = TOP_VIEW[app]
    if top is not None:
        result.pictures.append(await _picture(agent, "top", top))
    looked = await _dump(agent, app, work, "pictured")
    diff = comparing.compare(before, looked)
    if not diff.equal:  # a read-only call changed the model: compare the rest against what it left
        result.picture_changed = _clip(diff.describe())
        before = looked

    try:
        result.change = _clip(await agent.python(change_script(app), "corpus: one typical change", "change"))
    except StepError as exc:
        result.change_error = _clip(str(exc))
        return
    after_change = await _dump(agent, app, work, "changed")
    result.changed = not comparing.compare(before, after_change).equal
    steps = 1 + agent.dump_steps.count("changed")  # the change, and the dump after it if it was a step
    try:
        back = await agent.invoke("navigate_history", {"direction": "back", "steps": steps})
        moved = (back.structured_content or {}).get("moved") or (back.structured_content or {}).get("steps")
        if moved in ([], 0):
            result.undo_error = _clip("nothing was undone: " + _text(back))
    except StepError as exc:
        result.undo_error = _clip(str(exc))
        return
    undone = await _dump(agent, app, work, "undone")
    diff = comparing.compare(before, undone)
    result.undo_exact, result.undo_diff = diff.equal, None if diff.equal else _clip(diff.describe())
    result.dump_steps = list(agent.dump_steps)

    suffix = SAVED_SUFFIX.get(file.path.suffix.lower(), file.path.suffix)
    saved = work / f"saved{suffix}"
    try:
        written = await _dump(agent, app, work, "written", saved=True)
        await agent.invoke("save_document", {"filePath": str(saved)})
        copy = work / f"reopened{suffix}"
        shutil.copyfile(saved, copy)
        await agent.invoke("open_document", {"filePath": str(copy)})
        reopened = await _dump(agent, app, work, "reopened", saved=True)
    except (StepError, OSError, ValueError) as exc:
        result.save_error = _clip(str(exc))
        return
    diff = comparing.compare(written, reopened)
    result.reopen_exact, result.reopen_diff = diff.equal, None if diff.equal else _clip(diff.describe())


def _describe(exc: BaseException, settings: Settings) -> str:
    """A short account of an unexpected failure (time-outs say which bound they hit)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, TimeoutError):
        return f"a call did not answer within {settings.call_timeout:g} s"
    return _clip(f"{type(exc).__name__}: {exc}")


SCRIPT_MARGIN = 30.0
"""Seconds a host's script limit stays under the call bound, so a script stopped at its limit answers."""


def daemon_env(runtime: Path, call_timeout: float = 300.0) -> dict[str, str]:
    """The daemon's environment (its hosts inherit it): the user's, with a private runtime directory
    (call logs and recovery copies go beside it, so the run's steps never show among the user's
    checkpoints, nor its documents among their kept work) and, unless the user set one, a script
    limit from the call bound rather than an agent script's 60 s, since the runner's own dumps and
    save compares of large drawings take longer."""
    from cadmcp.userdirs import LOG_DIR_ENV, RECOVERY_DIR_ENV

    env = dict(os.environ)
    env["CADMCP_RUNTIME_DIR"] = str(runtime)
    env[LOG_DIR_ENV] = str(runtime.parent / "log")
    env[RECOVERY_DIR_ENV] = str(runtime.parent / "recovered")
    env.setdefault("CADMCP_EXEC_TIMEOUT", f"{max(60.0, call_timeout - SCRIPT_MARGIN):g}")
    return env


async def _stop_host(pid: int | None, grace: float = 5.0) -> None:
    """Stop the host a file was run in (its process group: SIGTERM, then SIGKILL)."""
    from cadmcp.wire.endpoints import pid_alive

    if pid is None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(OSError):
            os.killpg(pid, sig)
        deadline = time.monotonic() + grace
        while pid_alive(pid) and time.monotonic() < deadline:
            await anyio.sleep(0.05)
        if not pid_alive(pid):
            return


async def _run_in(session: Any, file: CorpusFile, work: Path, settings: Settings) -> FileResult:
    """Run ``file`` in a folder of its own, then stop its host whatever happened."""
    result = FileResult(str(file.path), file.app, file.size)
    started = time.monotonic()
    work.mkdir(parents=True)
    try:
        await run_file(session, file, work, settings, result)
    except Exception as exc:
        result.error = _describe(exc, settings)
    finally:
        with anyio.CancelScope(shield=True):
            await _stop_host(result.host_pid)
        shutil.rmtree(work, ignore_errors=True)
    result.seconds = round(time.monotonic() - started, 1)
    return result


MAX_FAILED_STARTS = 3
"""Daemons in a row that may fail to start before the next file is failed with the reason."""
CONNECT_TIMEOUT = 180.0


async def _connect(session: Any) -> None:
    """Discover the daemon, asking again while it is still starting (a loaded machine can take
    longer than the SDK's discover time-out to import it)."""
    from mcp.shared.exceptions import MCPError

    with anyio.fail_after(CONNECT_TIMEOUT):
        while True:
            try:
                await session.discover()
                return
            except MCPError as exc:
                if "timed out" not in str(exc):
                    raise


async def _worker(
    pending: list[tuple[int, CorpusFile]],
    settings: Settings,
    root: Path,
    done: Callable[[int, FileResult], None],
) -> None:
    """Take files from ``pending`` until none is left, through one daemon (a fresh one after a
    file that failed outside its steps). Each worker has its own runtime directory, so its
    daemon sees only the hosts it launched."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    runtime = root / "run"
    runtime.mkdir(mode=0o700, parents=True)
    params = StdioServerParameters(
        command=settings.python,
        args=["-m", "cadmcp", "daemon"],
        env=daemon_env(runtime, settings.call_timeout),
        cwd=root,
    )
    failed_starts = 0
    while pending:
        current: tuple[int, CorpusFile] | None = None
        try:
            with open(os.devnull, "w") as quiet:
                async with (
                    stdio_client(params, errlog=quiet) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    await _connect(session)
                    failed_starts = 0
                    while pending:
                        current = pending.pop(0)
                        result = await _run_in(session, current[1], root / str(current[0]), settings)
                        index, current = current[0], None
                        done(index, result)
                        if result.error:
                            break  # the daemon may still be busy with what timed out: start afresh
        except Exception as exc:  # the daemon itself failed: the file it was on gets the blame
            if current is None:
                failed_starts += 1
                if failed_starts < MAX_FAILED_STARTS or not pending:
                    continue
                current, failed_starts = pending.pop(0), 0  # no daemon starts here: say so per file
            result = FileResult(str(current[1].path), current[1].app, current[1].size)
            result.error = "the daemon failed: " + _describe(exc, settings)
            done(current[0], result)


async def _run_files(
    files: list[CorpusFile], settings: Settings, each: Callable[[FileResult], None]
) -> list[FileResult]:
    """Run the files with ``settings.jobs`` workers; results come back in the files' order."""
    results: dict[int, FileResult] = {}
    pending = list(enumerate(files))

    def done(index: int, result: FileResult) -> None:
        results[index] = result
        each(result)

    with tempfile.TemporaryDirectory(prefix="cadmcp-corpus-") as tmp:
        async with anyio.create_task_group() as group:
            for job in range(max(1, min(settings.jobs, len(files)))):
                group.start_soon(_worker, pending, settings, Path(tmp) / f"job{job}", done)
    return [results[i] for i in sorted(results)]


def run_all(
    files: list[CorpusFile], settings: Settings, each: Callable[[FileResult], None] | None = None
) -> list[FileResult]:
    """Run every file in turn; ``each`` hears every result as soon as it is known."""
    return anyio.run(_run_files, files, settings, each or (lambda _result: None))

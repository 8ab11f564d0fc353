"""`launch_host`: start a host process and wait until the daemon is connected to it.

What can be started is the registry of applications (:mod:`cadmcp.applications`): the
built-in hosts run as `python -m cadmcp host KEY`; more come from a small configuration file
(`hosts.json` or `hosts.toml` in the user config dir, or the file named by
`CADMCP_HOSTS_CONFIG`), a command or an adapter each::

    {"hosts": {"MyCAD": {"command": ["mycad", "--cadmcp", "{filePath}"],
                         "extensions": [".abc"], "version": "2026"},
               "Notes": {"adapter": "notes_host.py:open_notebooks", "extensions": [".json"]}}}

`{filePath}` and `{version}` in a command are filled in; without `{filePath}` the file is
appended. Hosts the daemon launched are stopped when it exits unless launched with
`detach: true`.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import anyio
from mcp.shared.dispatcher import ProgressFnT

from cadmcp import applications
from cadmcp.applications import CONFIG_ENV, FOREIGN, Application, config_path, parse_config_file
from cadmcp.daemon.catalog import HostEntry, HostKey
from cadmcp.daemon.errors import DaemonError, validation_error
from cadmcp.daemon.hosts import HostDirectory
from cadmcp.wire.echo import echo
from cadmcp.wire.endpoints import RUNTIME_DIR_ENV, list_endpoints, pid_alive
from cadmcp.wire.lifecycle import PARENT_PID_ENV

TIMEOUT_ENV = "CADMCP_LAUNCH_TIMEOUT"
DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 3600.0
STDERR_TAIL = 2000
MAX_SHOWN_PATH = 300
_ARGS = ("hostApp", "version", "filePath", "timeoutSeconds", "detach", "newInstance")
MAX_REPORTED_DOCUMENTS = 20
BAD_START = 2
"""The exit code of a built-in host that refused a document it was started with (its stderr says why)."""
__all__ = [
    "CONFIG_ENV",
    "HostLauncher",
    "builtin_hosts",
    "config_path",
    "configured_hosts",
    "parse_config_file",
]


def builtin_hosts() -> list[Application]:
    """The hosts that ship with cadmcp (:data:`cadmcp.applications.BUILTIN`), started with this Python."""
    return list(applications.BUILTIN)


def configured_hosts(path: Path | None = None) -> list[Application]:
    """Hosts from the configuration file (none when there is no file)."""
    try:
        return applications.configured(path)
    except applications.ConfigError as exc:
        raise DaemonError("config_error", str(exc), {"configPath": str(exc.path)}) from None


def _default_version(app: Application) -> str:
    """The version a host starts as when none is asked; a built-in missing from this installation
    is refused with what to do."""
    if app.version_from is not None:
        import importlib

        if not hasattr(importlib.import_module(app.version_from), "HOST_APP"):
            raise DaemonError(
                "host_unavailable",
                f"The {app.name} host is not available in this cadmcp installation "
                f"({app.version_from} has no host adapter). Update cadmcp or pick another hostApp.",
            )
    return app.host_version()


@dataclass
class Launched:
    """A host process this daemon started."""

    proc: subprocess.Popen[bytes]
    app: Application
    stderr: IO[bytes]
    detached: bool
    waiting: bool = True
    """Still in launch_host's wait (its stderr is needed for the error message)."""
    files: tuple[str, ...] = ()
    """The documents it was started with."""

    def stderr_tail(self) -> str:
        with contextlib.suppress(OSError, ValueError):
            self.stderr.seek(0, os.SEEK_END)
            size = self.stderr.tell()
            self.stderr.seek(max(0, size - STDERR_TAIL))
            return self.stderr.read().decode("utf-8", "replace").strip()
        return ""


class HostLauncher:
    """Starts hosts for `launch_host` and stops the attached ones when the daemon exits."""

    def __init__(self, directory: HostDirectory) -> None:
        self.directory = directory
        self.launched: list[Launched] = []
        self._file_locks: dict[str, anyio.Lock] = {}
        self._starting: dict[str, int] = {}
        """Launch key (a server's name, a file) → pid of a host a timed-out launch left starting."""

    # -- choosing what to start ----------------------------------------------------------------
    def applications(self) -> list[Application]:
        """What can be started: the configured applications, then the built-ins they do not replace."""
        configured = configured_hosts()
        names = {s.name.casefold() for s in configured}
        return configured + [s for s in builtin_hosts() if s.name.casefold() not in names]

    def _choose(self, host_app: str | None, file_path: Path | None) -> Application:
        apps = self.applications()
        supported = sorted({e for s in apps for e in s.extensions})
        if host_app is not None:
            app = next((s for s in apps if s.name.casefold() == host_app.casefold()), None)
            if app is None:
                path = applications.config_path()
                missing = f" {applications.missing_config_note(path)}" if path and not path.exists() else ""
                raise DaemonError(
                    "unknown_host_app",
                    f"No host app named {echo(host_app, 40)}. Supported: {[s.name for s in apps]}; "
                    "add others with `cadmcp host add NAME -- COMMAND ARGS...` (an MCP server) or in the "
                    f"host configuration ({CONFIG_ENV} or hosts.json in the cadmcp config folder).{missing}",
                    {"supported": [s.name for s in apps]},
                )
            if file_path is not None:
                if not app.takes_files:
                    raise validation_error(
                        f"The {app.name} host opens no files; omit filePath or pick a hostApp that does."
                    )
                suffix = file_path.suffix.lower()
                if app.extensions and suffix not in app.extensions:
                    shown = suffix or "files without an extension"
                    raise DaemonError(
                        "unsupported_extension",
                        f"The {app.name} host opens {list(app.extensions)} files, not {shown}. Pick the "
                        "host for this file, or pass only filePath.",
                        {"supported": list(app.extensions)},
                    )
            return app
        if file_path is None:
            raise validation_error(
                f"Pass hostApp (one of {[s.name for s in apps]}) or filePath (a {supported} file)."
            )
        suffix = file_path.suffix.lower()
        app = next((s for s in apps if suffix in s.extensions), None)
        _check_content(file_path, apps)
        if app is None:
            shown = f"{suffix} files" if suffix else "files without an extension"
            raise DaemonError(
                "unsupported_extension",
                f"No host opens {shown}. Supported extensions: "
                f"{supported}. Pass hostApp to choose a host yourself, or configure one for this type.",
                {"supported": supported},
            )
        return app

    # -- the tool ------------------------------------------------------------------------------
    async def launch(self, args: dict[str, Any], progress: ProgressFnT | None = None) -> dict[str, Any]:
        """The `launch_host` answer: the started, connected host with its documents open (or saying
        it is still loading), or the host that already has the file open.

        A file open in a running host is not opened again unless `newInstance` asks for a second
        copy. `progress` hears how far the launch is. A launch cancelled before it answers stops
        the host it started.
        """
        if args.get("restartHostInstanceId") is not None:
            return await self.restart(args, progress)
        host_app, version, file_path, timeout, detach, new_instance = _parse(args)
        await self.directory.caught_up()  # a fresh daemon: the hosts already running, before any check
        app = self._choose(host_app, file_path)
        if app.problem is not None:  # a wrong entry of the configuration: only it is unusable
            raise DaemonError("config_error", app.problem, {"configPath": app.origin})
        version = self._version(app, version)
        answer = await self._launch_app(app, version, file_path, timeout, detach, new_instance, progress)
        if app.ignored:  # the entry works, but not as written: say so where the agent looks
            answer["configIgnored"] = list(app.ignored)
            said = f"The entry {app.name} of {app.origin} has keys nothing reads: {'; '.join(app.ignored)}."
            answer["warning"] = f"{answer['warning']} {said}" if answer.get("warning") else said
        return answer

    async def _launch_app(
        self,
        app: Application,
        version: str,
        file_path: Path | None,
        timeout: float,
        detach: bool,
        new_instance: bool,
        progress: ProgressFnT | None,
    ) -> dict[str, Any]:
        if file_path is None and app.kind == FOREIGN:
            return await self._start_server(app, version, timeout, detach, new_instance, progress)
        if file_path is None:
            return {**await self._start(app, version, [], timeout, detach, progress), "filePath": None}
        key = _same_file_key(file_path)
        lock = self._file_locks.setdefault(key, anyio.Lock())
        try:
            async with lock:  # two launches of one file at once: the second finds the first's host
                holders = self.hosts_with(file_path)
                if holders and not new_instance:
                    return _already_open(holders[0], file_path)
                if not new_instance and (earlier := await self._earlier(key, app, timeout)) is not None:
                    return _already_open(earlier, file_path)
                answer = await self._started(key, app, version, [str(file_path)], timeout, detach, progress)
        finally:
            if not lock.locked() and not lock.statistics().tasks_waiting:
                self._file_locks.pop(key, None)
        answer["filePath"] = str(file_path)
        if holders:
            answer["otherCopies"] = [entry.key.instance_id for entry in holders]
            answer["warning"] = (
                f"{file_path.name} is also open in {', '.join(answer['otherCopies'])}: this is a second "
                "copy. Changes in one are not seen by the other, and a save over the file after the other "
                "saved it is refused (save_document says so); save this copy under another name with "
                "save_document(filePath=...)."
            )
        return answer

    async def _start_server(
        self,
        app: Application,
        version: str,
        timeout: float,
        detach: bool,
        new_instance: bool,
        progress: ProgressFnT | None,
    ) -> dict[str, Any]:
        """A foreign MCP server: the one already running on this machine (a second would list every
        tool twice, and two copies of a stateful server would write the same files), unless
        `newInstance` asks for another."""
        async with self._file_locks.setdefault(f"server:{app.name.casefold()}", anyio.Lock()):
            running = [
                entry
                for entry in self.directory.local_entries().values()
                if entry.host_app.casefold() == app.name.casefold()
            ]
            if running and not new_instance:
                return _already_running(running[0])
            key = f"server:{app.name.casefold()}"
            if not new_instance and (earlier := await self._earlier(key, app, timeout)) is not None:
                return _already_running(earlier)
            answer = await self._started(key, app, version, [], timeout, detach, progress)
        return {**answer, "filePath": None}

    async def _started(
        self,
        key: str,
        app: Application,
        version: str,
        files: list[str],
        timeout: float,
        detach: bool,
        progress: ProgressFnT | None,
    ) -> dict[str, Any]:
        """`_start`, remembering a host that did not connect in time but still runs: the next launch
        of the same server or file waits for it rather than starting a second copy."""
        try:
            answer = await self._start(app, version, files, timeout, detach, progress)
        except DaemonError as exc:
            if exc.type == "launch_timeout" and exc.details.get("running"):
                self._starting[key] = int(exc.details["pid"])
            raise
        self._starting.pop(key, None)
        return answer

    async def _earlier(self, key: str, app: Application, timeout: float) -> HostEntry | None:
        """The host an earlier, timed-out launch of `key` left starting, once connected (None when
        there is none, or it has exited); `launch_timeout` again if it is still not connected."""
        pid = self._starting.get(key)
        if pid is None or not pid_alive(pid):
            self._starting.pop(key, None)
            return None
        deadline = time.monotonic() + timeout
        while True:
            found = [e for e in self.directory.local_entries().values() if e.key.pid == pid]
            if found:
                self._starting.pop(key, None)
                return found[0]
            if not pid_alive(pid):
                self._starting.pop(key, None)
                return None
            if time.monotonic() >= deadline:
                raise DaemonError(
                    "launch_timeout",
                    f"The {app.name} host (pid {pid}) that an earlier launch_host started has still not "
                    f"connected; no second copy was started. {self._endpoint_note(pid)} Call "
                    "list_host_instances later, launch_host again with a larger timeoutSeconds to wait "
                    "for it, or newInstance: true for another copy.",
                    {"pid": pid, "running": True},
                )
            self.directory.wake()
            await anyio.sleep(0.1)

    def hosts_with(self, file_path: Path) -> list[HostEntry]:
        """The connected hosts on this machine that have ``file_path`` open."""
        key = _same_file_key(file_path)
        found = []
        for entry in self.directory.local_entries().values():
            for document in entry.state.get("documents") or []:
                path = document.get("path") if isinstance(document, dict) else None
                if isinstance(path, str) and path and _same_file_key(Path(path)) == key:
                    found.append(entry)
                    break
        return found

    def _version(self, app: Application, version: str | None) -> str:
        default = _default_version(app)
        if version is None:
            return default
        if app.version_from is not None and version != default:
            raise DaemonError(
                "unknown_version",
                f"The built-in {app.name} host is version {default}; "
                f"it cannot start as {echo(version, 40)}. Omit version, or configure that version in "
                "the host configuration.",
                {"available": [default]},
            )
        if app.version_from is None and (available := app.known_versions()) and version not in available:
            raise DaemonError(
                "unknown_version",
                f"{app.name} {echo(version, 40)} is not configured; available versions: {available}.",
                {"available": available},
            )
        return version

    async def _start(
        self,
        app: Application,
        version: str,
        files: list[str],
        timeout: float,
        detach: bool,
        progress: ProgressFnT | None = None,
    ) -> dict[str, Any]:
        command = app.command_for(version, files)
        before = set(self.directory.entries)
        started = time.monotonic()
        launched = self._spawn(app, command, detach, files)
        try:
            await _report(
                progress, 0.1, f"started the {app.name} host (pid {launched.proc.pid}); waiting for it"
            )
            try:
                entry = await self._wait_connected(launched, before, timeout)
            finally:
                launched.waiting = False
            if entry.state.get("phase") == "loading":
                await _report(progress, 0.5, f"the {app.name} host is connected and loading its documents")
            entry = await self._wait_ready(entry, started + timeout)
        except anyio.get_cancelled_exc_class():
            with contextlib.suppress(OSError):  # nobody will be told about this host: stop it
                os.killpg(launched.proc.pid, signal.SIGTERM)
            raise
        phase = entry.state.get("phase", "ready")
        documents = _requested(entry, files)
        answer: dict[str, Any] = {
            "pid": entry.key.pid,
            "hostApp": entry.host_app,
            "version": entry.version,
            "hostInstanceId": entry.key.instance_id,
            "bridgeConnected": True,
            "phase": phase,
            "detached": detach,
            "capabilities": len(entry.capabilities),
            "startupMs": round((time.monotonic() - started) * 1000),
            "source": app.origin,
        }
        if documents is not None:
            answer["documents"] = documents
        if documents and any(not d.get("opened") for d in documents):
            await self._refuse_documents(answer, documents, launched)
        if phase in ("down", "refused"):  # a foreign host whose server did not start or connect
            raise _server_not_up(answer, entry.shown_state())
        if phase == "loading":
            answer["note"] = (
                "The host is connected and answers, but it is still loading its documents; the first "
                "calls may be slow. list_host_instances shows when it is ready."
            )
        elif phase != "ready":
            answer["note"] = (
                f"The host is connected but says it is {phase}; list_host_instances shows when it is ready."
            )
        return answer

    async def _refuse_documents(
        self, answer: dict[str, Any], documents: list[dict[str, Any]], launched: Launched
    ) -> None:
        """Answer a launch where a requested document did not open as an error (never as ready):
        each document's reason, what the host opens instead and the fix. A host left with no
        document open is stopped."""
        failed = [d for d in documents if not d.get("opened")]
        opened = [str(d.get("title") or d.get("path")) for d in documents if d.get("opened")]
        for d in failed:  # what the host could only suspect, file info may know from the file's length
            cut = await anyio.to_thread.run_sync(_cut_short, Path(str(d.get("path"))))
            if cut is not None:
                d["problem"], d["cutShort"] = cut, True
        reasons = " ".join(
            f"{Path(str(d.get('path'))).name}: {d.get('problem') or 'it did not open (no reason given)'}"
            for d in failed
        )
        supported = sorted({str(s) for d in failed for s in d.get("supported") or []})
        if opened:
            fate = f"The host {answer['hostInstanceId']} runs on with {', '.join(opened)} open."
        else:
            fate = "The host was stopped (it had nothing open); do what the reason says, then launch again."
            with contextlib.suppress(OSError):
                os.killpg(launched.proc.pid, signal.SIGTERM)
        raise DaemonError(
            "document_not_opened",
            f"{len(failed)} of {len(documents)} requested document(s) did not open. {reasons} {fate}",
            {
                **{k: answer[k] for k in ("hostApp", "version", "pid", "hostInstanceId")},
                "hostRunning": bool(opened),
                "documents": documents,
                **({"supported": supported} if supported else {}),
            },
        )

    async def _wait_ready(self, entry: HostEntry, deadline: float) -> HostEntry:
        """Wait (until `deadline`) while the host says it is still loading its documents."""
        while entry.state.get("phase") == "loading" and time.monotonic() < deadline:
            await anyio.sleep(0.05)
            entry = self.directory.entries.get(entry.key, entry)
        return entry

    # -- restarting a stuck host ------------------------------------------------------------------
    async def restart(self, args: dict[str, Any], progress: ProgressFnT | None = None) -> dict[str, Any]:
        """Stop a stuck host and start it again with its saved documents (`restartHostInstanceId`)."""
        unknown = sorted(set(args) - {"restartHostInstanceId", "timeoutSeconds", "detach"})
        if unknown:
            raise validation_error(
                "With restartHostInstanceId, launch_host takes only timeoutSeconds and detach "
                f"(got {unknown})."
            )
        instance = args["restartHostInstanceId"]
        if not isinstance(instance, str):
            raise validation_error("restartHostInstanceId must be a hostInstanceId string.")
        _, _, _, timeout, detach, _ = _parse({k: v for k, v in args.items() if k != "restartHostInstanceId"})
        known = self.directory.known_host(instance)
        if known is None:
            raise DaemonError(
                "unknown_host",
                f"No host {echo(instance, 40)} is connected or was seen by this daemon. "
                "list_host_instances shows the running ones.",
            )
        key, host_app, version, state = known
        if key.machine_id != self.directory.machine_id:  # its pid means nothing on this machine
            raise DaemonError(
                "cannot_restart",
                f"Host {echo(instance, 40)} runs on another machine; launch_host restarts it there "
                "when that machine is online (list_machines).",
            )
        app = next((s for s in self.applications() if s.name.casefold() == host_app.casefold()), None)
        if app is None:
            raise DaemonError(
                "cannot_restart",
                f"No launch configuration starts {host_app} hosts, so this one cannot be restarted from "
                f"here. Restart it yourself, or add it to the host configuration ({CONFIG_ENV}).",
            )
        documents = [d for d in state.get("documents") or [] if isinstance(d, dict)]
        saved = [str(d["path"]) for d in documents if d.get("path")]
        if not app.opens_several(version):
            saved = saved[:1]
        unsaved = [d for d in documents if d.get("modified")]
        not_reopened = [str(d.get("title")) for d in documents if not d.get("path")]
        # its socket says the pid is still that host (a host that exited removed it; its pid may
        # belong to another of the user's processes by now)
        serving = any(ep.pid == key.pid for ep in list_endpoints(self.directory.directory))
        stopping = time.time()
        stopped = await _stop_process(key.pid) if serving else "already gone"
        kept = _copies_kept(unsaved, stopping)  # a host that could still stop kept them as copies
        lost = [str(d.get("title")) for d in unsaved if str(d.get("title")) not in kept]
        if "detach" not in args:  # the new host outlives this daemon as the old one would have
            detach = not any(item.proc.pid == key.pid and not item.detached for item in self.launched)
        answer = await self._start(app, version, saved if app.takes_files else [], timeout, detach, progress)
        return {
            **answer,
            "restartedFrom": {"hostInstanceId": instance, "pid": key.pid, "stopped": stopped},
            "reopened": saved,
            "unsavedChangesLost": lost,
            "unsavedChangesKept": kept,
            "notReopened": not_reopened,
            "documentsReported": "documents" in state,
        }

    def _spawn(
        self, app: Application, command: list[str], detach: bool, files: Sequence[str] = ()
    ) -> Launched:
        self.reap()
        env = {**os.environ, RUNTIME_DIR_ENV: str(self.directory.directory)}
        env.pop(PARENT_PID_ENV, None)
        if not detach:  # the host stops itself when this daemon is gone (see cadmcp.wire.lifecycle)
            env[PARENT_PID_ENV] = str(os.getpid())
        stderr = tempfile.TemporaryFile()  # noqa: SIM115 - kept for the stderr tail, closed in reap()
        try:
            proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,  # the daemon's stdin/stdout may be the MCP stdio channel
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                env=env,
                start_new_session=True,  # Ctrl-C in the daemon's terminal is not the host's to take
                close_fds=True,
            )
        except OSError as exc:
            stderr.close()
            raise DaemonError(
                "launch_failed",
                f"Could not start the {app.name} host ({command[0]}): {exc.strerror or exc}. "
                "Check the command in the host configuration.",
                {"command": command},
            ) from None
        launched = Launched(proc, app, stderr, detach, files=tuple(files))
        self.launched.append(launched)
        return launched

    async def _wait_connected(self, launched: Launched, before: set[HostKey], timeout: float) -> HostEntry:
        proc, name = launched.proc, launched.app.name.casefold()
        deadline = time.monotonic() + timeout
        next_wake = 0.0
        while True:
            code = proc.poll()
            others = {item.proc.pid for item in self.launched if item is not launched}
            for key, entry in self.directory.local_entries().items():
                if key.pid == proc.pid:
                    return entry
                # a launcher script that started the application and exited 0: take the new host
                if (
                    code == 0
                    and key not in before
                    and key.pid not in others
                    and entry.host_app.casefold() == name
                ):
                    return entry
            if code == BAD_START and launched.files and launched.app.origin == "built-in":
                raise _refused_at_start(launched)
            if code not in (None, 0):
                tail = launched.stderr_tail()
                raise DaemonError(
                    "host_exited",
                    f"The {launched.app.name} host (pid {proc.pid}) exited with code {code} before "
                    f"connecting. Its stderr ends with: {tail or '(nothing)'}",
                    {"pid": proc.pid, "exitCode": code, "stderrTail": tail},
                )
            now = time.monotonic()
            if now >= deadline:
                running = proc.poll() is None
                state = (
                    "It is still starting or hung: call list_host_instances later, or launch again with "
                    "a larger timeoutSeconds."
                    if running
                    else "Its command exited (code 0) and no host it started connected: check that the "
                    "command starts the application with cadmcp's host inside, and if it starts it in the "
                    "background, launch again with a larger timeoutSeconds."
                )
                raise DaemonError(
                    "launch_timeout",
                    f"The {launched.app.name} host (pid {proc.pid}) did not connect within {timeout:g} s. "
                    f"{state} {self._endpoint_note(proc.pid)}",
                    {"pid": proc.pid, "running": running, "stderrTail": launched.stderr_tail()},
                )
            if now >= next_wake:
                self.directory.wake()
                next_wake = now + 0.25
            await anyio.sleep(0.05)

    def _endpoint_note(self, pid: int) -> str:
        for state in self.directory.states.values():
            if state.endpoint.pid == pid and state.error:
                return f"Its endpoint was found but the connection failed: {state.error}."
        return "No endpoint from it appeared in the runtime directory."

    # -- lifecycle -----------------------------------------------------------------------------
    def reap(self) -> None:
        """Forget launched hosts that have exited."""
        for item in list(self.launched):
            if not item.waiting and item.proc.poll() is not None:
                item.stderr.close()
                self.launched.remove(item)

    def shutdown(self, grace: float = 5.0) -> None:
        """Stop every attached host this daemon launched (SIGTERM to its group, then SIGKILL)."""
        attached = [item for item in self.launched if not item.detached and item.proc.poll() is None]
        for item in attached:
            with contextlib.suppress(OSError):
                os.killpg(item.proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for item in attached:
            try:
                item.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    os.killpg(item.proc.pid, signal.SIGKILL)
                item.proc.wait()
        for item in self.launched:
            item.waiting = False
        self.reap()


def _check_content(file_path: Path, apps: list[Application]) -> None:
    """Refuse a file named as a CAD format it does not hold (an IFC model named .dxf), naming both:
    the host its name picks would only say it cannot read it. A DWG named .dxf is let through: the
    DXF host reads a DWG whatever its name, says it did (the document's warnings) and never writes
    over it."""
    from cadmcp.fileinfo.paths import FORMAT_NAMES, FORMATS, held_format

    found = held_format(file_path) if file_path.is_file() else None
    if found is None or (found == "dwg" and file_path.suffix.lower() == ".dxf"):
        return
    right = next((e for e, f in FORMATS.items() if f == found and any(e in s.extensions for s in apps)), None)
    right = ".FCStd" if right == ".fcstd" else right  # as FreeCAD writes it
    fix = (
        f"rename it (or a copy) to {right} and launch that"
        if right
        else "no host here opens it; read_file_info reads its metadata"
    )
    raise DaemonError(
        "misnamed_file",
        f"{echo(file_path.name)} is named {file_path.suffix} but holds {FORMAT_NAMES[found]}: {fix}.",
        {"found": found, **({"renameTo": right} if right else {})},
    )


def _cut_short(path: Path) -> str | None:
    """File info's finding that a DWG drawing is cut short (its length against where its header
    places its end), or None: not a DWG, not cut, or a release whose length is not checked."""
    from cadmcp.fileinfo.paths import sniffed_format

    if sniffed_format(path) != "dwg":
        return None
    from cadmcp.fileinfo.dwg import cut_short

    return cut_short(path)


def _server_not_up(answer: dict[str, Any], state: dict[str, Any]) -> DaemonError:
    """A foreign host that runs but whose MCP server is down or refused: why, and what next."""
    phase, reason = state.get("phase"), str(state.get("error") or "no reason given")
    reason = reason.removeprefix("refused: ") if phase == "refused" else reason  # said once
    retry = state.get("retryInSeconds")
    name = answer["hostApp"]
    again = (
        f"It tries again in {retry:g} s and keeps trying, slower each time (list_host_instances shows "
        "when it is ready)"
        if isinstance(retry, int | float)
        else "list_host_instances shows when it is ready"
    )
    return DaemonError(
        "server_down",
        f"The {name} host (pid {answer['pid']}) started, but its MCP server is {phase}: {reason}. "
        f"{again}. If the reason is in its entry (command, URL, env, headers), fix it with "
        f"`cadmcp host add {shlex.quote(name)} --force ...` or in the host configuration (it is started "
        "again with the new entry as soon as the file changes); nothing can be called on it until then. If "
        "the reason is in the environment it started in (a variable not set), set it there and call "
        f"launch_host with restartHostInstanceId={answer.get('hostInstanceId')!r}: a running host "
        "keeps the environment it started with.",
        {
            **{
                k: answer[k]
                for k in ("hostApp", "version", "pid", "hostInstanceId", "detached")
                if k in answer
            },
            "phase": phase,
            "reason": reason,
            "hostRunning": True,
            **({"retryInSeconds": retry} if retry is not None else {}),
        },
    )


def _refused_at_start(launched: Launched) -> DaemonError:
    """A built-in host that exited at once over its documents: `document_not_opened`, in its words."""
    said = [line for line in launched.stderr_tail().splitlines() if line.strip()]
    problem = said[-1].split(": ", 1)[-1] if said else "it gave no reason"
    documents = [{"path": path, "opened": False, "problem": problem[:600]} for path in launched.files]
    names = ", ".join(Path(path).name for path in launched.files)
    return DaemonError(
        "document_not_opened",
        f"{names} did not open: {problem} The {launched.app.name} host checked it before loading and "
        "stopped; it opens "
        f"{', '.join(launched.app.extensions) or 'its own files'}.",
        {
            "hostApp": launched.app.name,
            "pid": launched.proc.pid,
            "hostRunning": False,
            "documents": documents,
            "supported": list(launched.app.extensions),
        },
    )


def _same_file_key(path: Path) -> str:
    """One key for every way of naming a file (symlinks, `..`), to find it open in another host."""
    return os.path.normcase(os.path.realpath(path))


def _running(entry: HostEntry) -> dict[str, Any]:
    """What a launch answer says of a host that was already running."""
    return {
        "pid": entry.key.pid,
        "hostApp": entry.host_app,
        "version": entry.version,
        "hostInstanceId": entry.key.instance_id,
        "bridgeConnected": True,
        "phase": entry.state.get("phase", "ready"),
        "capabilities": len(entry.capabilities),
    }


def _copies_kept(documents: list[dict[str, Any]], since: float) -> dict[str, str]:
    """Title → the copy a stopping host kept of each of these documents with unsaved changes
    (`BuiltinSurface.keep_unsaved`, in the recovery folder since `since`)."""
    import glob

    from cadmcp.userdirs import recovery_dir

    folder, kept = recovery_dir(), {}
    for document in documents:
        title = str(document.get("title"))
        stem = Path(str(document.get("path") or title)).stem
        with contextlib.suppress(OSError):
            copies = [
                p
                for p in folder.glob(f"{glob.escape(stem)}-unsaved-*")
                if ".partial" not in p.name and p.stat().st_mtime >= since - 1
            ]
            if copies:
                kept[title] = str(max(copies, key=lambda p: p.stat().st_mtime))
    return kept


def _already_running(entry: HostEntry) -> dict[str, Any]:
    """The launch answer for a foreign MCP server that already runs here: that host."""
    answer = {**_running(entry), "alreadyRunning": True, "filePath": None}
    if answer["phase"] in ("down", "refused"):
        raise _server_not_up(answer, entry.shown_state())
    answer["note"] = (
        f"{entry.host_app} already runs as host {entry.key.instance_id}; no other copy was started, use "
        "that one. Pass newInstance: true to start a second copy."
    )
    return answer


def _already_open(entry: HostEntry, file_path: Path) -> dict[str, Any]:
    """The launch answer for a file some running host already has open: that host."""
    document = next(
        (
            d
            for d in entry.state.get("documents") or []
            if isinstance(d, dict) and _same_file_key(Path(str(d.get("path")))) == _same_file_key(file_path)
        ),
        {},
    )
    unsaved = " It has unsaved changes there." if document.get("modified") else ""
    return {
        **_running(entry),
        "alreadyOpen": True,
        "filePath": str(file_path),
        "documents": [{"path": str(file_path), "opened": True, "title": document.get("title")}],
        "note": (
            f"{file_path.name} is already open in {entry.host_app} host {entry.key.instance_id}; no other "
            f"host was started, use that one.{unsaved} Pass newInstance: true to start a second copy "
            "(changes in one are not seen by the other)."
        ),
    }


def _requested(entry: HostEntry, files: list[str]) -> list[dict[str, Any]] | None:
    """What the host says became of the documents it was started with (None: it does not say)."""
    reported = entry.state.get("requested")
    if isinstance(reported, list):
        return [d for d in reported if isinstance(d, dict)][:MAX_REPORTED_DOCUMENTS]
    problem = entry.state.get("problem")
    if files and isinstance(problem, str) and problem and not entry.state.get("documents"):
        return [{"path": path, "opened": False, "problem": problem[:600]} for path in files]
    return None


async def _report(progress: ProgressFnT | None, fraction: float, message: str) -> None:
    if progress is not None:
        await progress(fraction, 1.0, message)


async def _stop_process(pid: int, grace: float = 3.0) -> str:
    """SIGTERM (and SIGCONT, in case it was stopped), then SIGKILL after `grace`; how it ended."""
    if not pid_alive(pid):
        return "already gone"
    for sig in (signal.SIGTERM, signal.SIGCONT):
        with contextlib.suppress(OSError):
            os.kill(pid, sig)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return "stopped"
        await anyio.sleep(0.05)
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while pid_alive(pid) and time.monotonic() < deadline:
        await anyio.sleep(0.05)
    return "killed" if not pid_alive(pid) else "still running"


def _file(file_path: str) -> Path:
    """An existing regular file named by the caller, or an error saying what is wrong with it."""
    shown = echo(file_path, 200)
    if "\0" in file_path:
        raise validation_error(f"filePath {shown} contains a NUL byte; pass a real path.", field="filePath")
    try:
        path = Path(file_path).expanduser().absolute()
    except RuntimeError:  # "~someone" for a user that does not exist
        raise validation_error(
            f"filePath {shown} starts with an unknown ~user; pass an absolute path.", field="filePath"
        ) from None
    try:
        info = path.stat()
    except FileNotFoundError:
        raise DaemonError(
            "file_not_found",
            f"{echo(str(path), 200)} does not exist. Check the spelling and pass an absolute path "
            "(relative paths resolve against the daemon's working directory).",
            {"filePath": str(path)[:MAX_SHOWN_PATH]},
        ) from None
    except OSError as exc:
        raise DaemonError(
            "file_unreadable",
            f"{echo(str(path), 200)} cannot be examined ({exc.strerror or type(exc).__name__}).",
            {"filePath": str(path)[:MAX_SHOWN_PATH]},
        ) from None
    if not stat.S_ISREG(info.st_mode):
        raise validation_error(
            f"{echo(str(path), 200)} is not a regular file; pass the path of a drawing or model.",
            field="filePath",
        )
    return path


def _parse(args: dict[str, Any]) -> tuple[str | None, str | None, Path | None, float, bool, bool]:
    unknown = sorted(set(args) - set(_ARGS))
    if unknown:
        raise validation_error(f"Unknown argument(s) {unknown}; launch_host takes {list(_ARGS)}.")
    host_app, version, file_path = args.get("hostApp"), args.get("version"), args.get("filePath")
    for name, value in (("hostApp", host_app), ("version", version), ("filePath", file_path)):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise validation_error(f"{name} must be a non-empty string (got {echo(value)}).", field=name)
    detach = args.get("detach", False)
    if not isinstance(detach, bool):
        raise validation_error(f"detach must be true or false (got {echo(detach)}).", field="detach")
    new_instance = args.get("newInstance", False)
    if not isinstance(new_instance, bool):
        raise validation_error(
            f"newInstance must be true or false (got {echo(new_instance)}).", field="newInstance"
        )
    timeout = args.get("timeoutSeconds")
    if timeout is None:
        try:
            timeout = float(os.environ.get(TIMEOUT_ENV) or DEFAULT_TIMEOUT)
        except ValueError:
            timeout = DEFAULT_TIMEOUT
    elif isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= MAX_TIMEOUT:
        raise validation_error(f"timeoutSeconds must be a number of seconds from 0 to {MAX_TIMEOUT:g}.")
    path = None
    if file_path is not None:
        path = _file(file_path)
    return host_app, version, path, float(timeout), detach, new_instance

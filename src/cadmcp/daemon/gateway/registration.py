"""Registering this machine: one daemon per machine announces it and answers for it.

Every AI client starts its own daemon, and a user service may run one more; they share
the runtime directory. The first to take an exclusive lock there (`gateway-<digest>.lock`)
registers the machine: it publishes its presence (machine, hosts, catalog digests) on every
change and as a heartbeat, and serves the machine's request subjects. The others only
mirror remote machines, and take over within a second or two when the holder exits.
"""

from __future__ import annotations

import contextlib
import getpass
import hashlib
import logging
import os
import platform
import secrets
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import anyio
import anyio.abc

from cadmcp import __version__, applications
from cadmcp.daemon.gateway import frames
from cadmcp.daemon.gateway.context import GatewayContext, GatewayPart
from cadmcp.daemon.gateway.responder import Responder
from cadmcp.daemon.gateway.settings import Settings
from cadmcp.wire.endpoints import pid_alive

log = logging.getLogger("cadmcp.daemon.gateway")

WATCH_INTERVAL = 0.2
"""Seconds between looks at the local hosts for changes to announce."""
LOCK_RETRY = 1.0


class RegistrationLock:
    """An exclusive, non-blocking file lock: the machine's registration belongs to its holder."""

    def __init__(self, directory: Path, settings: Settings) -> None:
        material = f"{settings.space}|{settings.machine_id}|{settings.display_url}".encode()
        self.path = directory / f"gateway-{hashlib.blake2b(material, digest_size=6).hexdigest()}.lock"
        self._file: IO[str] | None = None

    def acquire(self) -> bool:
        if self._file is not None:
            return True
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: no dedupe, every daemon registers
            self._file = open(os.devnull, "w")  # noqa: SIM115
            return True
        handle = open(self.path, "a+")  # noqa: SIM115 - held open while the lock is ours
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            return False
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        self._file = handle
        return True

    def holder(self) -> int | None:
        """The pid of the daemon holding the lock (as it wrote it), if any."""
        with contextlib.suppress(OSError, ValueError):
            return int(self.path.read_text().strip() or "0") or None
        return None

    def release(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()  # closing drops the flock
            self._file = None


def box_of(runtime_dir: Path) -> str:
    """A digest of where a daemon runs: the computer (its system machine id and host name) and the
    runtime folder its hosts and registration lock are in. Tells a second daemon of this machine
    from another computer (or another runtime folder) configured with the same machine id."""
    import socket

    from cadmcp.daemon.hosts import machine_id

    return hashlib.sha256(f"{machine_id()}/{socket.gethostname()}/{runtime_dir}".encode()).hexdigest()[:12]


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return ""


class Registrar(GatewayPart):
    """Holds (or waits for) the registration lock; while held, announces and serves the machine."""

    def __init__(self, context: GatewayContext, responder: Responder) -> None:
        super().__init__(context)
        self.responder = responder
        self.lock = RegistrationLock(context.directory.directory, context.settings)
        self.instance = secrets.token_hex(6)
        self.box = box_of(context.directory.directory)
        self.registered = False
        self.seq = 0
        self._wake = anyio.Event()
        self._apps: tuple[tuple[Any, ...], list[str]] | None = None
        """(the configuration file's signature, what launch_host starts) as last read."""

    def announce_soon(self) -> None:
        self._wake.set()

    def status(self) -> dict[str, Any]:
        """Which daemon registers this machine."""
        if self.registered:
            return {"registeredBy": "this daemon", "daemonPid": os.getpid()}
        holder = self.lock.holder()
        if holder is None or holder == os.getpid() or not pid_alive(holder):
            return {"registeredBy": "nobody yet"}
        return {"registeredBy": "another daemon on this machine", "daemonPid": holder}

    def presence(self, state: str = "online") -> dict[str, Any]:
        hosts = [
            {
                "instanceId": e.key.instance_id,
                "pid": e.key.pid,
                "hostApp": e.host_app,
                "version": e.version,
                "serverName": e.server_name,
                "protocolVersion": e.protocol_version,
                "capabilities": len(e.capabilities),
                "digest": e.digest(),
                "state": frames.bounded_state(e.state),
            }
            for e in self._local_entries()
        ][: frames.MAX_HOSTS]
        s = self.settings
        self.seq += 1
        return {
            "v": frames.VERSION,
            "machineId": s.machine_id,
            "name": s.machine_name,
            "user": _user(),
            "os": {"system": platform.system(), "release": platform.release(), "machine": platform.machine()},
            "daemon": {
                "pid": os.getpid(),
                "version": __version__,
                "instance": self.instance,
                "box": self.box,
            },
            "apps": self._launchable(),
            "readOnly": s.read_only,
            "remotePython": s.remote_python,
            "heartbeatSeconds": s.heartbeat,
            "ttlSeconds": s.offline_after,
            "state": state,
            "seq": self.seq,
            "sentAt": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "hosts": hosts if state == "online" else [],
        }

    def _launchable(self) -> list[str]:
        """The host applications `launch_host` starts here (the configured ones and the built-ins),
        read again only when the configuration file changed (a presence goes out every heartbeat)."""
        launcher = self.responder.launcher
        if launcher is None or self.settings.read_only:
            return []
        path = applications.config_path()
        try:
            stat = path.stat() if path is not None else None
            signature = (str(path), stat.st_mtime_ns, stat.st_size) if stat is not None else (str(path),)
        except OSError:
            signature = (str(path),)
        if self._apps is None or self._apps[0] != signature:
            try:
                names = [app.name for app in launcher.applications()][: frames.MAX_APPS]
            except Exception:  # a configuration that cannot be read is said where it is used
                names = []
            self._apps = (signature, names)
        return self._apps[1]

    def _local_entries(self) -> list[Any]:
        return sorted(self.directory.local_entries().values(), key=lambda e: e.key.pid)

    def _signature(self) -> tuple[tuple[int, int], ...]:
        return tuple((e.key.pid, id(e)) for e in self._local_entries())

    async def publish(self, state: str = "online") -> None:
        with contextlib.suppress(Exception):  # down: the next heartbeat after reconnecting says it
            await self.connection.client.publish(
                self.subjects.presence(self.settings.machine_id), frames.encode(self.presence(state))
            )

    async def run(self, tg: anyio.abc.TaskGroup) -> None:
        """Wait for the lock, then announce and serve this machine until cancelled."""
        while not self.lock.acquire():
            await anyio.sleep(LOCK_RETRY)
        subs: list[Any] = []
        try:
            self.registered = True
            log.info(
                "gateway registers machine=%s name=%s", self.settings.machine_id, self.settings.machine_name
            )
            subs = await self.responder.subscribe(tg)

            async def on_discover(msg: Any) -> None:
                self.announce_soon()

            subs.append(await self.connection.client.subscribe(self.subjects.discover, cb=on_discover))
            await self._announce_loop()
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(2):
                for sub in subs:
                    with contextlib.suppress(Exception):
                        await sub.unsubscribe()
                if self.registered:
                    await self.publish("offline")
                    with contextlib.suppress(Exception):
                        await self.connection.client.flush(timeout=1)
            self.registered = False
            self.lock.release()

    async def _announce_loop(self) -> None:
        last: tuple[tuple[int, int], ...] | None = None
        next_beat = 0.0
        while True:
            signature = self._signature()
            now = time.monotonic()
            if signature != last or now >= next_beat or self._wake.is_set():
                self._wake = anyio.Event()
                await self.publish()
                last, next_beat = signature, now + self.settings.heartbeat
            with anyio.move_on_after(WATCH_INTERVAL):
                await self._wake.wait()

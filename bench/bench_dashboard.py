"""Dashboard cost: the agent's calls with the page open against without it, and how soon the page hears.

    ./dev python bench/bench_dashboard.py [--calls N]

A real DXF host on the bundled sample and a real `cadmcp daemon --http`; an MCP SDK client
makes N calls of each kind (`search_dynamic`; `execute_python_code` adding a circle, then one
undoing it). Phase 1: no page. Phase 2: one page open: its event stream read, and the
drawing's live picture watched (every change asks the host for a new picture, coalesced),
plus one stream that never reads (a stalled browser). Printed per phase: p50/p95 of each call,
the daemon's CPU seconds and resident memory; and, with the page open, the time from a call's
answer to its line reaching the page, and from a change to the fresh picture's event.
Figures are printed, never asserted (target: p50 within 10 % of the no-page figure).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from cadmcp.daemon import httpauth  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_and_rss(pid: int) -> tuple[float, float]:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / TICK
    rss = int(fields[21]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    return cpu, rss


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] * 1000


class Page:
    """A logged-in page: reads the event stream in a thread, noting when each event arrived."""

    def __init__(self, base: str, link: str) -> None:
        self.parts = urlsplit(base)
        conn = http.client.HTTPConnection(self.parts.hostname, self.parts.port, timeout=30)
        login = urlsplit(link)
        conn.request("GET", f"{login.path}?{login.query}")
        response = conn.getresponse()
        response.read()
        self.cookie = response.getheader("set-cookie").split(";", 1)[0]
        conn.close()
        self.events: list[tuple[float, str, dict[str, Any]]] = []
        self.sock = socket.create_connection((self.parts.hostname, self.parts.port))
        self.sock.sendall(self._events_request())
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        buffer = b""
        with contextlib.suppress(OSError):
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    return
                buffer += chunk
                while b"\n\n" in buffer:
                    frame, buffer = buffer.split(b"\n\n", 1)
                    kind, data = "", ""
                    for line in frame.decode(errors="replace").splitlines():
                        if line.startswith("event: "):
                            kind = line[7:]
                        elif line.startswith("data: "):
                            data = line[6:]
                    if kind:
                        with contextlib.suppress(ValueError):
                            self.events.append((time.perf_counter(), kind, json.loads(data)))

    def watch(self, instance_id: str) -> None:
        conn = http.client.HTTPConnection(self.parts.hostname, self.parts.port, timeout=30)
        conn.request("GET", f"/dashboard/api/view/{instance_id}", headers={"Cookie": self.cookie})
        conn.getresponse().read()
        conn.close()

    def stalled(self) -> socket.socket:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
        sock.connect((self.parts.hostname, self.parts.port))
        sock.sendall(self._events_request())
        return sock

    def _events_request(self) -> bytes:
        head = f"GET /dashboard/api/events HTTP/1.1\r\nHost: {self.parts.netloc}\r\nCookie: {self.cookie}"
        return (head + "\r\n\r\n").encode()


async def phase(url: str, calls: int, page: Page | None, daemon_pid: int) -> dict[str, Any]:
    from mcp.client.session import ClientSession

    timings: dict[str, list[float]] = {"search": [], "change": []}
    heard: list[float] = []
    pictures: list[float] = []
    cpu0, _ = cpu_and_rss(daemon_pid)
    async with httpauth.connect(url) as (read, write, *_), ClientSession(read, write) as session:
        await session.discover()
        found = await session.call_tool("search_dynamic", {"query": "execute_python_code", "limit": 32})
        cap = next(i for i in found.structured_content["items"] if i["target"] == "execute_python_code")
        for n in range(calls):
            start = time.perf_counter()
            await session.call_tool("search_dynamic", {"query": f"circle layer {n}"})
            timings["search"].append(time.perf_counter() - start)
            for code in ("msp.add_circle((0, 0), 1)", "msp.delete_entity(msp.query('CIRCLE')[-1])"):
                seen = len(page.events) if page else 0
                start = time.perf_counter()
                await session.call_tool("invoke_dynamic", {"id": cap["id"], "arguments": {"code": code}})
                done = time.perf_counter()
                timings["change"].append(done - start)
                if page is None:
                    continue
                for _ in range(200):  # up to 2 s for the line to reach the page
                    new = [
                        e
                        for e in page.events[seen:]
                        if e[1] == "call" and e[2].get("target") == "invoke_dynamic"
                    ]
                    if new:
                        heard.append(new[0][0] - done)
                        break
                    await anyio.sleep(0.01)
            if page is not None:
                views = [e[0] for e in page.events if e[1] == "view"]
                if views and views[-1] > start:
                    pictures.append(views[-1] - start)
    cpu1, rss = cpu_and_rss(daemon_pid)
    return {"timings": timings, "heard": heard, "pictures": pictures, "cpu": cpu1 - cpu0, "rss": rss}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=40)
    args = parser.parse_args()
    top = Path(tempfile.mkdtemp(prefix="cbd"))
    env = dict(os.environ)
    for name, folder in (("CADMCP_RUNTIME_DIR", "r"), ("CADMCP_LOG_DIR", "l"), ("CADMCP_CONFIG_DIR", "c")):
        (top / folder).mkdir(mode=0o700)
        env[name] = str(top / folder)
    env["CADMCP_SEARCH_SEMANTIC"] = "off"
    os.environ.update(env)
    drawing = top / "plan.dxf"
    shutil.copy(ROOT / "samples" / "floorplan.dxf", drawing)
    procs = [
        subprocess.Popen([sys.executable, "-m", "cadmcp", "host", "dxf", str(drawing)], env=env),
    ]
    try:
        time.sleep(3)
        daemon = subprocess.Popen(
            [sys.executable, "-m", "cadmcp", "daemon", "--http", "--port", "0", "--scan-interval", "0.5"],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        procs.append(daemon)
        url = daemon.stdout.readline().split(" at ", 1)[1].split()[0]
        time.sleep(3)
        quiet = anyio.run(phase, url, args.calls, None, daemon.pid)
        link = (
            subprocess.run(
                [sys.executable, "-m", "cadmcp", "dashboard", "--no-open"],
                env=env,
                capture_output=True,
                text=True,
            )
            .stdout.split("open ", 1)[1]
            .split()[0]
        )
        page = Page(url.removesuffix("/mcp"), link)
        stalled = page.stalled()
        time.sleep(1)
        host = (
            next(e[2] for e in page.events if e[1] == "hosts")
            if any(e[1] == "hosts" for e in page.events)
            else None
        )
        if host is None:
            state = http.client.HTTPConnection(page.parts.hostname, page.parts.port)
            state.request("GET", "/dashboard/api/state", headers={"Cookie": page.cookie})
            host = json.loads(state.getresponse().read())
        page.watch(host["hosts"][0]["instanceId"])
        time.sleep(2)
        watched = anyio.run(phase, url, args.calls, page, daemon.pid)
        stalled.close()
        print(f"dashboard bench: {args.calls} rounds of 1 search + 2 changes on the DXF sample, one daemon")
        for name, result in (("no page", quiet), ("page open", watched)):
            search, change = result["timings"]["search"], result["timings"]["change"]
            print(
                f"  {name:<10} search p50 {pct(search, 0.5):6.1f} ms p95 {pct(search, 0.95):6.1f} ms | "
                f"change p50 {pct(change, 0.5):6.1f} ms p95 {pct(change, 0.95):6.1f} ms | "
                f"daemon CPU {result['cpu']:.2f} s, RSS {result['rss']:.0f} MB"
            )
        heard = watched["heard"]
        if heard:
            print(
                f"  a call's line reached the page {pct(heard, 0.5):.0f} ms (p50) / "
                f"{pct(heard, 0.95):.0f} ms (p95) after its answer ({len(heard)} of {2 * args.calls} seen)"
            )
        if watched["pictures"]:
            median = statistics.median(watched["pictures"]) * 1000
            print(f"  fresh picture event {median:.0f} ms (median) after a round began")
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10)
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    main()

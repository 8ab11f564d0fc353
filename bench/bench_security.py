"""What the security measures cost: log masking, the token check, spent-nonce bookkeeping, and an
authenticated HTTP round trip through a real daemon; prints figures beside named baselines.

python bench/bench_security.py [--requests 200]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from cadmcp.daemon.httpauth import StaticTokenVerifier
from cadmcp.daemon.replay import SpentNonces
from cadmcp.wire.calllog import clip, compact_result, format_line
from cadmcp.wire.masking import mask_secrets

# The key-only rule the call log used before (the baseline): names matched, text never looked at.
_OLD_KEY = re.compile(
    r"pass(word|wd|phrase)?$|token|secret|api[_-]?key|private[_-]?key|credential|authorization|cookie",
    re.IGNORECASE,
)


def _old_mask(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: "***" if _OLD_KEY.search(k) else _old_mask(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_old_mask(v) for v in value]
    return value


def _old_clip(value: Any, limit: int = 2000) -> Any:
    if isinstance(value, str):
        return value if len(value) <= limit else value[:limit]
    if isinstance(value, Mapping):
        return {k: _old_clip(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [_old_clip(v, limit) for v in value]
    return value


CODE = (
    "import math\nwalls = [e for e in msp.query('LWPOLYLINE') if e.dxf.layer == 'A-WALL']\n"
    "for w in walls:\n    pts = list(w.get_points('xy'))\n    print(len(pts), math.dist(pts[0], pts[-1]))\n"
) * 12
ARGS = {"id": "cq3v9x2", "arguments": {"code": CODE, "layer": "A-WALL", "options": {"dryRun": False}}}
RESULT = {
    "content": [{"type": "text", "text": "12 3400.0\n" * 40}],
    "structuredContent": {
        "output": "12 3400.0\n" * 40,
        "changed": 3,
        "items": [{"h": str(i)} for i in range(50)],
    },
    "isError": False,
}


def per_call_us(fn: Callable[[], Any], n: int = 2000) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


def log_line_costs() -> None:
    now = per_call_us(
        lambda: format_line(
            "tools/call",
            "ok",
            {
                "args": clip(ARGS),
                "result": compact_result(RESULT),
            },
        )
    )
    before = per_call_us(
        lambda: format_line(
            "tools/call", "ok", {"args": _old_clip(_old_mask(ARGS)), "result": _old_clip(RESULT)}
        )
    )
    label = "call-log line, invoke with 1.9 KB of code"
    print(f"{label:<52} {now:8.1f} us   key-only rule (before) {before:7.1f} us   x{now / before:.2f}")
    text = per_call_us(lambda: mask_secrets(CODE))
    print(f"{'masking 1.9 KB of script text':<52} {text:8.1f} us")


def token_and_nonces() -> None:
    verifier = StaticTokenVerifier("cadmcp_tok_" + "x" * 43, "http://127.0.0.1:8765/mcp")
    good = per_call_us(lambda: asyncio.run(verifier.verify_token("cadmcp_tok_" + "x" * 43)), 500)
    empty = per_call_us(lambda: asyncio.run(asyncio.sleep(0)), 500)
    print(f"{'token check (constant-time compare), net of asyncio.run':<52} {good - empty:8.1f} us")
    spent = SpentNonces(capacity=100_000)
    expires = time.time() + 600
    for i in range(100_000):
        spent.spend(f"n{i}", expires + i * 1e-6)
    counter = iter(range(10**9))
    cost = per_call_us(lambda: spent.spend(f"m{next(counter)}", expires + 1), 20_000)
    print(f"{'spending a requestState nonce (store full, 100k)':<52} {cost:8.1f} us   size {len(spent)}")


def http_round_trips(requests: int) -> None:
    import httpx2

    base = Path(tempfile.mkdtemp(prefix="cmb"))
    env = {
        **os.environ,
        "CADMCP_CONFIG_DIR": str(base / "config"),
        "CADMCP_RUNTIME_DIR": str(base / "run"),
        "CADMCP_LOG_DIR": str(base / "logs"),
        "CADMCP_SEARCH_SEMANTIC": "off",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "cadmcp", "daemon", "--http", "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split(" at ", 1)[1].split()[0]
        token = (base / "config" / "http-token").read_text().strip()
        hello = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "b", "version": "1"},
        }
        headers = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {token}"}
        with httpx2.Client(timeout=10) as client:
            init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}
            first = client.post(url, json=init, headers=headers)
            session = {
                "mcp-session-id": first.headers["mcp-session-id"],
                "mcp-protocol-version": "2025-11-25",
            }
            client.post(
                url,
                json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                headers={**headers, **session},
            )
            ok, refused = [], []
            for i in range(requests):
                start = time.perf_counter()
                answer = client.post(url, json={"jsonrpc": "2.0", "id": i + 1, "method": "ping"},
                                     headers={**headers, **session})  # fmt: skip
                ok.append(time.perf_counter() - start)
                assert answer.status_code == 200, answer.text
                start = time.perf_counter()
                denied = client.post(url, json={"jsonrpc": "2.0", "id": i + 1, "method": "ping"},
                                     headers={"Accept": headers["Accept"]})  # fmt: skip
                refused.append(time.perf_counter() - start)
                assert denied.status_code == 401
        ms = lambda xs: statistics.median(xs) * 1000  # noqa: E731
        p95 = lambda xs: sorted(xs)[int(len(xs) * 0.95)] * 1000  # noqa: E731
        print(f"{'HTTP ping with the token (real daemon)':<52} p50 {ms(ok):6.2f} ms   p95 {p95(ok):6.2f} ms")
        print(f"{'HTTP ping without it (401)':<52} p50 {ms(refused):6.2f} ms   p95 {p95(refused):6.2f} ms")
    finally:
        proc.terminate()
        proc.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    print("figures are noisy on a shared 2-core machine; compare ratios, not absolutes")
    log_line_costs()
    token_and_nonces()
    http_round_trips(args.requests)


if __name__ == "__main__":
    main()

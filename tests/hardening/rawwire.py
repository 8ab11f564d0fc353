"""A daemon spoken to in raw JSON-RPC lines, for inputs an SDK client would never send."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from cadmcp.daemon.search.semantic import SEMANTIC_ENV
from cadmcp.wire.endpoints import RUNTIME_DIR_ENV


class RawDaemon:
    """`cadmcp daemon` over stdio with a 2025-11-25 handshake done; send bytes, read answers by id."""

    def __init__(self, runtime_dir: Path, *, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cadmcp", "daemon", "--scan-interval", "0.5"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, RUNTIME_DIR_ENV: str(runtime_dir), SEMANTIC_ENV: "off", **(env or {})},
        )
        self._buffer = b""
        self.send(
            {
                "jsonrpc": "2.0",
                "id": "init",
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"},
                },
            }
        )
        assert self.answer("init", timeout=30) is not None
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any] | bytes) -> None:
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(data + b"\n")
        self.proc.stdin.flush()

    def call(self, request_id: int, tool: str, arguments: Any) -> dict[str, Any]:
        """A tools/call request (not sent)."""
        return {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }

    def answer(self, request_id: Any, timeout: float = 10.0) -> dict[str, Any] | None:
        """The answer to `request_id` (other lines are skipped), or None after `timeout`."""
        deadline = time.monotonic() + timeout
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while True:
            while b"\n" in self._buffer:
                line, self._buffer = self._buffer.split(b"\n", 1)
                message = json.loads(line)
                if message.get("id") == request_id:
                    return message
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    return None
                self._buffer += chunk

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def envelope(answer: dict[str, Any] | None) -> dict[str, Any]:
    """The typed envelope of a tool-call answer (fails when there was no answer or no envelope)."""
    assert answer is not None, "no answer"
    assert "result" in answer, answer
    body = answer["result"].get("structuredContent")
    assert isinstance(body, dict) and "type" in body, answer
    assert answer["result"].get("isError") is True
    return body

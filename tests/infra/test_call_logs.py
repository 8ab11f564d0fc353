"""Call logs at the daemon and at a host, read back from the files a real run wrote (invariant 7)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from tests.core.helpers import call, find_target, structured, wait_for_hosts

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


def _one(lines: list[dict[str, Any]], method: str, target: str, **match: Any) -> dict[str, Any]:
    found = [
        line
        for line in lines
        if line["method"] == method
        and line.get("target") == target
        and all(line.get(k) == v for k, v in match.items())
    ]
    assert len(found) == 1, (method, target, match, lines)
    return found[0]


async def test_every_call_leaves_one_line_at_the_daemon_and_at_the_host(
    hosts: Any, infra_daemon: Any, infra_env: Any
) -> None:
    infra_env.log_dir.mkdir(parents=True)
    old = infra_env.log_dir / "log_99_2020010100_0.log"
    recent = infra_env.log_dir / "log_98_2020010101_0.log"
    for path in (old, recent):
        path.write_text("an earlier run\n")
    month_ago = time.time() - 40 * 86400
    os.utime(old, (month_ago, month_ago))

    host = hosts.spawn("demo")
    dxf = hosts.spawn("dxf", "--exec-timeout", "1")
    hosts.wait_ready(host)
    hosts.wait_ready(dxf)
    secrets = {"user": "hi there", "password": "hunter2", "options": {"API_KEY": "k-123", "layer": "A"}}
    async with infra_daemon() as session:
        await wait_for_hosts(session, 2)
        daemon_pid = (await structured(session, "list_machines"))["machines"][0]["daemonPid"]
        echo = await find_target(session, "echo")
        sign_in = await find_target(session, "sign_in")
        run = await find_target(session, "execute_python_code", host_app="DXF")
        fail = await find_target(session, "fail")
        swatch = await find_target(session, "render_swatch")
        status = await find_target(session, "demo://status")
        greeting = await find_target(session, "demo://greeting/{name}")
        big = await find_target(session, "demo://big/{size}")
        said = await call(session, "invoke_dynamic", {"id": sign_in["id"], "arguments": secrets})
        assert said.content[0].text == "signed in hi there"
        assert (await call(session, "invoke_dynamic", {"id": echo["id"], "arguments": {"text": "x"}})).content
        failed = await call(session, "invoke_dynamic", {"id": fail["id"], "arguments": {"message": "nope"}})
        assert failed.is_error
        image = await call(session, "invoke_dynamic", {"id": swatch["id"], "arguments": {"size": 16}})
        assert image.content[0].type == "image"
        await call(session, "invoke_dynamic", {"id": status["id"]})
        reads = [
            {"id": greeting["id"], "arguments": {"name": "Ann"}},
            {"id": big["id"], "arguments": {"size": 10}},
        ]
        assert not (await call(session, "invoke_dynamic", {"reads": reads})).is_error
        spin = {"code": "while True:\n    pass", "description": "spin"}
        stopped = await call(session, "invoke_dynamic", {"id": run["id"], "arguments": spin})
        assert stopped.is_error and stopped.content[0].text.startswith("[TIMEOUT]")
        bogus = await call(session, "invoke_dynamic", {"id": "not-an-id"})
        assert bogus.is_error
        with pytest.raises(MCPError):
            await call(session, "nope", {})

    daemon = infra_env.log_lines(daemon_pid)
    at_host = infra_env.log_lines(host.pid)

    # the daemon: its own tools, the resolved host target, compact search hits
    ok = _one(daemon, "tools/call", "invoke_dynamic", hostTarget="sign_in")
    assert ok["outcome"] == "ok" and ok["host"] == f"Demo/1.0/{host.pid}"
    assert isinstance(ok["durationMs"], int) and ok["durationMs"] >= 0
    assert ok["args"]["arguments"] == {
        "user": "hi there",
        "password": "***",
        "options": {"API_KEY": "***", "layer": "A"},
    }
    assert ok["result"]["content"] == [{"type": "text", "text": "signed in hi there"}]
    error = _one(daemon, "tools/call", "invoke_dynamic", hostTarget="fail")
    assert error["outcome"] == "error" and error["result"]["isError"] is True
    binary = _one(daemon, "tools/call", "invoke_dynamic", hostTarget="render_swatch")
    (block,) = binary["result"]["content"]
    assert block["type"] == "image" and block["mimeType"] == "image/png" and block["length"] > 0
    assert "data" not in block
    assert set(block) == {"type", "mimeType", "length"}
    read = _one(daemon, "tools/call", "invoke_dynamic", hostTarget="demo://status")
    assert read["outcome"] == "ok" and read["result"]["content"][0]["type"] == "resource"
    timeout = _one(daemon, "tools/call", "invoke_dynamic", hostTarget="execute_python_code")
    assert timeout["outcome"] == "timeout" and timeout["host"] == f"DXF/{run['version']}/{dxf.pid}"
    assert timeout["durationMs"] >= 900
    (batch,) = [line for line in daemon if "hostTargets" in line]
    assert [(t["kind"], t["target"]) for t in batch["hostTargets"]] == [
        ("resource_template", "demo://greeting/{name}"),
        ("resource_template", "demo://big/{size}"),
    ]
    unresolved = _one(daemon, "tools/call", "invoke_dynamic", hostTarget="unresolved")
    assert (
        unresolved["outcome"] == "error"
        and unresolved["result"]["structuredContent"]["type"] == "validation_error"
    )
    unknown = _one(daemon, "tools/call", "nope")
    assert unknown["outcome"] == "error" and unknown["error"]["code"] == -32602
    searches = [line for line in daemon if line.get("target") == "search_dynamic"]
    assert searches and all(set(s["result"]) == {"count", "hasMore", "hits"} for s in searches)
    assert any({"id": echo["id"], "target": "echo"} in s["result"]["hits"] for s in searches)
    assert all(set(hit) == {"id", "target"} for s in searches for hit in s["result"]["hits"])
    catalog = [line["text"] for line in daemon if line["method"] == "info"]
    assert any(text.startswith(f"cadmcp.daemon catalog host=Demo pid={host.pid} tools=") for text in catalog)

    # the host: the same calls under their own names, binary as type/mime/length, secrets masked
    hello = _one(at_host, "tools/call", "sign_in")
    assert hello["outcome"] == "ok"
    assert hello["args"] == {
        "user": "hi there",
        "password": "***",
        "options": {"API_KEY": "***", "layer": "A"},
    }
    assert _one(at_host, "tools/call", "fail")["outcome"] == "error"
    (host_block,) = _one(at_host, "tools/call", "render_swatch")["result"]["content"]
    assert set(host_block) == {"type", "mimeType", "length"} and host_block["length"] == block["length"]
    dxf_timeout = _one(infra_env.log_lines(dxf.pid), "tools/call", "execute_python_code")
    assert dxf_timeout["outcome"] == "timeout" and dxf_timeout["args"] == spin
    resource = _one(at_host, "resources/read", "demo://status")
    assert resource["outcome"] == "ok" and resource["result"]["contents"][0]["uri"] == "demo://status"
    assert "args" not in resource
    assert _one(at_host, "resources/read", "demo://greeting/Ann")["outcome"] == "ok"
    assert _one(at_host, "resources/read", "demo://big/10")["outcome"] == "ok"

    every_line = "\n".join(p.read_text() for p in infra_env.log_dir.glob("log_*.log"))
    assert "hunter2" not in every_line and "k-123" not in every_line
    assert not old.exists() and recent.exists()
    stderr = infra_env.stderr.read_text()
    assert "tools/call" not in stderr and "catalog" not in stderr
    assert all(Path(p).name.startswith("log_") for p in os.listdir(infra_env.log_dir))

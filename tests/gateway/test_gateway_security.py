"""Who may reach which machine: the server's permissions, credentials, and a machine's own policy."""

from __future__ import annotations

from typing import Any

import anyio
import nats
import pytest

from tests.core.helpers import call, find_target, structured, wait_for_hosts
from tests.gateway.conftest import PASSWORDS, SAMPLES, machine_listing, serving_pair, wait_machine, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_another_users_machines_are_out_of_reach_and_the_server_refuses_their_subjects(
    nats_server: Any, machines: Any
) -> None:
    server, alpha, bravo, _ = serving_pair(nats_server, machines)
    carol = machines("carol-ws", "carol", user="bob")
    carol.host("demo", "--app", "Bobs")
    carol.serve(CADMCP_GATEWAY=server.url)

    async with alpha.client(CADMCP_GATEWAY=server.url) as session:
        await wait_machine(session, "bravo-render", 1)
        echo = await find_target(session, "echo")
        listing = await machine_listing(session)
        assert [m["machineId"] for m in listing["machines"]] == ["alpha-ws", "bravo-render"]  # no carol

    # bob's own client, straight on the server: every subject of alice's space is refused by the server
    refused: list[str] = []
    received: list[Any] = []

    async def on_error(exc: Exception) -> None:
        refused.append(str(exc))

    client = await nats.connect(server.url, user="bob", password=PASSWORDS["bob"], error_cb=on_error)
    try:

        async def got(msg: Any) -> None:
            received.append(msg)

        await client.subscribe("cadmcp.alice.>", cb=got)
        await client.subscribe("cadmcp.bob.inbox.x", cb=got)
        call_body = (
            b'{"method":"tools/call","params":{"name":"echo","arguments":{"text":"from bob"}},"pid":1}'
        )
        await client.publish("cadmcp.alice.m.bravo-render.call", call_body, reply="cadmcp.bob.inbox.x")
        await client.publish("cadmcp.alice.discover", b"{}")
        await client.flush()

        async def three_refusals() -> bool:
            return len(refused) >= 3

        await wait_until(three_refusals, 5)
    finally:
        await client.close()
    assert any('subscription to "cadmcp.alice.>"' in r.lower() for r in refused), refused
    assert any('publish to "cadmcp.alice.m.bravo-render.call"' in r.lower() for r in refused), refused
    assert any('publish to "cadmcp.alice.discover"' in r.lower() for r in refused), refused
    await anyio.sleep(1.5)  # alice's machines keep announcing themselves meanwhile
    assert received == []
    assert not [line for line in bravo.log_lines() if line.get("via") == "gateway"]  # nothing reached bravo

    # a daemon of bob's that claims alice's space is refused by the server, and says so
    async with carol.client(CADMCP_GATEWAY=server.url, CADMCP_GATEWAY_SPACE="alice") as spy:

        async def denied() -> dict[str, Any] | None:
            listing = await machine_listing(spy)
            return listing if listing["gateway"].get("permissionDenied") else None

        listing = await wait_until(denied, 10)
        assert listing["gateway"]["permissionDenied"]["type"] == "permission_denied"
        denied_said = listing["gateway"]["permissionDenied"]
        assert all(s.startswith("cadmcp.alice.") for s in denied_said["subjects"])
        # it said bob "may use only cadmcp.alice.>", the space it was refused
        assert "the NATS user 'bob': its space is usually 'bob'" in denied_said["message"], denied_said
        assert "may use only" not in denied_said["message"]
        assert [m["machineId"] for m in listing["machines"]] == ["carol-ws"]
        assert (await structured(spy, "search_dynamic", {"query": "echo"}))["items"][0]["hostApp"] == "Bobs"
        stale = await call(spy, "invoke_dynamic", {"id": echo["id"], "arguments": {"text": "x"}})
        assert stale.structured_content["type"] == "stale" and stale.structured_content["reason"] == "unknown"


async def test_wrong_credentials_and_an_unreachable_gateway_are_typed_errors_without_secrets(
    nats_server: Any, machines: Any
) -> None:
    server = nats_server()
    alpha = machines("alpha-ws", "alpha")
    alpha.host("demo")
    wrong = "not-the-pw-Zz81"
    async with alpha.client(CADMCP_GATEWAY=server.url, CADMCP_GATEWAY_PASSWORD=wrong) as session:

        async def refused() -> dict[str, Any] | None:
            gateway = (await machine_listing(session))["gateway"]
            return gateway if gateway["state"] == "auth_failed" else None

        gateway = await wait_until(refused, 10)
        assert gateway["error"]["type"] == "authentication_failed"
        assert gateway["error"]["url"] == server.url
        assert wrong not in str(gateway)
        there = await call(session, "search_dynamic", {"query": "echo", "machineId": "bravo"})
        said = there.structured_content  # not "no machine 'bravo' is known": none can be, and why
        assert said["type"] == "gateway_down" and "refused this daemon's credentials" in said["message"], said
        # local hosts keep working meanwhile
        await wait_for_hosts(session, 1)
        echo = await find_target(session, "echo")
        assert (
            await call(session, "invoke_dynamic", {"id": echo["id"], "arguments": {"text": "ok"}})
        ).content

    secret_url = server.url.replace("nats://", f"nats://alice:{wrong}@")
    closed_port = server.url.rsplit(":", 1)[0] + ":9"
    async with alpha.client(CADMCP_GATEWAY=closed_port, CADMCP_GATEWAY_TOKEN="tok-Secret-55") as session:

        async def unreachable() -> dict[str, Any] | None:
            gateway = (await machine_listing(session))["gateway"]
            return gateway if gateway["state"] == "unreachable" else None

        gateway = await wait_until(unreachable, 10)
        assert gateway["error"]["type"] == "gateway_unreachable"
        assert closed_port in gateway["error"]["message"] and gateway["error"]["url"] == closed_port
    no_user = {"CADMCP_GATEWAY_USER": "", "CADMCP_GATEWAY_PASSWORD": ""}
    async with alpha.client(CADMCP_GATEWAY=secret_url, **no_user) as session:  # credentials in the URL
        gateway = await wait_until(refused_state(session), 10)
        assert gateway["url"] == server.url and wrong not in str(gateway)

    missing = "/no/such/ca.pem"  # a wrong setting stopped the daemon, this machine's hosts with it
    async with alpha.client(CADMCP_GATEWAY=server.url, CADMCP_GATEWAY_TLS_CA=missing) as session:
        await wait_for_hosts(session, 1)  # this machine's hosts are served
        gateway = (await machine_listing(session))["gateway"]
        assert gateway["state"] == "config_error" and missing in gateway["error"]["message"], gateway
        assert "tlsCa" in gateway["error"]["message"] and "tls_ca" not in gateway["error"]["message"]
        elsewhere = await call(session, "launch_host", {"hostApp": "Demo", "machineId": "bravo-render"})
        assert elsewhere.structured_content["type"] == "config_error", elsewhere.structured_content

    async with alpha.client(CADMCP_GATEWAY="") as session:  # no gateway at all
        listing = await machine_listing(session)
        assert listing["gateway"]["error"]["type"] == "gateway_not_configured"
        assert listing["count"] == 1 and listing["machines"][0]["machineId"] == "alpha-ws"
        launch = await call(session, "launch_host", {"hostApp": "Demo", "machineId": "bravo-render"})
        assert launch.structured_content["type"] == "gateway_not_configured"

    everything = alpha.log_text()
    for secret in (wrong, "tok-Secret-55", PASSWORDS["alice"]):
        assert secret not in everything


def refused_state(session: Any) -> Any:
    async def check() -> dict[str, Any] | None:
        gateway = (await machine_listing(session))["gateway"]
        return gateway if gateway["state"] == "auth_failed" else None

    return check


async def test_a_read_only_machine_refuses_changes_and_python_from_other_machines(
    nats_server: Any, machines: Any
) -> None:
    server = nats_server()
    alpha = machines("alpha-ws", "alpha")
    bravo = machines("bravo-render", "bravo")
    delta = machines("delta-ws", "delta")
    bravo.host("dxf", str(SAMPLES / "floorplan.dxf"))
    bravo.serve(CADMCP_GATEWAY=server.url, CADMCP_GATEWAY_READ_ONLY="1")
    delta.host("dxf", str(SAMPLES / "floorplan.dxf"))
    delta.serve("--no-remote-python", CADMCP_GATEWAY=server.url)
    async with alpha.client(CADMCP_GATEWAY=server.url) as session:
        await wait_machine(session, "bravo-render", 1)
        await wait_machine(session, "delta-ws", 1)
        listing = {m["machineId"]: m for m in (await machine_listing(session))["machines"]}
        assert listing["bravo-render"]["readOnly"] is True and listing["delta-ws"]["remotePython"] is False

        code = {"code": "result = len(list(doc.modelspace()))"}
        for machine in ("bravo-render", "delta-ws"):
            run = (
                await structured(session, "search_dynamic", {"query": "execute python", "machineId": machine})
            )["items"][0]
            assert run["target"] == "execute_python_code"
            refused = await call(session, "invoke_dynamic", {"id": run["id"], "arguments": code})
            assert refused.is_error and refused.structured_content["type"] == "remote_refused"
            assert refused.structured_content["machineId"] == machine

        # reads, and tools marked read-only, still work on the read-only machine
        shot = (
            await structured(session, "search_dynamic", {"query": "screenshot", "machineId": "bravo-render"})
        )["items"][0]
        image = await call(session, "invoke_dynamic", {"id": shot["id"], "arguments": {"width": 300}})
        assert not image.is_error and image.content[0].type == "image"
        save = (
            await structured(
                session, "search_dynamic", {"query": "save drawing", "machineId": "bravo-render"}
            )
        )["items"][0]
        assert save["target"] == "save_document"
        refused = await call(session, "invoke_dynamic", {"id": save["id"], "arguments": {}})
        assert refused.structured_content["type"] == "remote_refused"
        assert refused.structured_content["message"].startswith("The machine 'bravo' takes only reads")
        launch = await call(session, "launch_host", {"hostApp": "Demo", "machineId": "bravo-render"})
        said = launch.structured_content  # the machine named once, nothing to fix "there"
        assert said["type"] == "remote_refused" and said["message"].startswith("The machine 'bravo'"), said
        assert "do it there" not in said["message"], said

        # a file's metadata is a read: the read-only machine answers it, and says where it was read
        path = str(SAMPLES / "floorplan.dxf")
        info = await structured(session, "read_file_info", {"filePath": path, "machineId": "bravo"})
        assert info["machineId"] == "bravo-render" and info["machine"] == "bravo"
        assert info["format"] == "dxf" and info["path"] == path
        missing = await call(session, "read_file_info", {"filePath": "/no/such.dxf", "machineId": "bravo"})
        said = missing.structured_content
        assert missing.is_error and said["type"] == "not_found" and said["machineId"] == "bravo-render"
        assert said["message"].startswith("On the machine 'bravo': '/no/such.dxf' does not exist")
    reads = [line for line in bravo.log_lines() if line.get("target") == "read_file_info"]
    assert [line["outcome"] for line in reads] == ["ok", "error"]
    assert {line["callerMachine"] for line in reads} == {"alpha-ws"}

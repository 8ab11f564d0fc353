"""Every way a machine can authenticate: creds files (accounts), nkey seeds, tokens, TLS with a CA,
and settings from the configuration file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nkeys
import pytest
import trustme

from tests.core.helpers import call, find_target
from tests.gateway.conftest import machine_listing, user_block, wait_machine, wait_until
from tests.gateway.natsauth import Identity, Operator

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

NO_PASSWORD = {"CADMCP_GATEWAY_USER": "", "CADMCP_GATEWAY_PASSWORD": ""}


async def _state(session: Any, wanted: str) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        gateway = (await machine_listing(session))["gateway"]
        if wanted == "connected" and gateway.get("registeredBy") == "nobody yet":
            return None  # connected a moment ago; the registration follows
        return gateway if gateway["state"] == wanted else None

    return await wait_until(check, 15)


async def test_creds_files_of_two_accounts_keep_their_machines_apart(
    nats_server: Any, machines: Any, tmp_path: Path
) -> None:
    operator = Operator()
    operator.account("ALICE_TEAM")
    operator.account("BOB_TEAM")
    server = nats_server(auth=operator.server_auth())
    alice1 = operator.creds("ALICE_TEAM", "alice-ws", ["cadmcp.alice.>"], tmp_path)
    alice2 = operator.creds("ALICE_TEAM", "alice-render", ["cadmcp.alice.>"], tmp_path)
    bob = operator.creds("BOB_TEAM", "bob-ws", ["cadmcp.>"], tmp_path)

    alpha = machines("alpha-ws", "alpha", user=None, CADMCP_GATEWAY_SPACE="alice")
    bravo = machines("bravo-render", "bravo", user=None, CADMCP_GATEWAY_SPACE="alice")
    carol = machines(
        "carol-ws", "carol", user=None, CADMCP_GATEWAY_SPACE="alice"
    )  # bob, claiming alice's space
    bravo.host("demo")
    bravo.serve("--creds", str(alice2), CADMCP_GATEWAY=server.url)
    carol.serve("--creds", str(bob), CADMCP_GATEWAY=server.url)
    async with alpha.client("--creds", str(alice1), CADMCP_GATEWAY=server.url) as session:
        await wait_machine(session, "bravo-render", 1)
        echo = await find_target(session, "echo")
        said = await call(
            session, "invoke_dynamic", {"id": echo["id"], "arguments": {"text": "same account"}}
        )
        assert said.content[0].text == "same account"
        assert [m["machineId"] for m in (await machine_listing(session))["machines"]] == [
            "alpha-ws",
            "bravo-render",
        ]
    async with carol.client("--creds", str(bob), CADMCP_GATEWAY=server.url) as spy:
        await _state(spy, "connected")
        listing = await machine_listing(spy)
        assert [m["machineId"] for m in listing["machines"]] == ["carol-ws"]  # another account: nothing seen
    assert "NKEY SEED" not in alpha.log_text() and alice1.read_text().split()[5] not in alpha.log_text()


async def test_nkey_seeds_tls_with_a_ca_and_tokens(nats_server: Any, machines: Any, tmp_path: Path) -> None:
    authority = trustme.CA()
    cert = authority.issue_cert("127.0.0.1", "localhost")
    cert.private_key_and_cert_chain_pem.write_to_path(str(tmp_path / "server.pem"))
    authority.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    user = Identity.new(nkeys.PREFIX_BYTE_USER)
    seed = tmp_path / "alpha.nk"
    seed.write_bytes(user.seed)
    pem = tmp_path / "server.pem"
    tls = f'tls {{ cert_file: "{pem}", key_file: "{pem}" }}'
    server = nats_server(auth=f"{tls}\nauthorization {{ users = [{user_block('alice', nkey=user.public)}] }}")
    secure = server.url.replace("nats://", "tls://")

    alpha = machines("alpha-ws", "alpha", **NO_PASSWORD, CADMCP_GATEWAY_SPACE="alice")
    async with alpha.client(
        "--nkey", str(seed), "--tls-ca", str(tmp_path / "ca.pem"), CADMCP_GATEWAY=secure
    ) as session:
        gateway = await _state(session, "connected")
        assert gateway["registeredBy"] == "this daemon"
    async with alpha.client("--nkey", str(seed), CADMCP_GATEWAY=secure) as session:  # no CA: not trusted
        gateway = await _state(session, "unreachable")
        assert gateway["error"]["type"] == "gateway_unreachable"
        assert "certificate" in gateway["error"]["message"].lower()
        assert "give the CA that signed it with tlsCa" in gateway["error"]["message"], gateway  # not the port

    token_server = nats_server(auth='authorization { token: "team-token-9Ab" }')
    token_machine = machines("tango-ws", "tango", user=None)
    async with token_machine.client(
        CADMCP_GATEWAY=token_server.url, CADMCP_GATEWAY_TOKEN="team-token-9Ab"
    ) as s:
        assert (await _state(s, "connected"))["registeredBy"] == "this daemon"
    async with token_machine.client(CADMCP_GATEWAY=token_server.url, CADMCP_GATEWAY_TOKEN="wrong-token") as s:
        gateway = await _state(s, "auth_failed")
        assert "wrong-token" not in str(gateway)
        assert "it sent a token)" in gateway["error"]["message"], gateway  # which kind, never its value
    assert "team-token-9Ab" not in token_machine.log_text() and "wrong-token" not in token_machine.log_text()


async def test_a_tls_address_never_sends_credentials_to_a_server_without_tls(
    nats_server: Any, machines: Any
) -> None:
    """nats-py turns a connection to TLS only when the server asks: a tls:// address to a plain
    server (or to someone in between who does not ask) connected, the password in plain text."""
    server = nats_server()
    alpha = machines("alpha-ws", "alpha")
    async with alpha.client(CADMCP_GATEWAY=server.url.replace("nats://", "tls://")) as session:
        gateway = await _state(session, "unreachable")
        message = gateway["error"]["message"]
        assert gateway["error"]["type"] == "gateway_unreachable" and "does not offer TLS" in message, message
        assert "nothing was sent" in message and "alice-pw" not in str(gateway)


async def test_the_gateway_section_of_the_configuration_file(nats_server: Any, machines: Any) -> None:
    server = nats_server()
    alpha = machines("alpha-ws", "alpha", user=None)
    bravo = machines("bravo-render", "bravo", user=None)
    for machine in (alpha, bravo):
        section = {
            "url": server.url,
            "user": "alice",
            "password": "alice-pw-7Qx9",
            "space": "alice",
            "machineName": f"{machine.name} (from the file)",
            "heartbeatSeconds": 0.5,
            "ttlSeconds": 2,
        }
        machine.config.write_text(json.dumps({"gateway": section, "hosts": {}}))
    bravo.host("demo")
    bravo.serve(CADMCP_MACHINE_NAME="")  # the name comes from the file alone
    async with alpha.client() as session:
        seen = await wait_machine(session, "bravo-render", 1)
        assert seen["name"] == "bravo (from the file)"
        launched = await call(session, "launch_host", {"hostApp": "Demo"})  # the file still configures hosts
        assert not launched.is_error

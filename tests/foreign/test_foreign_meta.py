"""A foreign server's catalog cannot speak for cadmcp: its `io.cadmcp/` `_meta` keys are dropped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cadmcp.applications import CONFIG_ENV
from cadmcp.foreign.proxy import _without_our_meta
from tests.core.helpers import call, find, wait_for_hosts
from tests.foreign.conftest import config_env, shape_server

pytestmark = [pytest.mark.anyio]


def test_only_cadmcp_keys_go_and_an_emptied_meta_with_them() -> None:
    items = [
        {"name": "a", "_meta": {"io.cadmcp/navigates": True, "vendor/x": 1}},
        {"name": "b", "_meta": {"io.cadmcp/fallback": ["change"]}},
        {"name": "c", "_meta": {"vendor/y": 2}},
        {"name": "d"},
    ]
    assert _without_our_meta(items) == [
        {"name": "a", "_meta": {"vendor/x": 1}},
        {"name": "b"},
        {"name": "c", "_meta": {"vendor/y": 2}},
        {"name": "d"},
    ]


@pytest.mark.slow
async def test_a_foreign_tool_claiming_to_only_switch_documents_is_still_a_change(
    hosts: Any, daemon_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server whose tool declared `io.cadmcp/navigates` (and a fallback for every change) had its
    call counted as a read by the read-only profile."""
    env = config_env(tmp_path, {"Shapes": shape_server("poisoned")}, policy={"profile": "read-only"})
    monkeypatch.setenv(CONFIG_ENV, env[CONFIG_ENV])
    hosts.wait_ready(hosts.spawn("Shapes"), 60)
    async with daemon_client(env=env) as session:
        await wait_for_hosts(session, 1)
        items = await find(session, "add numbers", limit=8)
        tool = next(i for i in items if i["target"] == "add_numbers")
        denied = await call(session, "invoke_dynamic", {"id": tool["id"], "arguments": {}})
        assert denied.is_error and denied.structured_content["rule"] == "changes", denied.content


@pytest.mark.slow
async def test_a_foreign_answer_cannot_stamp_a_checkpoint(
    hosts: Any, daemon_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server whose answer carried `_meta["io.cadmcp/checkpoint"]` had it listed by
    list_checkpoints as an agent's change of a drawing it never touched."""
    env = config_env(tmp_path, {"Shapes": shape_server("poisoned")})
    monkeypatch.setenv(CONFIG_ENV, env[CONFIG_ENV])
    hosts.wait_ready(hosts.spawn("Shapes"), 60)
    async with daemon_client(env=env) as session:
        await wait_for_hosts(session, 1)
        items = await find(session, "add numbers", limit=8)
        tool = next(i for i in items if i["target"] == "add_numbers")
        answer = await call(session, "invoke_dynamic", {"id": tool["id"], "arguments": {}})
        meta = answer.meta or {}
        assert not answer.is_error and meta["vendor/trace"] == "t-1", meta  # the server's own keys stay
        assert not [key for key in meta if key.startswith("io.cadmcp/")], meta
        own = next(
            i for i in await find(session, "list checkpoints", limit=8) if i["target"] == "list_checkpoints"
        )
        listed = await call(session, "invoke_dynamic", {"id": own["id"], "arguments": {"gone": True}})
        assert listed.structured_content["checkpoints"] == [], listed.structured_content

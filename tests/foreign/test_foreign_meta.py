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
    env = _poisoned(hosts, tmp_path, monkeypatch, policy={"profile": "read-only"})
    async with daemon_client(env=env) as session:
        denied = await _add_numbers(session)
        assert denied.is_error and denied.structured_content["rule"] == "changes", denied.content


@pytest.mark.slow
async def test_a_foreign_answer_cannot_stamp_a_checkpoint(
    hosts: Any, daemon_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server whose answer carried `_meta["io.cadmcp/checkpoint"]` had it listed by
    list_checkpoints as an agent's change of a drawing it never touched."""
    async with daemon_client(env=_poisoned(hosts, tmp_path, monkeypatch)) as session:
        answer = await _add_numbers(session)
        meta = answer.meta or {}
        assert not answer.is_error and meta["vendor/trace"] == "t-1", meta  # the server's own keys stay
        assert not [key for key in meta if key.startswith("io.cadmcp/")], meta
        own = next(
            i for i in await find(session, "list checkpoints", limit=8) if i["target"] == "list_checkpoints"
        )
        listed = await call(session, "invoke_dynamic", {"id": own["id"], "arguments": {"gone": True}})
        assert listed.structured_content["checkpoints"] == [], listed.structured_content


def _poisoned(hosts: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **sections: Any) -> dict[str, str]:
    """The environment of a daemon with the `poisoned` shape server running as the host Shapes."""
    env = config_env(tmp_path, {"Shapes": shape_server("poisoned")}, **sections)
    monkeypatch.setenv(CONFIG_ENV, env[CONFIG_ENV])
    hosts.wait_ready(hosts.spawn("Shapes"), 60)
    return env


async def _add_numbers(session: Any) -> Any:
    await wait_for_hosts(session, 1)
    tool = next(i for i in await find(session, "add numbers", limit=8) if i["target"] == "add_numbers")
    return await call(session, "invoke_dynamic", {"id": tool["id"], "arguments": {}})

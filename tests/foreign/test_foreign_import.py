"""`cadmcp host import FILE`: the servers other MCP clients list (Claude Desktop, Claude Code,
Cursor, VS Code), made host entries; and one of them launched and called through a real daemon."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cadmcp.applications import CONFIG_ENV, configured
from cadmcp.cli import main as cli_main
from cadmcp.foreign.importing import import_servers
from tests.core.helpers import call
from tests.foreign.servers import python_command

pytestmark = pytest.mark.usefixtures("no_virtualenv_on_path")

CLAUDE_DESKTOP = {
    "mcpServers": {
        "time": {"command": "uvx", "args": ["mcp-server-time", "--local-timezone=Europe/Paris"]},
        "github": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-github"],
            "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}", "GITHUB_HOST": "${HOST:-github.com}"},
        },
        "cadmcp": {"command": "uvx", "args": ["cadmcp", "daemon"]},
        "legacy": {"type": "sse", "url": "http://localhost:8000/sse"},
        "off": {"command": "mcp-off", "disabled": True},
        "vendor api": {
            "url": "https://mcp.example.com/mcp",
            "headers": {"Authorization": "Bearer ${env:VENDOR_TOKEN}"},
        },
        "broken": {"args": ["x"]},
    }
}
VSCODE = {
    "inputs": [{"type": "promptString", "id": "perplexity-key", "password": True}],
    "servers": {
        "Perplexity": {
            "type": "stdio",
            "command": "npx",
            "args": ["-y", "server-perplexity-ask"],
            "env": {"PERPLEXITY_API_KEY": "${input:perplexity-key}"},
        },
        "fs": {"command": "npx", "args": ["-y", "server-filesystem", "${workspaceFolder}"]},
        "remote": {"type": "http", "url": "https://api.example.com/mcp", "headers": {"X-Key": "k"}},
    },
}


def _notes(found: Any) -> list[str]:
    return [note for notes in found.notes.values() for note in notes]


def test_a_claude_desktop_list_becomes_host_entries_with_references_for_its_variables() -> None:
    found = import_servers(CLAUDE_DESKTOP, Path("claude_desktop_config.json"))
    assert found.entries["time"] == {
        "server": {"command": "uvx", "args": ["mcp-server-time", "--local-timezone=Europe/Paris"]}
    }
    assert found.entries["github"]["server"]["env"] == {
        "GITHUB_PERSONAL_ACCESS_TOKEN": "env:GITHUB_TOKEN",
        "GITHUB_HOST": "env:HOST",
    }
    assert found.entries["vendor-api"]["server"] == {
        "url": "https://mcp.example.com/mcp",
        "headers": {"Authorization": "Bearer env:VENDOR_TOKEN"},
    }
    assert set(found.skipped) == {"cadmcp", "legacy", "off", "broken"}
    assert found.skipped["cadmcp"] == "it is cadmcp itself"
    assert "SSE transport" in found.skipped["legacy"] and "--url URL" in found.skipped["legacy"]
    assert "neither a command nor a URL" in found.skipped["broken"]
    assert any("default in '${HOST:-github.com}' is dropped: set HOST" in n for n in _notes(found))
    assert found.notes["vendor-api"][0].startswith("named vendor-api ('vendor api' is not a host name")
    assert found.listed_as["vendor-api"] == "vendor api"


def test_a_vscode_list_has_its_inputs_named_as_variables_and_its_workspace_filled_in(tmp_path: Path) -> None:
    source = tmp_path / "site" / ".vscode" / "mcp.json"
    found = import_servers(VSCODE, source)
    assert found.entries["Perplexity"]["server"]["env"] == {"PERPLEXITY_API_KEY": "env:PERPLEXITY_KEY"}
    assert found.entries["fs"]["server"]["args"][-1] == str((tmp_path / "site").resolve())
    remote = found.entries["remote"]["server"]
    assert remote == {"url": "https://api.example.com/mcp", "headers": {"X-Key": "k"}}
    assert any("asked for 'perplexity-key'" in n and "set PERPLEXITY_KEY" in n for n in _notes(found))
    elsewhere = import_servers(VSCODE, tmp_path / "mcp.json")  # not in a workspace: said, not guessed
    assert any("${workspaceFolder}" in n for n in _notes(elsewhere))
    assert (
        import_servers({"theme": "dark"}, tmp_path / "settings.json")
        .notes[""][0]
        .endswith("lists no MCP servers (no mcpServers, servers or mcp.servers table)")
    )


@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_host_import_writes_the_entries_once_and_keeps_what_was_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], suffix: str
) -> None:
    config = tmp_path / f"hosts{suffix}"
    if suffix == ".toml":
        config.write_text('# my hosts\n[hosts.Mine.server]\ncommand = "mine"\n')
    monkeypatch.setenv(CONFIG_ENV, str(config))
    source = tmp_path / "claude_desktop_config.json"
    source.write_text(json.dumps(CLAUDE_DESKTOP))

    assert cli_main(["host", "import", str(source), "--dry-run"]) == 0
    assert "would add time: uvx mcp-server-time" in capsys.readouterr().out
    assert suffix == ".toml" or not config.exists()  # a dry run writes nothing

    assert cli_main(["host", "import", str(source), "--only", "time", "--only", "GitHub"]) == 0
    out, err = capsys.readouterr()
    assert "added time" in out and "added github" in out and "vendor-api" not in out
    assert "GITHUB_TOKEN, which is not set here" in err
    names = {a.name for a in configured(config)}
    assert {"time", "github"} <= names and "vendor-api" not in names
    if suffix == ".toml":
        assert config.read_text().startswith("# my hosts\n") and "Mine" in names

    assert cli_main(["host", "import", str(source)]) == 0  # the rest; what is there stays
    out = capsys.readouterr().out
    assert "left out time: " in out and "already has time (--force replaces it)" in out
    assert "added vendor-api" in out
    assert cli_main(["host", "import", str(tmp_path / "missing.json")]) == 2


def test_a_server_named_like_a_built_in_host_is_imported_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(CONFIG_ENV, str(tmp_path / "hosts.json"))
    source = tmp_path / ".mcp.json"
    source.write_text(json.dumps({"mcpServers": {"freecad": {"command": "uvx", "args": ["freecad-mcp"]}}}))
    assert cli_main(["host", "import", str(source)]) == 0
    assert "added freecad-mcp: uvx freecad-mcp" in capsys.readouterr().out
    assert "freecad-mcp" in {a.name for a in configured(tmp_path / "hosts.json")}


@pytest.mark.anyio
@pytest.mark.slow
async def test_an_imported_server_is_launched_and_called_through_the_daemon(
    daemon_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    command, args = python_command("mcp_server_time", "--local-timezone", "UTC")
    source = tmp_path / "claude_desktop_config.json"
    source.write_text(json.dumps({"mcpServers": {"clock": {"command": command, "args": args}}}))
    config = tmp_path / "hosts.json"
    monkeypatch.setenv(CONFIG_ENV, str(config))
    assert cli_main(["host", "import", str(source)]) == 0
    async with daemon_client(env={CONFIG_ENV: str(config)}) as session:
        launched = await call(session, "launch_host", {"hostApp": "clock", "timeoutSeconds": 60})
        assert not launched.is_error, launched
        host = launched.structured_content["hostInstanceId"]
        found = await call(session, "search_dynamic", {"query": "current time", "hostInstanceId": host})
        item = next(i for i in found.structured_content["items"] if i["target"] == "get_current_time")
        result = await call(session, "invoke_dynamic", {"id": item["id"], "arguments": {"timezone": "UTC"}})
        assert not result.is_error and result.structured_content["timezone"] == "UTC", result


def test_a_vscode_file_with_comments_and_trailing_commas_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(CONFIG_ENV, str(tmp_path / "hosts.json"))
    source = tmp_path / ".vscode" / "mcp.json"
    source.parent.mkdir()
    source.write_text(
        '// servers for this workspace\n{\n  "servers": {\n    /* the clock */\n'
        '    "clock": {"command": "uvx", "args": ["mcp-server-time",],},\n  },\n}\n'
    )
    assert cli_main(["host", "import", str(source)]) == 0
    assert "added clock: uvx mcp-server-time" in capsys.readouterr().out


def test_host_import_alone_lists_the_clients_files_found_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / ".config"))
    monkeypatch.chdir(tmp_path)
    assert cli_main(["host", "import"]) == 1
    assert "no MCP client's server list was found here" in capsys.readouterr().out
    desktop = tmp_path / ".config" / "Claude" / "claude_desktop_config.json"
    desktop.parent.mkdir(parents=True)
    desktop.write_text(json.dumps(CLAUDE_DESKTOP))
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {}}')  # nothing to import: not listed
    assert cli_main(["host", "import"]) == 0
    out = capsys.readouterr().out
    assert f"Claude Desktop: {desktop}  (7: time, github, cadmcp" in out and ".mcp.json" not in out


def test_what_cadmcp_cannot_expand_or_speak_is_kept_as_written_or_left_out_and_said(tmp_path: Path) -> None:
    project = tmp_path / "site"
    data = {
        "mcpServers": {
            "pg": {"command": "npx", "args": ["server-postgres", "${env:DATABASE_URL}"]},
            "cline-sse": {"url": "http://localhost:6688/sse", "transportType": "sse"},
            "windsurf-sse": {"serverUrl": "https://mcp.example.com/sse"},
            "local": {"command": "node", "args": ["build/index.js"], "cwd": "./tool"},
            "here": {"command": "node", "args": ["${workspaceFolder}/index.js"]},
            "高德地图": {"url": "https://mcp.example.cn/mcp"},
        }
    }
    found = import_servers(data, project / ".mcp.json")  # a project's file: its servers start there
    assert found.entries["pg"]["server"]["args"] == ["server-postgres", "env:DATABASE_URL"]  # filled in
    assert "pg" not in found.notes
    assert set(found.skipped) == {"cline-sse", "windsurf-sse"}
    assert found.entries["local"]["server"]["cwd"] == str((project / "tool").resolve())
    assert found.entries["here"]["server"]["cwd"] == str(project.resolve())
    assert found.entries["here"]["server"]["args"] == [f"{project.resolve()}/index.js"]
    assert "高德地图" in found.entries  # letters of any script make a host name
    user_wide = import_servers(data, tmp_path / "claude_desktop_config.json")  # no project: no cwd given
    assert "cwd" not in user_wide.entries["here"]["server"]
    assert "its args hold '${workspaceFolder}'" in user_wide.notes["here"][0]


def test_vscode_flat_settings_and_claude_codes_project_servers_are_read(tmp_path: Path) -> None:
    flat = {"editor.fontSize": 12, "mcp.servers": {"ha": {"url": "https://ha.local/api/mcp"}}}
    assert import_servers(flat, tmp_path / "settings.json").entries["ha"]["server"]["url"].endswith("/mcp")
    claude = {
        "projects": {str(tmp_path): {"mcpServers": {"git": {"command": "uvx", "args": ["mcp-server-git"]}}}}
    }
    assert "git" in import_servers(claude, tmp_path / ".claude.json", folder=tmp_path).entries
    elsewhere = import_servers(claude, tmp_path / ".claude.json", folder=tmp_path / "other")
    assert not elsewhere.entries and "keeps servers for other projects only" in elsewhere.notes[""][0]


def test_only_takes_the_name_in_the_file_and_secrets_are_noted_by_their_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(CONFIG_ENV, str(tmp_path / "hosts.json"))
    source = tmp_path / "cline_mcp_settings.json"
    servers = {
        "github.com/a/tools": {
            "command": "npx",
            "args": ["tools"],
            "env": {"SUPABASE_SERVICE_KEY": "eyJ", "EMPTY_TOKEN": "", "REGION": "eu"},
        },
        "other": {"url": "https://x.test/mcp", "headers": {"X-Api-Key": "k", "Cloud-Id": "c"}},
    }
    source.write_text(json.dumps({"mcpServers": servers}))
    assert cli_main(["host", "import", str(source), "--only", "github.com/a/tools"]) == 0
    out, err = capsys.readouterr()
    assert "added github-com-a-tools" in out and "other" not in out + err
    assert "env SUPABASE_SERVICE_KEY is stored" in err and "EMPTY_TOKEN" not in err and "REGION" not in err
    assert cli_main(["host", "import", str(source), "--only", "other"]) == 0
    err = capsys.readouterr().err
    assert "header X-Api-Key is stored" in err and "Cloud-Id" not in err

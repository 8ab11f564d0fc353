"""Every code example in README.md and docs/ runs, or is checked by the code that reads it.

Each fenced block is preceded by `<!-- example: KIND ... -->` saying how: `runs` (Python, exit
0), `serves APP [TOOL...]` (Python that serves a host: the tools answer over its socket, then
SIGTERM stops it cleanly), `toolset KIND FILE TOOL` (a toolset module loaded by a real host and
its tool called), `script-header` (PEP 723 header read by the dependency installer),
`hosts-config` (read by the launch, gateway and policy loaders), `client-config` (an MCP
client's JSON), `meta-fragment` (a `_meta` JSON fragment the daemon reads), `commands [others=a,b]`
(every `cadmcp` line parsed by the real command line; other programs named), `systemd-unit`
(its ExecStart parsed), `external REASON` and `text` (not code: a diagram, an output).
A block without a way to run it fails the first test.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

ROOT = Path(__file__).resolve().parents[2]
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(
    r"(?:<!-- example: (?P<marker>[^\n]*?) -->\n)?^```(?P<lang>\w*)\n(?P<body>.*?)^```", re.S | re.M
)
KINDS = {
    "runs", "serves", "toolset", "script-header", "hosts-config", "client-config", "meta-fragment",
    "commands", "systemd-unit", "external", "text",
}  # fmt: skip


@dataclass(frozen=True)
class Example:
    where: str
    marker: str
    lang: str
    body: str

    @property
    def kind(self) -> str:
        return self.marker.split()[0] if self.marker else ""

    @property
    def words(self) -> list[str]:
        return self.marker.split()[1:]


def _examples() -> list[Example]:
    found = []
    for path in FILES:
        text = path.read_text(encoding="utf-8")
        for n, match in enumerate(BLOCK.finditer(text)):
            where = f"{path.relative_to(ROOT)}#{n}"
            found.append(Example(where, (match["marker"] or "").strip(), match["lang"], match["body"]))
    return found


EXAMPLES = _examples()


def _of(kind: str) -> list[Any]:
    return [pytest.param(e, id=e.where) for e in EXAMPLES if e.kind == kind]


def test_every_example_says_how_it_is_run() -> None:
    assert len(EXAMPLES) > 30
    unmarked = [e.where for e in EXAMPLES if e.kind not in KINDS]
    assert not unmarked, f"add <!-- example: KIND --> before these blocks ({sorted(KINDS)}): {unmarked}"
    for e in EXAMPLES:
        if e.kind == "external":
            assert len(e.words) >= 3, f"{e.where}: say why it is not run here"


def _env(runtime_dir: Path | None = None) -> dict[str, str]:
    paths = [str(ROOT / "src"), str(ROOT / "samples" / "adapters"), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    if runtime_dir is not None:
        env["CADMCP_RUNTIME_DIR"] = str(runtime_dir)
    return env


@pytest.mark.parametrize("example", _of("runs"))
def test_python_examples_run(example: Example, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(example.body)
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{example.where}:\n{done.stderr[-3000:]}"


async def _tools_of(endpoint: Path, call: str | None) -> tuple[set[str], Any]:
    from mcp.client.session import ClientSession

    from cadmcp.wire.sockets import connect

    async with connect(endpoint) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        names = {t.name for t in (await session.list_tools()).tools}
        result = await session.call_tool(call, {}) if call in names else None
        return names, result


def _serve(argv: list[str], app: str, runtime_dir: Path, call: str | None, cwd: Path) -> tuple[set[str], Any]:
    proc = subprocess.Popen(argv, cwd=cwd, env=_env(runtime_dir), stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (sockets := list(runtime_dir.glob(f"cadmcp_{app}_*_{proc.pid}.sock"))):
            assert proc.poll() is None, f"exited with {proc.returncode}: {proc.stderr.read()[-3000:]}"  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "no endpoint appeared"
            time.sleep(0.1)
        answer = anyio.run(_tools_of, sockets[0], call)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, proc.stderr.read()[-3000:]  # type: ignore[union-attr]
        return answer
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("example", _of("serves"))
def test_serving_examples_serve_their_tools_and_stop_cleanly(
    example: Example, tmp_path: Path, runtime_dir: Path
) -> None:
    app, *tools = example.words
    script = tmp_path / "example.py"
    script.write_text(example.body)
    names, result = _serve(
        [sys.executable, str(script)], app, runtime_dir, tools[0] if tools else None, tmp_path
    )
    assert set(tools) <= names, (example.where, names)
    if tools:
        assert result is not None and not result.is_error, result


@pytest.mark.parametrize("example", _of("toolset"))
def test_toolset_examples_load_into_a_real_host_and_answer(
    example: Example, tmp_path: Path, runtime_dir: Path
) -> None:
    kind, document, tool = example.words
    folder = tmp_path / "toolset"
    folder.mkdir()
    (folder / "example.py").write_text(example.body)
    argv = [sys.executable, "-m", "cadmcp", "host", kind, str(ROOT / document), "--toolset", str(folder)]
    names, result = _serve(argv, kind.upper(), runtime_dir, tool, tmp_path)
    assert tool in names, names
    assert result is not None and not result.is_error, result.content
    assert result.structured_content and all(v for v in result.structured_content.values()), result


@pytest.mark.parametrize("example", _of("script-header"))
def test_script_headers_are_read_by_the_installer(example: Example) -> None:
    from cadmcp.host.scriptdeps import parse_script_dependencies

    assert parse_script_dependencies(example.body), example.where


@pytest.mark.parametrize("example", _of("hosts-config"))
def test_configuration_examples_load(
    example: Example, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cadmcp.daemon.launching import configured_hosts, parse_config_file

    path = tmp_path / ("hosts.toml" if example.lang == "toml" else "hosts.json")
    path.write_text(example.body)
    data = parse_config_file(path)
    specs = configured_hosts(path)
    assert {s.name for s in specs} == set(data.get("hosts") or {}), example.where
    if "policy" in data:
        from cadmcp.daemon.policy.engine import load

        assert load(path, env={}) is not None
    if "gateway" in data:
        from cadmcp.daemon.gateway.settings import load as gateway_settings

        home = tmp_path / "home"
        for value in data["gateway"].values():  # the files it names exist on the user's machine
            if isinstance(value, str) and value.startswith("~/"):
                (home / value[2:]).parent.mkdir(parents=True, exist_ok=True)
                (home / value[2:]).write_text("x")
        monkeypatch.setenv("HOME", str(home))
        assert gateway_settings({}, {}, path) is not None


@pytest.mark.parametrize("example", _of("client-config"))
def test_client_configurations_name_the_daemon(example: Example) -> None:
    config = json.loads(example.body)
    servers = config.get("mcpServers") or config.get("servers")
    (server,) = servers.values()
    assert server["url"].endswith("/mcp") and server["headers"]["Authorization"].startswith("Bearer ")


@pytest.mark.parametrize("example", _of("meta-fragment"))
def test_meta_fragments_are_what_the_daemon_reads(example: Example) -> None:
    from cadmcp.daemon.search import meta_domain
    from cadmcp.wire import meta

    text = example.body.strip()
    value = json.loads(text if text.startswith("{") else "{" + text + "}")
    declared = value["_meta"]
    assert set(declared) <= {meta.DOMAIN, meta.FALLBACK, meta.KEYWORDS}, declared
    if meta.DOMAIN in declared:
        assert meta_domain(declared) is not None


def _lines(body: str) -> list[str]:
    """Shell lines of a block (continuations joined, comments and prompts dropped)."""
    joined = re.sub(r"\\\n\s*|\n\s+(?=\[)", " ", body)  # `\` continuations, indented [--options]
    out = []
    for line in joined.splitlines():
        line = re.split(r"\s#\s|^#", line, maxsplit=1)[0].strip()
        if line:
            out.append(line)
    return out


def _without_optional_notation(words: list[str]) -> list[str]:
    """The words outside `[--optional ...]` groups, nested ones too (`[--host APP [--version V]]`)."""
    kept, depth = [], 0
    for word in words:
        if depth == 0 and not word.startswith("["):
            kept.append(word)
        depth += word.count("[") - word.count("]")
    return kept


def _own_parser(words: list[str]) -> tuple[Any, list[str]] | None:
    """The parser of a command that reads its arguments itself, and those arguments."""
    if words[:1] == ["toolset"]:
        from cadmcp.host.toolsets.cli import _parser as toolset_parser

        return toolset_parser(), words[1:]
    if words[:1] == ["policy"]:
        from cadmcp.daemon.policy.cli import _parser as policy_parser

        return policy_parser(), words[1:]
    if words[:2] == ["eval", "search"]:
        from cadmcp.daemon.search.evaluate import _parser as search_parser

        return search_parser(), words[2:]
    if words[:2] == ["eval", "dump-catalog"]:
        from cadmcp.daemon.search.dump import _parser as dump_parser

        return dump_parser(), words[2:]
    if words[:2] == ["eval", "corpus"]:
        from cadmcp.corpus.command import _parser as corpus_parser

        return corpus_parser(), words[2:]
    return None


def _check_cadmcp(words: list[str], where: str) -> None:
    from cadmcp.cli import _parser

    words = _without_optional_notation(words)
    if words[:2] in (
        ["host", "add"],
        ["host", "remove"],
        ["host", "list"],
        ["host", "import"],
    ):  # its own parser
        from cadmcp.foreign.cli import _parser as host_parser

        mine = words[1 : words.index("--")] if "--" in words else words[1:]
        try:
            host_parser().parse_args(mine)
        except SystemExit as exc:
            pytest.fail(f"{where}: cadmcp host refuses {shlex.join(words)} (exit {exc.code})")
        return
    own = _own_parser(words)
    if own is not None:  # toolset, policy and eval WHAT read the rest with parsers of their own
        parser, rest = own
        try:
            parser.parse_args(rest)
        except SystemExit as exc:
            pytest.fail(f"{where}: cadmcp refuses {shlex.join(words)} (exit {exc.code})")
        return
    try:
        args, extra = _parser().parse_known_args(words)
    except SystemExit as exc:
        pytest.fail(f"{where}: the command line refuses {shlex.join(words)} (exit {exc.code})")
    assert not extra or (args.command == "host" and not any(e.startswith("-") for e in extra)), (where, extra)


@pytest.mark.parametrize("example", _of("commands"))
def test_command_lines_are_what_the_cli_takes(example: Example) -> None:
    others = next((w.split("=", 1)[1].split(",") for w in example.words if w.startswith("others=")), [])
    for line in _lines(example.body):
        line = re.sub(r"\$\([^)]*\)", "TOKEN", line)
        words = shlex.split(line)
        program = Path(words[0]).name if words[0].startswith(("/", '"$', "$")) else words[0]
        if program == "cadmcp":
            _check_cadmcp(words[1:], example.where)
        elif program == "./dev":
            assert words[1] in {"demo", "test", "bench"}, (example.where, line)
        elif program == "python" and program in others:  # what it runs is in this repository
            if words[1] == "-m":
                import importlib.util

                assert importlib.util.find_spec(words[2]) is not None, (example.where, line)
            else:
                assert (ROOT / words[1]).is_file(), (example.where, line)
        else:
            assert program in others, f"{example.where}: {program} is not cadmcp; name it in others="


@pytest.mark.parametrize("example", _of("systemd-unit"))
def test_service_units_start_a_daemon_the_cli_takes(example: Example) -> None:
    unit = configparser.ConfigParser(interpolation=None)
    unit.read_string(example.body)
    words = shlex.split(unit["Service"]["ExecStart"])
    assert Path(words[0]).name == "cadmcp"
    _check_cadmcp(words[1:], example.where)

"""The call-log writer and line format, in process: files, rolling, cleanup, masking, binary."""

from __future__ import annotations

import base64
import json
import logging
import os
import time
from datetime import datetime
from pathlib import Path

import pytest

from cadmcp.wire import calllog
from cadmcp.wire.calllog import (
    CallLogFile,
    compact_result,
    format_line,
    mask_secrets,
    outcome_of,
    parse_line,
    route_logger,
)
from cadmcp.wire.jsonwire import dumps


def test_lines_roll_to_a_new_file_each_hour(tmp_path: Path) -> None:
    now = [datetime(2026, 3, 1, 9, 59, 59)]
    log = CallLogFile(tmp_path, pid=4242, clock=lambda: now[0])
    log.write("first")
    now[0] = datetime(2026, 3, 1, 10, 0, 1)
    log.write("second")
    log.write("third")
    log.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "log_4242_2026030109_0.log",
        "log_4242_2026030110_0.log",
    ]
    assert (tmp_path / "log_4242_2026030110_0.log").read_text().splitlines() == ["second", "third"]


def test_a_full_file_or_a_taken_name_moves_to_the_next_seq(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = lambda: datetime(2026, 3, 1, 9)  # noqa: E731
    (tmp_path / "log_7_2026030109_0.log").write_text("an earlier process with the same pid\n")
    monkeypatch.setattr(calllog, "MAX_FILE_BYTES", 10)
    log = CallLogFile(tmp_path, pid=7, clock=clock)
    log.write("0123456789abc")
    log.write("next")
    log.close()
    assert (tmp_path / "log_7_2026030109_0.log").read_text() == "an earlier process with the same pid\n"
    assert (tmp_path / "log_7_2026030109_1.log").read_text() == "0123456789abc\n"
    assert (tmp_path / "log_7_2026030109_2.log").read_text() == "next\n"


def test_files_older_than_30_days_are_removed_at_startup(tmp_path: Path) -> None:
    old, recent, foreign = (
        tmp_path / "log_11_2025010100_0.log",
        tmp_path / "log_12_2026030100_0.log",
        tmp_path / "notes.log",
    )
    for path in (old, recent, foreign):
        path.write_text("x\n")
    month_ago = time.time() - 31 * 86400
    os.utime(old, (month_ago, month_ago))
    os.utime(foreign, (month_ago, month_ago))
    CallLogFile(tmp_path, pid=1)
    assert not old.exists()
    assert recent.exists() and foreign.exists()


def test_secret_arguments_are_masked_at_any_depth() -> None:
    args = {
        "text": "keep me",
        "Password": "hunter2",
        "nested": {"API_KEY": "k", "apiKey": "k2", "list": [{"access_token": "t", "layer": "A"}]},
        "client_secret": "s",
        "passes": 3,
    }
    assert mask_secrets(args) == {
        "text": "keep me",
        "Password": "***",
        "nested": {"API_KEY": "***", "apiKey": "***", "list": [{"access_token": "***", "layer": "A"}]},
        "client_secret": "***",
        "passes": 3,
    }
    assert args["Password"] == "hunter2"  # the caller's arguments are not touched


def test_binary_content_is_logged_as_type_mime_and_length() -> None:
    png = base64.b64encode(b"\x89PNG" + bytes(95)).decode()
    result = {
        "content": [
            {"type": "image", "data": png, "mimeType": "image/png"},
            {"type": "audio", "data": base64.b64encode(b"12345").decode(), "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "x://a", "mimeType": "application/pdf", "blob": png}},
        ],
        "contents": [{"uri": "x://b", "blob": base64.b64encode(b"ab").decode()}],
    }
    logged = compact_result(result)
    assert logged["content"] == [
        {"type": "image", "mimeType": "image/png", "length": 99},
        {"type": "audio", "mimeType": "audio/wav", "length": 5},
        {"type": "resource", "resource": {"uri": "x://a", "mimeType": "application/pdf", "length": 99}},
    ]
    assert logged["contents"] == [{"uri": "x://b", "length": 2}]
    assert png not in dumps(logged)


def test_text_mirror_and_long_strings_stay_compact() -> None:
    structured = {"count": 2, "note": "n" * 5000}
    result = {"content": [{"type": "text", "text": dumps(structured)}], "structuredContent": structured}
    logged = compact_result(result)
    assert logged["content"] == [{"type": "text", "mirror": "structuredContent"}]
    assert len(logged["structuredContent"]["note"]) < 2100
    assert logged["structuredContent"]["note"].endswith("(+3000 chars)")


@pytest.mark.parametrize(
    ("result", "outcome"),
    [
        ({"content": []}, "ok"),
        ({"content": [], "isError": True}, "error"),
        ({"content": [{"type": "text", "text": "[TIMEOUT] stopped after 1 s"}], "isError": True}, "timeout"),
        ({"structuredContent": {"type": "launch_timeout"}, "isError": True}, "timeout"),
        ({"resultType": "input_required", "inputRequests": {}}, "input_required"),
    ],
)
def test_outcomes(result: dict[str, object], outcome: str) -> None:
    assert outcome_of(result) == outcome


def test_a_line_parses_back_with_awkward_values() -> None:
    args = {"text": 'two words and a " quote result={"x": 1}', "n": [1, 2]}
    line = format_line(
        "tools/call",
        "ok",
        {
            "target": "echo",
            "host": "Demo/1.0/12",
            "hostTarget": "demo://greeting/{name}",
            "durationMs": 3,
            "args": args,
            "result": {"content": []},
        },
    )
    parsed = parse_line(line)
    assert parsed["method"] == "tools/call" and parsed["outcome"] == "ok"
    assert parsed["target"] == "echo" and parsed["host"] == "Demo/1.0/12"
    assert parsed["hostTarget"] == "demo://greeting/{name}"
    assert parsed["durationMs"] == 3
    assert parsed["args"] == args
    assert parsed["result"] == {"content": []}
    assert "\n" not in line


def test_routed_logger_writes_to_the_file_and_not_to_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = CallLogFile(tmp_path, pid=5)
    name = "cadmcp.test_route"
    route_logger(name, log)
    logger = logging.getLogger(name)
    logger.info("catalog host=%s tools=%d", "Demo", 3)
    log.close()
    text = next(tmp_path.glob("log_5_*.log")).read_text()
    assert text.split(" ", 1)[1] == "info cadmcp.test_route catalog host=Demo tools=3\n"
    assert "catalog" not in capsys.readouterr().err


def test_lines_waiting_for_a_stuck_writer_are_bounded_and_the_drop_is_logged(tmp_path: Path) -> None:
    import threading

    from cadmcp.wire.calllog import MAX_QUEUED_LINES

    log = CallLogFile(tmp_path, pid=9)
    release = threading.Event()

    def first() -> str:
        release.wait(10)  # the writer is stuck (a slow disk) while calls keep coming
        return '{"n": 0}'

    log.write_later(first)
    for n in range(1, MAX_QUEUED_LINES + 50):
        log.write_later(lambda n=n: f'{{"n": {n}}}')
    release.set()
    log.flush(10)
    lines = [json.loads(line) for line in log.path.read_text().splitlines()]  # type: ignore[union-attr]
    assert len([line for line in lines if "n" in line]) == MAX_QUEUED_LINES
    assert {"dropped": 50, "why": "the call log fell behind"} in lines

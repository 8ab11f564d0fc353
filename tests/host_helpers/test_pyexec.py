"""run_code: notebook-style execution with capture, errors, timeout and transaction hooks."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from cadmcp.host import pyexec, scriptdeps
from cadmcp.host.pyexec import run_code
from cadmcp.host.scriptdeps import DependencyError, parse_script_dependencies


def test_captures_output_and_final_expression_value() -> None:
    ns: dict[str, Any] = {"x": 2}
    result = run_code("print('hello')\nx * 21", ns)
    assert not result.is_error
    assert result.output == "hello\n"
    assert result.value == 42
    assert "hello" in result.text() and "Result: 42" in result.text()


def test_namespace_keeps_assignments_between_runs() -> None:
    ns: dict[str, Any] = {}
    run_code("y = [1, 2]", ns)
    assert run_code("y.append(3)\ny", ns).value == [1, 2, 3]


def test_syntax_error_runs_nothing() -> None:
    began: list[int] = []
    result = run_code("x = (1,\nprint('no')", {}, begin=lambda: began.append(1))
    assert result.status == "syntax_error"
    assert result.text().startswith("[SYNTAX ERROR]")
    assert began == []


def test_runtime_error_traceback_is_trimmed_to_user_code_and_rolls_back() -> None:
    calls: list[str] = []
    code = "def f(a):\n    return 1 / a\nprint('before')\nf(0)\n"
    result = run_code(
        code,
        {},
        begin=lambda: calls.append("begin") or "token",
        commit=lambda t: calls.append(f"commit {t}") or None,
        rollback=lambda t: calls.append(f"rollback {t}") or None,
    )
    text = result.text()
    assert result.status == "runtime_error"
    assert text.startswith("[RUNTIME ERROR] ZeroDivisionError: division by zero")
    assert "pyexec.py" not in text
    assert "return 1 / a" in text and "line 2" in text
    assert "before" in text
    assert "[ROLLBACK]" in text and result.rolled_back
    assert calls == ["begin", "rollback token"]


def test_commit_note_is_reported() -> None:
    result = run_code("1", {}, begin=lambda: 7, commit=lambda t: f"recorded {t}")
    assert result.notes == ["recorded 7"] and "recorded 7" in result.text()


def test_failing_commit_becomes_error_and_rolls_back() -> None:
    def commit(_: object) -> str:
        raise RuntimeError("disk full")

    result = run_code("1", {}, begin=lambda: 0, commit=commit, rollback=lambda t: None)
    assert result.is_error and "disk full" in result.text() and result.rolled_back


def test_timeout_stops_runaway_loop_even_when_it_catches_exception() -> None:
    code = "while True:\n    try:\n        sum(range(1000))\n    except Exception:\n        pass\n"
    rolled: list[int] = []
    started = time.perf_counter()
    result = run_code(code, {}, timeout=0.3, begin=lambda: 1, rollback=lambda t: rolled.append(t) or None)
    elapsed = time.perf_counter() - started
    assert result.status == "timeout"
    assert result.text().startswith("[TIMEOUT]") and "CADMCP_EXEC_TIMEOUT" in result.text()
    assert rolled == [1]
    assert elapsed < 3
    # nothing pending leaks into the caller afterwards
    for _ in range(200_000):
        pass
    time.sleep(0.3)


def test_default_timeout_reads_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CADMCP_EXEC_TIMEOUT", "2.5")
    assert pyexec.default_timeout() == 2.5
    monkeypatch.setenv("CADMCP_EXEC_TIMEOUT", "nonsense")
    assert pyexec.default_timeout() == 60.0


def test_stdout_restored_and_other_threads_not_captured() -> None:
    original = sys.stdout
    ns: dict[str, Any] = {"threading": threading}
    code = (
        "import sys\n"
        "def other():\n"
        "    print('from other thread')\n"
        "t = threading.Thread(target=other); t.start(); t.join()\n"
        "print('mine')\n"
    )
    result = run_code(code, ns)
    assert result.output == "mine\n"
    assert sys.stdout is original


def test_user_replacing_stdout_is_undone() -> None:
    original = sys.stdout
    run_code("import sys, io\nsys.stdout = io.StringIO()\n", {})
    assert sys.stdout is original


def test_parse_pep723_dependencies() -> None:
    code = '# /// script\n# dependencies = ["b-pkg", "a-pkg>=1"]\n# ///\nimport a\n'
    assert parse_script_dependencies(code) == ["a-pkg>=1", "b-pkg"]
    assert parse_script_dependencies("print(1)") == []
    with pytest.raises(DependencyError):
        parse_script_dependencies("# /// script\n# dependencies = 3\n# ///\n")


def test_bad_dependency_is_reported_without_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scriptdeps, "cache_root", lambda: tmp_path)
    code = '# /// script\n# dependencies = ["this is not a requirement!!"]\n# ///\nran = True\n'
    ns: dict[str, Any] = {}
    result = run_code(code, ns)
    assert result.status == "dependency_error"
    assert result.text().startswith("[DEPENDENCY ERROR]")
    assert "ran" not in ns


@pytest.mark.slow
def test_pep723_dependency_is_installed_and_importable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scriptdeps, "cache_root", lambda: tmp_path)
    monkeypatch.delitem(sys.modules, "six", raising=False)  # imported modules outlive a run
    code = (
        '# /// script\n# dependencies = ["six==1.16.0"]\n# ///\n'
        "import six, os\nos.path.dirname(six.__file__)\n"
    )
    result = run_code(code, {})
    assert not result.is_error, result.text()
    assert str(tmp_path) in result.value
    assert not any(str(tmp_path) in p for p in sys.path)
    sys.modules.pop("six", None)
    again = run_code(code, {})
    assert again.value == result.value  # cached directory reused


def test_a_long_value_is_cut_at_its_end_saying_how_much_is_left_out() -> None:
    """A 30,006-character string came back as 20,000 characters with its middle gone and a bare
    '...' where it was cut (reprlib's way), which a script's JSON snapshot took as the value."""
    text = "A" * 15000 + "MIDDLE" + "B" * 15000
    said = run_code(f"{text!r}", {}).value_repr
    assert said is not None and len(said) <= pyexec.MAX_VALUE_REPR
    assert said.startswith("'AAAA") and "MIDDLE" in said
    assert said.endswith("… [10106 more characters of the string]"), said[-80:]
    nested = run_code("['x', 'y' * 30000, b'z' * 30000]", {}).value_repr
    assert nested is not None and "more characters of the string]" in nested

    class Chatty:
        def __repr__(self) -> str:
            return "Z" * 30000

    wide = run_code("value", {"value": Chatty()}).value_repr
    assert wide is not None and wide.endswith("… [10100 more characters]"), wide[-60:]

"""`cadmcp eval search` on a small set written here."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pytest

from cadmcp.daemon.search.evaluate import main, query_half

CATALOG = {
    "hosts": [
        {
            "hostApp": "DXF",
            "version": "R2018",
            "pid": 1,
            "tools": [
                {"name": "list_layers", "description": "List the drawing's layers.", "inputSchema": {}},
                {"name": "purge_unused", "description": "Remove unused blocks and layers."},
            ],
            "resources": [{"uri": "dxf://version", "name": "version", "description": "Host version."}],
            "resourceTemplates": [],
        },
        {
            "hostApp": "IFC",
            "version": "IFC4",
            "pid": 2,
            "tools": [{"name": "clash_check", "description": "Detect clashes between elements."}],
        },
    ]
}
QUERIES = [
    {"query": "which layers are in the drawing", "expected": [{"hostApp": "DXF", "target": "list_layers"}]},
    {"query": "purge", "expected": [{"hostApp": "DXF", "target": "purge_unused"}]},
    {"query": "collision detection", "expected": [{"hostApp": "IFC", "target": "clash_check"}]},
    {"query": "dxf host version", "expected": [{"hostApp": "DXF", "target": "dxf://version"}]},
    {"query": "remove layers", "expected": [{"hostApp": "DXF", "target": "list_layers"}]},  # ranks 2nd
    {"query": "zebra crossing", "expected": [{"hostApp": "IFC", "target": "clash_check"}]},  # a miss
]


def _write_set(tmp_path: Path) -> tuple[Path, Path]:
    catalog = tmp_path / "catalog.json"
    queries = tmp_path / "queries.jsonl"
    catalog.write_text(json.dumps(CATALOG))
    queries.write_text("\n".join(json.dumps(q) for q in QUERIES) + "\n\n")
    return catalog, queries


def test_eval_prints_metrics_as_one_json_object(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    catalog, queries = _write_set(tmp_path)
    assert main(["--catalog", str(catalog), "--queries", str(queries)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n"] == 6
    assert out["hit@1"] == round(4 / 6, 4)
    assert out["hit@5"] == round(5 / 6, 4)
    assert out["mrr@5"] == round((4 + 0.5) / 6, 4)
    assert 0 <= out["p50_ms"] <= out["p95_ms"]
    assert "misses" not in out


def test_eval_misses_lists_what_ranked_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    catalog, queries = _write_set(tmp_path)
    assert main(["--catalog", str(catalog), "--queries", str(queries), "--k", "1", "--misses"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["hit@1"] == round(4 / 6, 4)
    misses = {m["query"]: m for m in out["misses"]}
    assert set(misses) == {"remove layers", "zebra crossing"}
    assert misses["remove layers"]["first"] == ["DXF:purge_unused"]
    assert misses["zebra crossing"] == {
        "query": "zebra crossing",
        "expected": ["IFC:clash_check"],
        "rank": None,
        "first": [],
    }


def test_eval_bad_input_says_what_to_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    catalog, queries = _write_set(tmp_path)
    assert main(["--catalog", str(tmp_path / "nope.json"), "--queries", str(queries)]) == 2
    assert "no such file" in capsys.readouterr().err
    queries.write_text('{"query": "x"}\n')
    assert main(["--catalog", str(catalog), "--queries", str(queries)]) == 2
    assert "expected" in capsys.readouterr().err
    catalog.write_text('{"hosts": [{"version": "1"}]}')
    queries.write_text(json.dumps(QUERIES[0]))
    assert main(["--catalog", str(catalog), "--queries", str(queries)]) == 2
    assert "hostApp" in capsys.readouterr().err


def test_eval_halves_split_the_set_by_the_querys_crc32(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog, queries = _write_set(tmp_path)
    counts = {}
    for half in ("a", "b"):
        assert main(["--catalog", str(catalog), "--queries", str(queries), "--half", half, "--misses"]) == 0
        out = json.loads(capsys.readouterr().out)
        counts[half] = out["n"]
        expected = {q["query"] for q in QUERIES if (zlib.crc32(q["query"].encode()) & 1) == (half == "b")}
        assert {m["query"] for m in out["misses"]} <= expected
    assert counts["a"] + counts["b"] == len(QUERIES) and min(counts.values()) > 0
    assert query_half("purge") == ("b" if zlib.crc32(b"purge") & 1 else "a")

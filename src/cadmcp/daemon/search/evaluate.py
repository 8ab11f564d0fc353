"""`cadmcp eval search`: search quality and latency of the real index on an evaluation set.

    python -m cadmcp.daemon.search.evaluate --catalog DIR/catalog.json
        --queries DIR/queries.jsonl [--k 5] [--misses] [--semantic auto|on|off]
    python -m cadmcp.daemon.search.evaluate --ablate FEATURE|all [--sets eval]
    python -m cadmcp.daemon.search.evaluate --rules

Builds the index from the catalog (no hosts running), runs every query through
`SearchIndex.search` (the code path of `search_dynamic`) and prints one JSON object:
`n`, `hit@1`, `hit@K`, `mrr@K`, `p50_ms`, `p95_ms`, `capabilities`, `semantic` (the model
fused with the lexical score, or null) and, with `--misses`, `misses`. Semantic ranking
follows the daemon's setting (`CADMCP_SEARCH_SEMANTIC`) unless `--semantic` says otherwise;
every capability is embedded before the first query runs.

`--ablate FEATURE` (or `all`, one feature at a time) switches ranking features off
(`features.py`) and prints, for every set folder under `--sets` (each a catalog.json and
queries.jsonl, split into halves A and B) or for the one set given, hit@1 and hit@5 with all
features on and the change without each feature: a positive change is what the feature is worth.
`--rules` lists the ranking's rules and tuned constants with their counts (`accounting.py`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cadmcp.daemon.search.accounting import report
from cadmcp.daemon.search.catalog import build_index_from_catalog
from cadmcp.daemon.search.features import FEATURES, FeatureSet
from cadmcp.daemon.search.index import SearchIndex
from cadmcp.daemon.search.semantic import MODES, SEMANTIC_ENV, SemanticUnavailable, semantic_from_env


@dataclass(frozen=True, slots=True)
class Query:
    """One evaluation query and the capabilities that count as a hit, as (hostApp, target)."""

    text: str
    expected: frozenset[tuple[str, str]]


class EvalInputError(ValueError):
    """The catalog or query file cannot be used; the message says what to fix."""


def load_queries(path: Path) -> list[Query]:
    """Queries from a `queries.jsonl` file (one JSON object a line; blank lines skipped)."""
    out: list[Query] = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            expected = frozenset((str(e["hostApp"]), str(e["target"])) for e in row["expected"])
            out.append(Query(str(row["query"]), expected))
        except (ValueError, KeyError, TypeError) as exc:
            raise EvalInputError(
                f'{path}:{lineno}: expected {{"query": ..., "expected": [{{"hostApp": ..., "target": ...}}]}}'
                f" ({exc})"
            ) from exc
    if not out:
        raise EvalInputError(f"{path}: no queries found")
    return out


def query_half(text: str) -> str:
    """ "a" or "b": the fixed half of a set a query belongs to (parity of its UTF-8 CRC32)."""
    return "b" if zlib.crc32(text.encode("utf-8")) & 1 else "a"


def _percentile(values: Sequence[float], q: float) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[round(q) - 1]


def evaluate(
    index: SearchIndex, queries: Sequence[Query], k: int = 5, misses: bool = False
) -> dict[str, Any]:
    """Run every query through `index.search` and score the first `k` results."""
    hit1 = hitk = 0
    rr = 0.0
    times: list[float] = []
    missed: list[dict[str, Any]] = []
    for q in queries:
        t0 = time.perf_counter()
        result = index.search(q.text, limit=k)
        times.append((time.perf_counter() - t0) * 1000.0)
        got = [(d.host_app, d.target) for d in result.hits]
        rank = next((i for i, g in enumerate(got) if g in q.expected), None)
        if rank is not None:
            hitk += 1
            rr += 1.0 / (rank + 1)
            hit1 += rank == 0
        if misses and rank != 0:
            missed.append(
                {
                    "query": q.text,
                    "expected": [f"{a}:{t}" for a, t in sorted(q.expected)],
                    "rank": None if rank is None else rank + 1,
                    "first": [f"{a}:{t}" for a, t in got[:3]],
                }
            )
    n = len(queries)
    report: dict[str, Any] = {
        "n": n,
        "hit@1": round(hit1 / n, 4),
        f"hit@{k}": round(hitk / n, 4),
        f"mrr@{k}": round(rr / n, 4),
        "p50_ms": round(_percentile(times, 50), 4),
        "p95_ms": round(_percentile(times, 95), 4),
        "capabilities": len(index),
        "semantic": index.semantic.name if index.semantic is not None and not index.semantic.error else None,
    }
    if misses:
        report["misses"] = missed
    return report


def ablation(
    sets: Mapping[str, tuple[SearchIndex, Sequence[Query]]], features: Sequence[str], k: int = 5
) -> list[str]:
    """Markdown rows: each set's hit@1 / hit@k with every feature on, then per feature the
    change when it alone is off (on minus off: what the feature is worth)."""
    base: dict[str, dict[str, Any]] = {}
    for label, (index, queries) in sets.items():
        index.features = FeatureSet()
        base[label] = evaluate(index, queries, k=k)
    labels = list(sets)
    rows = [
        "| feature | " + " | ".join(labels) + " |",
        "|---" * (len(labels) + 1) + "|",
        f"| all on (hit@1 / hit@{k}) | "
        + " | ".join(f"{base[x]['hit@1']:.3f} / {base[x][f'hit@{k}']:.3f}" for x in labels)
        + " |",
    ]
    for name in features:
        cells = []
        for label, (index, queries) in sets.items():
            index.features = FeatureSet((name,))
            off = evaluate(index, queries, k=k)
            d1 = base[label]["hit@1"] - off["hit@1"]
            dk = base[label][f"hit@{k}"] - off[f"hit@{k}"]
            cells.append(f"{d1:+.3f} / {dk:+.3f}")
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
        print(rows[-1], file=sys.stderr, flush=True)
    for index, _ in sets.values():
        index.features = FeatureSet()
    return rows


def set_folders(root: Path) -> list[Path]:
    """The evaluation set folders under `root` (those holding catalog.json and queries.jsonl)."""
    return sorted(
        p for p in root.iterdir() if (p / "catalog.json").is_file() and (p / "queries.jsonl").is_file()
    )


def load_catalog(path: Path) -> Mapping[str, Any]:
    """A `catalog.json` file as a dict."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise EvalInputError(f"{path}: not valid JSON ({exc})") from exc


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cadmcp eval search", description=__doc__.split("\n\n")[0])
    parser.add_argument("--catalog", type=Path, help="catalog.json of the evaluation set")
    parser.add_argument("--queries", type=Path, help="queries.jsonl of the evaluation set")
    parser.add_argument(
        "--ablate",
        metavar="FEATURE",
        help="switch a ranking feature off (or 'all', one at a time) and print its effect: "
        + ", ".join(f.name for f in FEATURES),
    )
    parser.add_argument(
        "--sets",
        type=Path,
        default=Path("eval"),
        help="with --ablate and no --catalog: folder of set folders",
    )
    parser.add_argument(
        "--rules", action="store_true", help="list the ranking's rules and tuned constants, with their counts"
    )
    parser.add_argument("--k", type=int, default=5, help="results per query that count (default 5)")
    parser.add_argument("--misses", action="store_true", help="also list the queries not answered first")
    parser.add_argument(
        "--half",
        choices=("a", "b"),
        help="only half A (even CRC32 of the UTF-8 query) or B (odd): tune on one, hold out the other",
    )
    parser.add_argument(
        "--semantic", choices=MODES, help=f"fuse semantic ranking (default: ${SEMANTIC_ENV}, else auto)"
    )
    return parser


def main(argv: list[str]) -> int:
    """Entry point of `cadmcp eval search`; returns the process exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.rules:
        print(report())
        return 0
    if args.k < 1:
        parser.error("--k must be 1 or more")
    if (args.catalog is None) != (args.queries is None) or (args.catalog is None and not args.ablate):
        parser.error(
            "pass --catalog and --queries (or --ablate FEATURE to measure on every set under --sets)"
        )
    if args.ablate:
        return _ablate(args)
    try:
        for p in (args.catalog, args.queries):
            if not p.is_file():
                raise EvalInputError(f"{p}: no such file; pass the set's catalog.json and queries.jsonl")
        env = dict(os.environ)
        if args.semantic:
            env[SEMANTIC_ENV] = args.semantic
        layer = semantic_from_env(env)
        index = build_index_from_catalog(load_catalog(args.catalog), SearchIndex(semantic=layer))
        queries = load_queries(args.queries)
        if args.half:
            queries = [q for q in queries if query_half(q.text) == args.half]
        if layer is not None:
            layer.wait()
            if layer.error and env.get(SEMANTIC_ENV) == "on":
                raise SemanticUnavailable(layer.error)
    except (EvalInputError, ValueError, SemanticUnavailable) as exc:
        print(f"cadmcp eval search: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(evaluate(index, queries, k=args.k, misses=args.misses), ensure_ascii=False, indent=None))
    return 0


def _ablate(args: argparse.Namespace) -> int:
    names = [f.name for f in FEATURES] if args.ablate == "all" else [args.ablate]
    try:
        FeatureSet(names)
        folders = [(args.catalog, args.queries)]
        if args.catalog is None:
            if not args.sets.is_dir():
                raise EvalInputError(
                    f"{args.sets}: no such folder; pass --sets with the folder of the set folders"
                )
            folders = [(p / "catalog.json", p / "queries.jsonl") for p in set_folders(args.sets)]
        env = dict(os.environ)
        if args.semantic:
            env[SEMANTIC_ENV] = args.semantic
        layer = semantic_from_env(env)
        sets: dict[str, tuple[SearchIndex, Sequence[Query]]] = {}
        for catalog, queries_file in folders:
            index = build_index_from_catalog(load_catalog(catalog), SearchIndex(semantic=layer))
            queries = load_queries(queries_file)
            name = catalog.parent.name
            for half in ("a", "b"):
                sets[f"{name} {half.upper()}"] = (index, [q for q in queries if query_half(q.text) == half])
        if layer is not None:
            layer.wait()
    except (EvalInputError, ValueError, SemanticUnavailable) as exc:
        print(f"cadmcp eval search: {exc}", file=sys.stderr)
        return 2
    print("\n".join(ablation(sets, names, k=args.k)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

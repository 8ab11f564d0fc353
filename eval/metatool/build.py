"""Build the MetaTool tool-retrieval set used as an untuned check (see docs/search.md).

MetaTool (Huang et al., "MetaTool Benchmark for Large Language Models", ICLR 2024; MIT licence,
copy in LICENSE-MetaTool beside this script) pairs 20,614 single-tool user requests with 199
ChatGPT-plugin-style tools. This keeps a fixed sample: the 1,000 requests with the smallest
CRC32 of their UTF-8 text; each tool is its own host (one tool each, as separate MCP servers
would be), described by `dataset/plugin_des.json`. Half B (odd CRC32 of the request) is held
out; no setting is chosen on either half.

    python eval/metatool/build.py METATOOL_CHECKOUT
writes catalog.json and queries.jsonl beside this script. METATOOL_CHECKOUT is a clone of the
public MetaTool repository (commit 35e81bb, the one these files were built from).
"""

from __future__ import annotations

import csv
import json
import sys
import zlib
from pathlib import Path

SAMPLE = 1000


def crc(text: str) -> int:
    return zlib.crc32(text.encode("utf-8"))


def build(checkout: Path, out: Path) -> None:
    data = checkout / "dataset"
    descriptions = json.loads((data / "plugin_des.json").read_text(encoding="utf-8"))
    with (data / "data" / "all_clean_data.csv").open(encoding="utf-8", newline="") as f:
        rows = [(r["Query"].strip(), r["Tool"].strip()) for r in csv.DictReader(f)]
    seen: set[str] = set()
    unique = []
    for query, tool in rows:
        if query and tool in descriptions and query not in seen:
            seen.add(query)
            unique.append((query, tool))
    unique.sort(key=lambda r: (crc(r[0]), r[0]))
    sample = unique[:SAMPLE]
    hosts = [
        {
            "hostApp": name,
            "version": "1",
            "pid": 1000 + n,
            "tools": [
                {
                    "name": name,
                    "description": descriptions[name],
                    "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}},
                }
            ],
            "resources": [],
            "resourceTemplates": [],
        }
        for n, name in enumerate(sorted(descriptions))
    ]
    (out / "catalog.json").write_text(json.dumps({"hosts": hosts}, indent=1) + "\n", encoding="utf-8")
    with (out / "queries.jsonl").open("w", encoding="utf-8") as f:
        for query, tool in sample:
            f.write(json.dumps({"query": query, "expected": [{"hostApp": tool, "target": tool}]}) + "\n")


if __name__ == "__main__":
    build(Path(sys.argv[1]), Path(__file__).resolve().parent)

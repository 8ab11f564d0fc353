"""Add the reference hosts' search declarations (eval/declarations.json) to a catalog.json.

    python eval/declare.py CATALOG.json

For hosts of the apps listed there that do not declare `io.cadmcp/domain` / `io.cadmcp/fallback`
themselves (catalogs dumped before the hosts did), writes them in as a host would send them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

DOMAIN = "io.cadmcp/domain"
FALLBACK = "io.cadmcp/fallback"


def declare(catalog: dict, declarations: dict) -> int:
    changed = 0
    for host in catalog["hosts"]:
        spec = declarations.get(host["hostApp"])
        if not spec:
            continue
        meta = host.setdefault("_meta", {})
        if DOMAIN not in meta:
            meta[DOMAIN] = spec["domain"]
            changed += 1
        for tool in host.get("tools", []):
            intents = spec.get("fallback", {}).get(tool["name"])
            if intents and FALLBACK not in tool.get("_meta", {}):
                tool.setdefault("_meta", {})[FALLBACK] = intents
                changed += 1
    return changed


def main(argv: list[str]) -> int:
    path = Path(argv[0])
    declarations = json.loads((Path(__file__).parent / "declarations.json").read_text(encoding="utf-8"))
    catalog = json.loads(path.read_text(encoding="utf-8"))
    n = declare(catalog, declarations)
    path.write_text(json.dumps(catalog, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{path}: {n} declarations added")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

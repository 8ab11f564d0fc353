"""The ranking's rules and tuned constants, counted (`cadmcp eval search --rules`).

A *rule* is a hand-written condition that changes the ranking for a class of requests ("a
question prefers what only reads"); each is marked where it is applied with a `# rule:`
comment saying what it does. A *tuned constant* is a number chosen by measuring; each is
declared once in `features.CONSTANTS`, except the BM25F field table (`index._FIELDS`, counted
apart). `stray_numbers` finds any other number in the ranking modules: there a number is
structural (0 to 3: indexes, pairs), or marked `# bound` (a cache size, an input limit, a
default) or `# formula` (part of a textbook formula, as BM25's IDF).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from cadmcp.daemon.search.features import CONSTANTS, Constant

#: The modules that read requests and rank (the semantic layer's model code is not one).
MODULES = (
    "analyzer.py",
    "vocabulary.py",
    "request.py",
    "domain.py",
    "features.py",
    "ranking.py",
    "index.py",
    "postings.py",
)
_RULE = re.compile(r"#\s*rule:\s*(.+)$")
_EXEMPT = ("# bound", "# formula", "# field table")
_HERE = Path(__file__).parent


def rules() -> list[tuple[str, int, str]]:
    """Every rule: (module, line, what it does), in module order."""
    out: list[tuple[str, int, str]] = []
    for module in MODULES:
        for n, line in enumerate((_HERE / module).read_text(encoding="utf-8").splitlines(), 1):
            m = _RULE.search(line)
            if m:
                out.append((module, n, m.group(1).strip()))
    return out


def constants() -> list[Constant]:
    """Every tuned constant (the field table apart)."""
    return list(CONSTANTS.values())


def stray_numbers() -> list[tuple[str, int, str]]:
    """Numbers in the ranking modules that are neither declared constants nor exempt (should be none)."""
    out: list[tuple[str, int, str]] = []
    for module in MODULES:
        if module == "features.py":
            continue  # where the constants are declared
        source = (_HERE / module).read_text(encoding="utf-8")
        lines = source.splitlines()
        tree = ast.parse(source)
        indexes = {id(n.slice) for n in ast.walk(tree) if isinstance(n, ast.Subscript)}
        for node in ast.walk(tree):
            if (
                not isinstance(node, ast.Constant)
                or type(node.value) not in (int, float)
                or id(node) in indexes
            ):
                continue
            value = node.value
            if value in (0, 1) or (isinstance(value, int) and 0 <= value <= 3):
                continue
            line = lines[node.lineno - 1]
            if not any(mark in line for mark in _EXEMPT):
                out.append((module, node.lineno, line.strip()))
    return sorted(set(out))


def report() -> str:
    """The rules and constants as text, with their counts."""
    found = rules()
    lines = [f"{len(found)} rules:"]
    lines += [f"  {module}:{n}: {what}" for module, n, what in found]
    lines.append(f"{len(CONSTANTS)} tuned constants (and the 7 x 3 BM25F field table in index.py):")
    lines += [f"  {c.name} = {c.value:g}: {c.what}" for c in constants()]
    stray = stray_numbers()
    if stray:
        lines.append(f"{len(stray)} numbers neither declared nor marked (declare or mark them):")
        lines += [f"  {module}:{n}: {text}" for module, n, text in stray]
    return "\n".join(lines)

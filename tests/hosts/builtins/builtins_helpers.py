"""The fourth application of these tests: samples/adapters/notes_host.py, loaded by path."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

from cadmcp.host.builtins import build_server

SAMPLES = Path(__file__).resolve().parents[3] / "samples"
BUILTIN_TOOLS = frozenset(
    {
        "execute_python_code",
        "open_document",
        "list_documents",
        "activate_document",
        "save_document",
        "close_document",
        "navigate_history",
        "view_screenshot",
    }
)
"""The tools every document host's built-in surface serves, written out (not read from the code)."""


def notes_module() -> Any:
    """samples/adapters/notes_host.py, the fourth application written as one adapter."""
    name = "notes_host"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, SAMPLES / "adapters" / "notes_host.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def notes_server() -> Any:
    return build_server(notes_module().NotesAdapter(), "1.0")

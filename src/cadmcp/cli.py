"""The `cadmcp` command line."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `cadmcp` console script."""
    print("cadmcp: commands are being built", file=sys.stderr)
    return 2

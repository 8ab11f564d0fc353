"""The page itself: one HTML document, one script, one style sheet (no build step)."""

from __future__ import annotations

import functools
import html
from importlib import resources


@functools.cache
def static(name: str) -> bytes:
    """A file of the page (`app.js`, `style.css`, `index.html`), as shipped in the package."""
    return resources.files("cadmcp.daemon.dashboard").joinpath("static", name).read_bytes()


def index(csrf: str) -> bytes:
    """The page, carrying the session's CSRF token for the script's changing requests."""
    return static("index.html").replace(b"{{csrf}}", html.escape(csrf).encode())

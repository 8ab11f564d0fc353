"""Shared builders for search tests."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from cadmcp.daemon.search import CapabilityDoc, SearchIndex


def tool(
    name: str,
    description: str = "",
    *,
    host: str = "dxf-1",
    app: str = "DXF",
    version: str = "1",
    params: Sequence[tuple[str, str]] = (),
    keywords: Sequence[str] = (),
    kind: str = "tool",
    target: str | None = None,
    title: str | None = None,
) -> CapabilityDoc:
    """A capability doc with sensible defaults."""
    target = target or name
    return CapabilityDoc(
        key=f"{host}/{kind}/{target}",
        kind=kind,  # type: ignore[arg-type]
        target=target,
        name=name,
        title=title,
        description=description,
        params=tuple(params),
        keywords=tuple(keywords),
        host_app=app,
        host_version=version,
        host_key=host,
    )


def cad_docs(host: str, app: str) -> list[CapabilityDoc]:
    """The reference hosts' built-in capabilities, shortened."""
    scheme = app.lower()
    return [
        tool(
            "execute_python_code",
            "Run Python code inside the application with the open model.",
            host=host,
            app=app,
            params=[("code", "Python source to run")],
        ),
        tool(
            "open_document",
            "Open a drawing or model file.",
            host=host,
            app=app,
            params=[("filePath", "path of the file")],
        ),
        tool("save_document", "Save the active document.", host=host, app=app),
        tool("list_documents", "List the open documents.", host=host, app=app),
        tool(
            "navigate_history",
            "Undo or redo changes to the active document.",
            host=host,
            app=app,
            params=[("direction", "undo redo"), ("steps", "how many steps")],
        ),
        tool(
            "view_screenshot",
            "Render the active view to a PNG image.",
            host=host,
            app=app,
            params=[("width", "image width in pixels")],
        ),
        tool(
            "python-cheatsheet",
            "How to script this host in Python.",
            host=host,
            app=app,
            kind="resource",
            target=f"{scheme}://python-cheatsheet",
        ),
        tool(
            "element",
            "One element's properties by id.",
            host=host,
            app=app,
            kind="resource_template",
            target=f"{scheme}://element/{{elementId}}",
            params=[("elementId", "")],
        ),
    ]


@pytest.fixture
def index() -> SearchIndex:
    """An index with a DXF and an IFC host."""
    idx = SearchIndex()
    idx.replace_host("dxf-1", cad_docs("dxf-1", "DXF"))
    idx.replace_host("ifc-1", cad_docs("ifc-1", "IFC"))
    return idx

"""The package's public face: cheap import, reproducible sample, lazy api/util in scripts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cadmcp.hosts.ifc import HOST_APP, HOST_VERSION, create_server
from cadmcp.hosts.ifc.adapter import LazyPackage
from cadmcp.hosts.ifc.modelgen import build_house

SAMPLE = Path(__file__).resolve().parents[3] / "samples" / "house.ifc"


def test_importing_the_package_loads_neither_ifcopenshell_nor_mcp() -> None:
    code = (
        "import sys, cadmcp.hosts.ifc; print(sorted(m for m in ('ifcopenshell', 'mcp') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_public_constants() -> None:
    assert HOST_APP == "IFC"
    assert HOST_VERSION and HOST_VERSION[0].isdigit()
    assert callable(create_server)


def test_committed_sample_is_what_the_generator_makes() -> None:
    assert build_house().to_string() == SAMPLE.read_text(encoding="utf-8").replace("\r\n", "\n")
    assert SAMPLE.stat().st_size < 200_000


def test_lazy_packages_import_submodules_on_use() -> None:
    api = LazyPackage("ifcopenshell.api")
    assert callable(api.pset.edit_pset)
    assert "geometry" in dir(api)
    util = LazyPackage("ifcopenshell.util")
    assert callable(util.selector.filter_elements)
    try:
        api.no_such_module  # noqa: B018
    except AttributeError as exc:
        assert "no_such_module" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_create_server_is_ready_before_ifcopenshell_loads() -> None:
    code = (
        "import sys\nfrom cadmcp.hosts.ifc import create_server\n"
        f"create_server([{str(SAMPLE)!r}])\nprint('ifcopenshell' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_bad_start_up_paths_fail_at_once(tmp_path: Path) -> None:
    from cadmcp.hosts.ifc.documents import DocumentError

    drawing = tmp_path / "plan.dwg"
    drawing.write_bytes(b"AC1032")
    for bad in (str(tmp_path / "missing.ifc"), str(drawing)):
        try:
            create_server([bad])
        except DocumentError as exc:
            assert "missing.ifc" in str(exc) or "AutoCAD" in str(exc)
        else:
            raise AssertionError(f"{bad} was accepted")

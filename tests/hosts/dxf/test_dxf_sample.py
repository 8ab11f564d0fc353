"""The committed sample drawing is exactly what samples/make_dxf_sample.py produces."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from dxf_helpers import SAMPLE


def test_sample_is_reproducible_and_small(tmp_path: Path) -> None:
    target = tmp_path / "floorplan.dxf"
    script = SAMPLE.with_name("make_dxf_sample.py")
    subprocess.run([sys.executable, str(script), str(target)], check=True, capture_output=True)
    assert target.read_bytes() == SAMPLE.read_bytes()
    assert SAMPLE.stat().st_size < 200_000

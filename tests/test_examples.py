"""Every script in examples/ runs to the end (as ``python examples/NAME.py``)."""

import runpy
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))


@pytest.mark.slow
@pytest.mark.parametrize("script", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs(script, tmp_path, monkeypatch, capsys):
    plot = tmp_path / "plot.png"
    monkeypatch.setattr(sys, "argv", [str(script), str(plot)])
    runpy.run_path(str(script), run_name="__main__")
    out = capsys.readouterr().out
    assert "test accuracy" in out and "relative duality gap" in out
    assert plot.read_bytes().startswith(b"\x89PNG")

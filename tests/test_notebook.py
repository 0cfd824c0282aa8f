"""notebooks/passive-benchmark.ipynb runs top to bottom (nbclient): a broken API breaks CI."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="pip install -e '.[test]' (nbformat)")
nbclient = pytest.importorskip("nbclient", reason="pip install -e '.[test]' (nbclient)")
pytest.importorskip("ipykernel", reason="pip install -e '.[test]' (ipykernel)")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "passive-benchmark.ipynb"


def test_passive_benchmark_notebook_runs(tmp_path, monkeypatch):
    # A kernel of this very interpreter, whatever python3 kernelspecs the user has installed
    # (JUPYTER_PATH comes first in the kernelspec search path).
    spec_dir = tmp_path / "kernels" / "logscope-test"
    spec_dir.mkdir(parents=True)
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "logscope test", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))

    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        timeout=120,              # per cell; the whole notebook takes ~10 s
        kernel_name="logscope-test",
        allow_errors=False,
        # start in notebooks/ as Jupyter would: the notebook finds the repo root itself
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    )
    client.execute()              # raises CellExecutionError on the first failing cell
    errors = [o for c in nb.cells if c.cell_type == "code"
              for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors
    images = sum("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code"
                 for o in c.get("outputs", []))
    assert images >= 5, f"expected the figures to be drawn, got {images} PNG outputs"


def test_notebook_is_committed_without_outputs():
    """Outputs would go stale (and bloat the repo): the test run is the source of truth."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.get("outputs") and cell.get("execution_count") is None

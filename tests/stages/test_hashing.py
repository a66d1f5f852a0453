"""Code digests cover a stage's package and the project modules it imports, nothing else."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO


def _digest(root: Path, package: str) -> str:
    code = f"from stages.hashing import code_digest; print(code_digest({package!r}))"
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    return out.stdout.strip()


def test_digest_follows_imports_and_ignores_unrelated_code(tmp_path):
    shutil.copytree(REPO / "stages", tmp_path / "stages", ignore=shutil.ignore_patterns("__pycache__"))
    before_ingest = _digest(tmp_path, "stages.ingest")
    before_store = _digest(tmp_path, "stages.store")
    # stages.ingest imports stages.contract, which imports stages.store
    with open(tmp_path / "stages" / "contract.py", "a") as f:
        f.write("\n# a change\n")
    assert _digest(tmp_path, "stages.ingest") != before_ingest
    assert _digest(tmp_path, "stages.store") == before_store  # store does not import contract
    with open(tmp_path / "stages" / "ingest" / "writer.py", "a") as f:
        f.write("\n# another change\n")
    assert _digest(tmp_path, "stages.store") == before_store

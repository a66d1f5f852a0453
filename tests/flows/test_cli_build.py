"""``dorylus build``: --json output with a real engine, the skipped report without one,
and --require-images as a user error (exit 2, one line, no traceback)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from flows.cli import main
from tests.stages.build.engine_fixtures import docker_host  # noqa: F401  (a session fixture)

REPO = Path(__file__).resolve().parents[2]


def dorylus(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    exe = shutil.which("dorylus", path=str(Path(sys.executable).parent))
    cmd = [exe] if exe else [sys.executable, "-m", "flows.cli"]
    return subprocess.run([*cmd, *args], cwd=REPO, capture_output=True, text=True, timeout=900, env={**os.environ, **(env or {})})


def test_build_json_reports_the_images_and_caches(docker_host, tmp_path, capsys):
    store = str(tmp_path / "store")
    assert main(["build", "--json", "--store", store]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["stage"] == "build" and first["status"] == "built" and first["pushed"] is False
    for name in ("graph-server", "lambda"):
        assert first[f"{name}_image"].startswith(f"dorylus/{name}:") and first[f"{name}_size_mb"] > 100
    assert main(["build", "--json", "--store", store]) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["cached"] is True and second["key"] == first["key"]


def test_without_an_engine_build_is_skipped_with_the_reason(tmp_path):
    done = dorylus("build", "--json", "--store", str(tmp_path / "store"), env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "skipped" and "no Docker engine" in result["reason"]


def test_require_images_without_an_engine_is_a_user_error(tmp_path):
    done = dorylus("build", "--require-images", "--store", str(tmp_path / "store"),
                   env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("error: cannot build the images: no Docker engine")
    assert "Traceback" not in done.stderr
    assert not list((tmp_path / "store").rglob("manifest.json"))

"""Session fixtures for a real Docker engine, the local base image and the built images.

The engine is started with ``infra/local/start-docker.sh`` (which installs docker.io if
missing) unless one already answers, and stopped at the end of the session if this
session started it. Its state folder outlives the session (``$DORYLUS_DOCKER_STATE`` or
/var/tmp/dorylus-docker), so the base image and image layers are made once per machine.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
STATE = Path(os.environ.get("DORYLUS_DOCKER_STATE", "/var/tmp/dorylus-docker"))


def _running(pidfile: Path) -> int | None:
    try:
        pid = int(pidfile.read_text())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


@pytest.fixture(scope="session")
def docker_host():
    """``DOCKER_HOST`` of a running engine that holds the local base image."""
    pidfile = STATE / "dockerd.pid"
    ours_before = _running(pidfile)
    started = subprocess.run([str(REPO / "infra/local/start-docker.sh"), str(STATE)], capture_output=True, text=True, timeout=600)
    if started.returncode != 0:
        pytest.fail(f"could not start a Docker engine:\n{started.stderr[-3000:]}")
    host = started.stdout.strip().splitlines()[-1].split("=", 1)[1]
    saved = os.environ.get("DOCKER_HOST")
    os.environ["DOCKER_HOST"] = host
    base = subprocess.run([str(REPO / "infra/local/make-base-image.sh")], capture_output=True, text=True, timeout=900)
    if base.returncode != 0:
        pytest.fail(f"could not make the local base image:\n{base.stderr[-3000:]}")
    yield host
    if saved is None:
        os.environ.pop("DOCKER_HOST", None)
    else:
        os.environ["DOCKER_HOST"] = saved
    pid = _running(pidfile)
    if pid is not None and ours_before is None and host == f"unix://{STATE}/docker.sock":
        os.kill(pid, signal.SIGTERM)  # we started it: stop it (it stops its containerd)
        deadline = time.monotonic() + 30
        while _running(pidfile) == pid and time.monotonic() < deadline:
            time.sleep(0.2)


@pytest.fixture(scope="session")
def built_images(docker_host, tmp_path_factory):
    """The build stage's artifact for this checkout, built (or found) once per session."""
    from stages.build import build
    from stages.store import ArtifactStore

    store = ArtifactStore.open(str(tmp_path_factory.mktemp("build-store")))
    return build(store=store, require_images=True)


@pytest.fixture
def docker_client(docker_host):
    import docker

    client = docker.from_env()
    yield client
    client.close()

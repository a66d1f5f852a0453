"""Shared fixtures: real datasets, a private state folder, and real local servers.

Servers bind to 127.0.0.1 on a free port and are stopped when the session ends.
"""

from __future__ import annotations

import http.server
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATASETS = Path(os.environ.get("DORYLUS_DATASETS", REPO.parent / "shared" / "datasets"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


@pytest.fixture(scope="session", autouse=True)
def dorylus_home(tmp_path_factory):
    """Every test session gets its own state folder (store, caches, Prefect home)."""
    home = tmp_path_factory.mktemp("dorylus-home")
    os.environ["DORYLUS_HOME"] = str(home)
    return home


@pytest.fixture(scope="session")
def datasets() -> Path:
    if not DATASETS.is_dir():
        pytest.fail(f"the shared datasets are missing at {DATASETS}; set DORYLUS_DATASETS")
    return DATASETS


@pytest.fixture
def store(tmp_path):
    from stages.store import ArtifactStore

    return ArtifactStore.open(str(tmp_path / "store"))


@pytest.fixture(scope="session")
def moto_server():
    """A real S3 (and Lambda, ECR, CloudFormation) HTTP endpoint: moto's server on 127.0.0.1.

    Sets the AWS environment (dummy credentials, region, ``AWS_ENDPOINT_URL``) for the
    whole session and yields the endpoint URL.
    """
    port = free_port()
    exe = shutil.which("moto_server", path=str(Path(sys.executable).parent)) or shutil.which("moto_server")
    proc = subprocess.Popen(
        [exe, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for_port(port)
        url = f"http://127.0.0.1:{port}"
        env = {
            "AWS_ENDPOINT_URL": url,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
        }
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        yield url
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def s3_bucket(moto_server):
    """A fresh bucket on the moto server; yields its name."""
    import uuid

    import boto3

    name = f"test-{uuid.uuid4().hex[:12]}"
    boto3.client("s3").create_bucket(Bucket=name)
    return name


@pytest.fixture(scope="session")
def http_datasets(datasets):
    """An HTTP server on 127.0.0.1 serving the shared datasets folder; yields its base URL."""

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(datasets), **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()

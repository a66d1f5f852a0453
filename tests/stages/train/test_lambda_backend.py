"""The lambda backend on this machine: moto's Lambda server running the function in Docker.

moto runs every invocation in a container of a runtime image with the function's zip in
/var/task. Here that image is the local stand-in built by ``stages.build.local_lambda``
(the local Debian base, the pinned torch/numpy/pyzmq, a bootstrap), and the containers use
the host network so the function reaches the graph servers on 127.0.0.1. The function is
created from the project's code (``local_lambda.function_zip``), so what runs inside the
containers is the checkout's tensor worker.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from stages.contract import resolve_artifact
from stages.errors import DorylusError
from stages.train import TrainConfig, train
from stages.train.config import resolve
from stages.train.lambda_backend import backoff_delay, check_function
from tests.conftest import REPO, free_port, wait_for_port
from tests.stages.build.engine_fixtures import docker_host  # noqa: F401 - the engine fixture

EPOCHS = 3
E2E_EPOCHS = 2  # each invocation is a fresh container (about 3 s): keep the end-to-end run short
FUNCTION = "dorylus-tensor-worker"
BROKEN = "dorylus-broken-worker"


@pytest.fixture(scope="module")
def engine_host(request):
    """The Docker engine; the tests skip (saying why) only where none can be started."""
    try:
        return request.getfixturevalue("docker_host")
    except pytest.fail.Exception as exc:
        pytest.skip(f"no Docker engine for moto's Lambda: {str(exc).splitlines()[0]}")


@pytest.fixture(scope="module")
def moto_lambda(engine_host, tmp_path_factory):
    """moto's server on 127.0.0.1 running Lambda in Docker, with the tensor-worker function
    (the project's code) and a function that always raises. Yields the AWS environment."""
    import boto3

    from stages.build import DEFAULT_BASE_IMAGE, engine, local_lambda

    eng = engine.connect()
    runtime = local_lambda.runtime_image(eng, DEFAULT_BASE_IMAGE)
    local_lambda.volume_holder_image(eng, DEFAULT_BASE_IMAGE)
    port = free_port()
    aws = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
    env = dict(os.environ, **aws, DOCKER_HOST=engine_host, MOTO_DOCKER_NETWORK_MODE="host",
               MOTO_DOCKER_LAMBDA_IMAGE=runtime)
    volumes_before = {v.name for v in eng.client.volumes.list()}
    exe = os.path.join(os.path.dirname(sys.executable), "moto_server")
    log = open(tmp_path_factory.mktemp("moto") / "moto.log", "w")
    proc = subprocess.Popen([exe, "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        wait_for_port(port)
        url = f"http://127.0.0.1:{port}"
        kw = dict(endpoint_url=url, region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing")
        broken = io.BytesIO()
        with zipfile.ZipFile(broken, "w") as zf:
            zf.writestr("broken.py", "def handler(event, context):\n    raise RuntimeError('the tensor worker is broken')\n")
        saved = {k: os.environ.get(k) for k in aws}
        os.environ.update(aws)
        try:
            local_lambda.deploy_function(FUNCTION, url)  # the project's code
            local_lambda.deploy_function(BROKEN, url, code=broken.getvalue(), handler="broken.handler")
        finally:
            for k, v in saved.items():
                os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
        yield {"url": url, "env": dict(os.environ, **aws), "logs": boto3.client("logs", **kw), "runtime": runtime}
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
        _remove_leftovers(eng, runtime, volumes_before)


def _remove_leftovers(eng, runtime: str, volumes_before: set[str]) -> None:
    """moto leaves containers of invocations still running when it stops, and a volume per
    code digest: remove what this module's moto made (only it runs the runtime image)."""
    import docker

    for c in eng.client.containers.list(all=True, filters={"ancestor": runtime}):
        c.remove(force=True)
    for v in eng.client.volumes.list():
        if v.name not in volumes_before:
            try:
                v.remove()
            except docker.errors.APIError:
                pass  # in use by something else: not ours to remove


def _metrics(art_path) -> list[dict]:
    return [json.loads(line) for line in (art_path / "metrics.jsonl").read_text().splitlines()]


def _dorylus(args: list[str], env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flows.cli", *args], capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=900)


def _container_runs(logs) -> list[str]:
    """The START lines the runtime wrote in moto's logs, one per invocation that ran."""
    lines = []
    if not logs.describe_log_groups(logGroupNamePrefix=f"/aws/lambda/{FUNCTION}")["logGroups"]:
        return lines  # nothing invoked yet
    for page in logs.get_paginator("filter_log_events").paginate(logGroupName=f"/aws/lambda/{FUNCTION}"):
        lines += [e["message"] for e in page["events"] if e["message"].startswith("START RequestId")]
    return lines


def test_train_on_lambda_equals_local(moto_lambda, cora_parts, dask_inprocess, train_store, tmp_path):
    """``dorylus train --backend lambda``: 3 graph servers x 2 intervals x 3 tasks x 2 epochs."""
    parts = cora_parts(3)
    before = len(_container_runs(moto_lambda["logs"]))
    done = _dorylus(["train", str(parts.path()), "--backend", "lambda", "--lambda-endpoint-url", moto_lambda["url"],
                     "--lambda-region", "us-east-1", "--epochs", str(E2E_EPOCHS), "--intervals", "2",
                     "--store", str(tmp_path / "store"), "--json"], moto_lambda["env"])
    assert done.returncode == 0, done.stderr[-3000:]
    lam = _metrics(resolve_artifact(json.loads(done.stdout.strip().splitlines()[-1])["uri"]).path())
    local = train(parts, TrainConfig(epochs=E2E_EPOCHS, backend="local", intervals_per_server=2, num_workers=2),
                  store=train_store, client=dask_inprocess, force=True)
    ref = _metrics(local.path())
    assert len(lam) == len(ref) == E2E_EPOCHS
    np.testing.assert_allclose([m["loss"] for m in lam], [m["loss"] for m in ref], rtol=1e-5)
    for a, b in zip(lam, ref):
        assert (a["train_acc"], a["val_acc"], a["test_acc"]) == (b["train_acc"], b["val_acc"], b["test_acc"])
    # every tensor task ran in a container, from the function's code in /var/task
    tasks = sum(m["task_count"]["AV"] + m["task_count"]["AV_b"] for m in lam)
    runs = _container_runs(moto_lambda["logs"])[before:]
    assert tasks == 3 * 2 * 3 * E2E_EPOCHS  # 3 parts x 2 intervals x (AV, loss, AV_b) per epoch
    assert len(runs) >= tasks
    assert all("Handler: stages.train.worker.handler Module: /var/task/stages/train/worker.py" in r for r in runs)
    summary = json.loads((resolve_artifact(json.loads(done.stdout.strip().splitlines()[-1])["uri"]).path()
                          / "summary.json").read_text())
    assert summary["backend"] == "lambda" and summary["failed_invocations"] == 0
    assert all(1 <= c <= 2 for c in summary["tensor_concurrency"])  # autotuned, at most the 2 intervals


def test_a_failing_function_stops_the_run_with_one_line(moto_lambda, cora_parts, tmp_path):
    done = _dorylus(["train", str(cora_parts(3).path()), "--backend", "lambda", "--lambda-function", BROKEN,
                     "--lambda-endpoint-url", moto_lambda["url"], "--epochs", "2", "--intervals", "1",
                     "--store", str(tmp_path / "store")], moto_lambda["env"])
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: training failed:")
    assert f"Lambda function {BROKEN!r} failed 3 times" in last and "the tensor worker is broken" in last
    assert not list((tmp_path / "store").rglob("summary.json"))  # no artifact, not even half of one


@pytest.fixture
def aws_credentials(monkeypatch):
    """moto's dummy credentials for calls made in this process (no real ones are read)."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")


def test_a_missing_function_is_a_user_error(moto_lambda, cora_parts, tmp_path, aws_credentials):
    with pytest.raises(DorylusError, match="'no-such-function' does not exist"):
        check_function({"function": "no-such-function", "region": "us-east-1", "endpoint_url": moto_lambda["url"]})
    done = _dorylus(["train", str(cora_parts(3).path()), "--backend", "lambda", "--lambda-function", "no-such-function",
                     "--lambda-endpoint-url", moto_lambda["url"], "--store", str(tmp_path / "store")], moto_lambda["env"])
    assert done.returncode == 2 and done.stderr.strip().splitlines()[-1].startswith("error: the Lambda function")


def test_killed_and_hung_invocations_are_retried_and_relaunched(moto_lambda, cora_parts, cora_reference, dask_inprocess,
                                                                train_store, losses_equal, engine_host, aws_credentials):
    """A container that dies is a function error (retried); one that hangs is a straggler
    (relaunched; the hung one is left to its timeout). The result is unchanged."""
    import docker

    history, _ = cora_reference(EPOCHS)
    faults = (
        {"type": "AV", "epoch": 2, "layer": 0, "interval": 0, "kind": "kill"},
        {"type": "AV_b", "epoch": 3, "layer": 0, "interval": 1, "kind": "hang"},
    )
    try:
        cfg = TrainConfig(epochs=EPOCHS, backend="lambda", intervals_per_server=2, relaunch_min_s=8.0, faults=faults,
                          lambda_region="us-east-1", lambda_endpoint_url=moto_lambda["url"])
        art = train(cora_parts(1), cfg, store=train_store, client=dask_inprocess, force=True)
    finally:
        client = docker.DockerClient(base_url=engine_host)
        for c in client.containers.list(filters={"ancestor": moto_lambda["runtime"]}):
            c.kill()  # the hung invocation we caused: moto would wait 300 s for it
        client.close()
    summary = json.loads((art.path() / "summary.json").read_text())
    assert summary["failed_invocations"] == 1  # the killed container, retried once
    assert summary["relaunched_tasks"] >= 1  # the hung one
    losses_equal(art, history)


def test_backoff_grows_exponentially_with_jitter_and_a_cap():
    import random

    rng = random.Random(0)
    delays = [[backoff_delay(r, base=0.1, cap=5.0, rng=rng) for r in range(10)] for _ in range(50)]
    for row in delays:
        for r, d in enumerate(row):
            ceiling = min(5.0, 0.1 * 2**r)
            assert ceiling / 2 <= d <= ceiling
    assert len({round(row[3], 6) for row in delays}) > 1  # jitter: throttled invokers spread out


@pytest.mark.parametrize("change, message", [
    ({"worker_memory_mb": 64}, "Lambda allows 128 to 10240 MB"),
    ({"lambda_function": ""}, "lambda_function must name the Lambda function"),
    ({"latency_ms": 5.0}, "applies to the local backend only"),
])
def test_lambda_settings_are_validated(change, message):
    with pytest.raises(DorylusError, match=message):
        resolve(TrainConfig(backend="lambda", **change))
    assert resolve(TrainConfig(backend="lambda")).lambda_settings()["function"] == FUNCTION


class ThrottlingFront:
    """An HTTP front for moto's Lambda that throttles the first ``n`` invocations.

    moto never throttles, so this answers them as Lambda does when the function's
    concurrency is exhausted (HTTP 429, ``TooManyRequestsException``) and passes every
    other request to moto unchanged.
    """

    def __init__(self, backend_url: str, n: int):
        import http.client
        import http.server
        import threading
        from urllib.parse import urlparse

        self.remaining, self.throttled = n, 0
        lock = threading.Lock()
        target = urlparse(backend_url)
        front = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _answer(self, status: int, headers, body: bytes):
                self.send_response(status)
                for k, v in headers:
                    if k.lower() not in ("content-length", "transfer-encoding", "connection", "date", "server"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _relay(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.command == "POST" and self.path.endswith("/invocations"):
                    with lock:
                        throttle = front.remaining > 0
                        if throttle:
                            front.remaining -= 1
                            front.throttled += 1
                    if throttle:
                        return self._answer(429, [("x-amzn-ErrorType", "TooManyRequestsException"),
                                                  ("Content-Type", "application/json")],
                                            json.dumps({"Reason": "ReservedFunctionConcurrentInvocationLimitExceeded",
                                                        "Type": "User", "message": "Rate Exceeded."}).encode())
                conn = http.client.HTTPConnection(target.hostname, target.port, timeout=900)
                conn.request(self.command, self.path, body, dict(self.headers))
                reply = conn.getresponse()
                self._answer(reply.status, reply.getheaders(), reply.read())
                conn.close()

            do_GET = do_POST = do_PUT = do_DELETE = _relay

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_throttled_invocations_back_off_and_nothing_is_lost(moto_lambda, cora_parts, cora_reference, dask_inprocess,
                                                            train_store, losses_equal, aws_credentials):
    history, _ = cora_reference(1)
    front = ThrottlingFront(moto_lambda["url"], n=4)
    try:
        cfg = TrainConfig(epochs=1, backend="lambda", intervals_per_server=1, lambda_region="us-east-1",
                          lambda_endpoint_url=front.url)
        art = train(cora_parts(1), cfg, store=train_store, client=dask_inprocess, force=True)
    finally:
        front.close()
    assert front.throttled == 4 and front.remaining == 0  # the first four were refused, then retried
    summary = json.loads((art.path() / "summary.json").read_text())
    assert summary["failed_invocations"] == 0  # throttling is not a failure
    losses_equal(art, history)

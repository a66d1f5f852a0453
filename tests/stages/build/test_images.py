"""The images the build stage makes, run as they run in production.

The graph-server image runs a Dask scheduler and worker that a client on the host uses;
the Lambda image runs under a Runtime API the way Lambda runs it: read-only root
filesystem, a writable /tmp, a non-root user.
"""

from __future__ import annotations

import importlib.util
import socket
import textwrap
from importlib import metadata

import pytest

from stages.build import images
from tests.conftest import free_port, wait_for_port
from tests.stages.build.lambda_runtime import LambdaRuntimeAPI


@pytest.fixture
def containers(docker_client):
    started = []
    yield lambda **kw: started.append(docker_client.containers.run(detach=True, **kw)) or started[-1]
    for c in started:
        c.remove(force=True)


def _logs(container) -> str:
    return container.logs().decode(errors="replace")[-3000:]


@pytest.mark.filterwarnings("ignore::distributed.versions.VersionMismatchWarning")
def test_graph_server_image_runs_a_dask_cluster_with_the_project(built_images, containers):
    from distributed import Client

    tag = images(built_images)["images"]["graph-server"]["tag"]
    port, worker_port, nanny_port = free_port(), free_port(), free_port()
    # host networking with 127.0.0.1: nothing listens beyond this machine
    scheduler = containers(image=tag, command=["scheduler", "--host", "127.0.0.1", "--dashboard-address", ":0"],
                           network_mode="host", environment={"DORYLUS_SCHEDULER_PORT": str(port)})
    wait_for_port(port, timeout=90)
    worker = containers(image=tag, command=["worker", f"tcp://127.0.0.1:{port}", "--host", "127.0.0.1"],
                        network_mode="host", environment={"DORYLUS_WORKER_NAME": "graph-server-0",
                                                          "DORYLUS_WORKER_PORT": str(worker_port),
                                                          "DORYLUS_NANNY_PORT": str(nanny_port)})
    with Client(f"tcp://127.0.0.1:{port}", timeout=90) as client:
        try:
            client.wait_for_workers(1, timeout=120)
        except Exception:
            pytest.fail(f"no worker joined:\nscheduler:\n{_logs(scheduler)}\nworker:\n{_logs(worker)}")
        info = client.scheduler_info()["workers"]
        assert [w["name"] for w in info.values()] == ["graph-server-0"]

        def inside():
            import importlib.metadata as md

            import stages.contract
            import torch

            return {"module": stages.contract.__file__, "torch": torch.__version__, "dask": md.version("distributed"),
                    "sum": float(torch.arange(10.0).sum())}

        got = client.submit(inside, pure=False).result(timeout=120)
    assert got["module"].startswith("/opt/dorylus/lib/python3.11/site-packages/stages/")
    assert got["torch"] == metadata.version("torch") and got["dask"] == metadata.version("distributed")
    assert got["sum"] == 45.0


PROBE = textwrap.dedent('''
    import os, torch, stages.contract
    def handler(event, context):
        x = torch.tensor(event["x"], dtype=torch.float32)
        open("/tmp/scratch", "w").write("ok")  # /tmp must be writable
        try:
            open("/opt/dorylus/probe", "w")
            writable_root = True
        except OSError:
            writable_root = False
        return {"sum": float(x.sum()), "uid": os.getuid(), "writable_root": writable_root,
                "request_id": context.aws_request_id, "stages": stages.contract.__name__}
''')


@pytest.fixture
def runtime_api():
    api = LambdaRuntimeAPI()
    yield api
    api.close()


def _run_lambda(containers, built_images, runtime_api, tmp_path, **kw):
    tag = images(built_images)["images"]["lambda"]["tag"]
    return containers(image=tag, network_mode="host", read_only=True, tmpfs={"/tmp": "size=64m"}, user="993:993",
                      environment={"AWS_LAMBDA_RUNTIME_API": runtime_api.address, **kw.pop("environment", {})}, **kw)


def test_lambda_image_serves_a_handler_through_the_runtime_api(built_images, containers, runtime_api, tmp_path):
    (tmp_path / "probe.py").write_text(PROBE)
    tmp_path.chmod(0o755)
    container = _run_lambda(containers, built_images, runtime_api, tmp_path, command=["probe.handler"],
                            volumes={str(tmp_path): {"bind": "/probe", "mode": "ro"}}, environment={"PYTHONPATH": "/probe"})
    try:
        kind, result = runtime_api.invoke({"x": [1, 2, 3.5]})
    except Exception:
        pytest.fail(f"no answer from the Lambda image:\n{_logs(container)}")
    assert kind == "response", result
    assert result["sum"] == 6.5 and result["uid"] == 993 and result["writable_root"] is False
    assert result["stages"] == "stages.contract" and len(result["request_id"]) == 36
    # a failing invocation is reported as a function error and the runtime keeps serving
    kind, error = runtime_api.invoke({"y": 1})
    assert kind == "error" and error["errorType"] == "KeyError"
    assert runtime_api.invoke({"x": [2]})[1]["sum"] == 2.0


def test_lambda_image_default_handler_imports(built_images, containers, runtime_api, tmp_path):
    if importlib.util.find_spec("stages.train.worker") is None:
        pytest.skip("stages.train.worker (the tensor-worker handler) is not in this checkout yet")
    container = _run_lambda(containers, built_images, runtime_api, tmp_path)
    assert runtime_api.polled.wait(120), _logs(container)
    assert runtime_api.init_errors == [], _logs(container)

"""Cost and value of a training run, priced as the equivalent AWS deployment.

Cost = graph-server hours + parameter-server hours (on-demand EC2) + Lambda GB-seconds +
Lambda requests, the sum the authors' cost scripts compute. Value = 1 / (time x cost), the
paper's performance per dollar.

A run on this machine has no AWS bill, so it is priced from what it measured: each graph
and parameter server is billed for the run's wall time (the train stage reports
``server_seconds``), and tensor work is billed as Lambda from the summed worker-side task
durations (``tensor_task_seconds``) at the configured worker memory, one request per tensor
task. The figures are therefore an estimate: the durations come from this machine's cores,
not from the instances named, and Lambda's per-invocation rounding to 1 ms and network time
outside the handler are not included.
"""

from __future__ import annotations

from stages.evaluate.pricing import instance_price

# tensor tasks (what a Lambda would run, one invocation each); the rest are graph tasks
TENSOR_TASKS = ("AV", "AE", "AV_b", "AE_b")
LAMBDA_BACKENDS = ("lambda", "local")


def deployment_for(summary: dict, pricing: dict, graph_instance: str | None = None, parameter_instance: str | None = None) -> dict:
    """Which instances the run is priced as, given its backend."""
    dep = pricing["deployment"]
    backend = summary.get("backend", "cpu")
    default_graph = dep["gpu_graph_server"] if backend == "gpu" else dep["graph_server"]
    return {
        "backend": backend,
        "graph_instance": graph_instance or default_graph,
        "parameter_instance": parameter_instance or dep["parameter_server"],
        "lambda": backend in LAMBDA_BACKENDS,
    }


def estimate_cost(summary: dict, pricing: dict, graph_instance: str | None = None, parameter_instance: str | None = None) -> dict:
    """Dollars by item for a train summary (the train artifact's ``summary.json``)."""
    dep = deployment_for(summary, pricing, graph_instance, parameter_instance)
    seconds = summary.get("server_seconds", {})
    graph_hours = float(seconds.get("graph", 0.0)) / 3600
    parameter_hours = float(seconds.get("parameter", 0.0)) / 3600
    memory_mb = float(summary.get("worker_memory_mb") or 3008)
    counts = summary.get("task_count_total", {})
    if dep["lambda"]:
        gb_seconds = float(summary.get("tensor_task_seconds", 0.0)) * memory_mb / 1024
        requests = int(sum(int(counts.get(t, 0)) for t in TENSOR_TASKS))
    else:
        gb_seconds, requests = 0.0, 0
    items = {
        "graph_servers": graph_hours * instance_price(pricing, dep["graph_instance"]),
        "parameter_servers": parameter_hours * instance_price(pricing, dep["parameter_instance"]),
        "lambda_compute": gb_seconds * float(pricing["lambda"]["gb_second"]),
        "lambda_requests": requests * float(pricing["lambda"]["per_request"]),
    }
    return {
        **dep,
        "graph_server_hours": graph_hours,
        "parameter_server_hours": parameter_hours,
        "lambda_gb_seconds": gb_seconds,
        "lambda_requests": requests,
        "lambda_memory_mb": memory_mb if dep["lambda"] else None,
        "items": items,
        "total": sum(items.values()),
        "prices_as_of": pricing["meta"]["as_of"],
        "region": pricing["meta"]["region"],
    }


def value(time_s: float | None, cost: float | None) -> float | None:
    """The paper's value, 1 / (T x C), in 1 / (second x dollar); None when undefined."""
    if not time_s or not cost or time_s <= 0 or cost <= 0:
        return None
    return 1.0 / (time_s * cost)

import pytest

from stages.evaluate import cost
from stages.evaluate.pricing import load_pricing

PRICING = {
    "meta": {"as_of": "2025-01-01", "region": "us-east-1", "currency": "USD"},
    "lambda": {"gb_second": 0.00002, "per_request": 0.000001},
    "ec2": {"big": 3.6, "small": 0.36, "gpu": 36.0},
    "deployment": {"graph_server": "big", "parameter_server": "small", "gpu_graph_server": "gpu"},
}
SUMMARY = {
    "backend": "local",
    "train_time": 100.0,
    "server_seconds": {"graph": 200.0, "parameter": 100.0},
    "tensor_task_seconds": 50.0,
    "worker_memory_mb": 2048,
    "task_count_total": {"GA": 7, "AV": 10, "AE": 10, "AV_b": 5, "AE_b": 5, "WU": 3},
}


def test_lambda_backend_cost_is_servers_plus_gb_seconds_plus_requests():
    c = cost.estimate_cost(SUMMARY, PRICING)
    assert c["items"]["graph_servers"] == pytest.approx(200 / 3600 * 3.6)  # 0.2
    assert c["items"]["parameter_servers"] == pytest.approx(100 / 3600 * 0.36)  # 0.01
    assert c["lambda_gb_seconds"] == pytest.approx(100.0)  # 50 s x 2 GB
    assert c["items"]["lambda_compute"] == pytest.approx(0.002)
    assert c["lambda_requests"] == 30  # tensor tasks only
    assert c["items"]["lambda_requests"] == pytest.approx(0.00003)
    assert c["total"] == pytest.approx(0.2 + 0.01 + 0.002 + 0.00003)


def test_cpu_backend_has_no_lambda_and_gpu_uses_the_gpu_instance():
    cpu = cost.estimate_cost({**SUMMARY, "backend": "cpu"}, PRICING)
    assert cpu["lambda"] is False and cpu["items"]["lambda_compute"] == 0 and cpu["lambda_requests"] == 0
    gpu = cost.estimate_cost({**SUMMARY, "backend": "gpu"}, PRICING)
    assert gpu["graph_instance"] == "gpu" and gpu["items"]["graph_servers"] == pytest.approx(2.0)
    other = cost.estimate_cost(SUMMARY, PRICING, graph_instance="small")
    assert other["items"]["graph_servers"] == pytest.approx(0.02)


def test_value_is_one_over_time_times_cost():
    assert cost.value(10.0, 0.5) == pytest.approx(0.2)
    assert cost.value(0.0, 0.5) is None and cost.value(10.0, 0.0) is None


def test_the_shipped_pricing_table_prices_the_papers_instances():
    table = load_pricing()
    for instance in ("c5n.2xlarge", "c5.xlarge", "p3.2xlarge"):
        assert table["ec2"][instance] > 0
    assert table["meta"]["region"] in ("us-east-1", "us-east-2") and table["meta"]["as_of"]
    # the paper's Lambda figure is consistent with the per-GB-second price (192 MB for an hour)
    assert table["paper"]["lambda_gb_second"] * 192 / 1024 * 3600 == pytest.approx(table["paper"]["lambda_192mb_hour"], rel=1e-4)

from __future__ import annotations

import math

import pytest

from stages.errors import DorylusError
from stages.train.config import TrainConfig, canonical_staleness, resolve


def test_defaults_are_the_standard_gcn_settings():
    c = resolve(TrainConfig())
    assert (c.hidden, c.activation, c.dropout, c.lr, c.weight_decay, c.epochs) == ((16,), "relu", 0.5, 0.01, 5e-4, 200)
    assert c.staleness_bound is None


def test_gat_defaults_and_paper_preset():
    g = resolve(TrainConfig(model="gat"))
    assert (g.hidden, g.heads, g.dropout, g.lr) == ((8,), 8, 0.6, 0.005)
    p = resolve(TrainConfig(preset="paper"), "reddit-small")
    assert (p.hidden, p.activation, p.dropout, p.weight_decay) == ((128,), "tanh", 0.0, 0.0)
    assert resolve(TrainConfig(preset="paper"), "amazon").hidden == (64,)


def test_staleness_values():
    assert resolve(TrainConfig(staleness="1")).staleness_bound == 1
    assert resolve(TrainConfig(staleness="inf")).staleness_bound == math.inf
    assert canonical_staleness(" SYNC ") == "sync" and canonical_staleness("0") == "0"


@pytest.mark.parametrize(
    "bad",
    [
        {"model": "sage"},
        {"staleness": "-1"},
        {"staleness": "soon"},
        {"dropout": 1.0},
        {"lr": -0.1},
        {"epochs": 0},
        {"backend": "gpu"},
        {"hidden": (0,)},
        {"intervals_per_server": 0},
        {"latency_ms": 20.0},  # the cpu backend has no worker network to simulate
        {"switch_to_sync": 0.02},  # needs a target accuracy
        {"target_accuracy": 1.5},
    ],
)
def test_invalid_settings_raise_a_clear_error(bad):
    with pytest.raises(DorylusError, match="invalid training setting|unknown model"):
        resolve(TrainConfig(**bad))


def test_params_round_trip():
    c = resolve(TrainConfig(hidden=(32, 16), faults=({"kind": "hang", "epoch": 1},)))
    assert TrainConfig.from_params(c.to_params()) == c

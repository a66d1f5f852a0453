"""Which partition owns each vertex: the methods, and the cheap baselines ``hash`` and ``range``.

Every method returns ``owner`` (N,) int32 with values in ``0..P-1``. All methods balance
the same load, a vertex's *work* on its graph server: its in-edges plus the self loop of
A+I (``deg_in + 1``), which is also METIS's vertex weight here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stages.errors import DorylusError
from stages.ingest.dataset import IngestedGraph

METHODS = ("hash", "range", "metis", "fennel")


@dataclass(frozen=True)
class Knobs:
    """Method parameters beyond P and the seed (they enter the stage key)."""

    slack: float = 1.1  # fennel: hard cap on a part's load, as a multiple of the mean load
    gamma: float = 1.5  # fennel: exponent of the balance penalty (Tsourakakis et al. use 1.5)
    passes: int = 3  # fennel: streaming passes; later ones restream (Nishimura and Ugander 2013)

    def check(self) -> None:
        if not self.slack >= 1.0:
            raise DorylusError(f"slack must be at least 1.0 (a part may hold slack x the mean load), not {self.slack}")
        if not self.gamma > 1.0:
            raise DorylusError(f"gamma must be above 1.0 (Fennel's penalty exponent), not {self.gamma}")
        if int(self.passes) != self.passes or self.passes < 1:
            raise DorylusError(f"passes must be a positive integer, not {self.passes}")


def check_method(method: str) -> None:
    if method not in METHODS:
        raise DorylusError(f"unknown partition method {method!r}; choose one of {', '.join(METHODS)}")


def assign_owners(method: str, graph: IngestedGraph, deg_in: np.ndarray, parts: int, seed: int, knobs: Knobs) -> np.ndarray:
    check_method(method)
    n = graph.num_nodes
    if parts == 1:  # the single-server case: every method agrees
        return np.zeros(n, dtype=np.int32)
    if method == "hash":
        return hash_owner(n, parts, seed)
    if method == "range":
        return range_owner(deg_in + 1, parts)
    if method == "metis":
        from stages.partition.metis import metis_owner

        return metis_owner(graph, deg_in + 1, parts, seed)
    from stages.partition.fennel import fennel_owner

    return fennel_owner(graph, deg_in + 1, parts, seed, knobs)


def hash_owner(n: int, parts: int, seed: int) -> np.ndarray:
    """splitmix64 of (vertex id, seed) mod P: a random placement that needs no state."""
    with np.errstate(over="ignore"):  # the mix relies on uint64 wrap-around
        x = np.arange(n, dtype=np.uint64) + np.uint64((seed * 0x9E3779B97F4A7C15) % 2**64)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    return (x % np.uint64(parts)).astype(np.int32)


def range_owner(work: np.ndarray, parts: int) -> np.ndarray:
    """Contiguous id ranges, cut where the cumulative work crosses k/P of the total."""
    n = len(work)
    cumulative = np.cumsum(work, dtype=np.int64)
    cuts = np.searchsorted(cumulative, cumulative[-1] * np.arange(1, parts) / parts, side="left") + 1
    # at least one vertex per part, even when one vertex outweighs a whole share:
    # cut k - k nondecreasing in [0, n-P] makes the cuts strictly increasing in [1, n-1]
    k = np.arange(1, parts)
    cuts = np.maximum.accumulate(np.clip(cuts - k, 0, n - parts)) + k
    owner = np.zeros(n, dtype=np.int32)
    owner[cuts] = 1
    return np.cumsum(owner, dtype=np.int32)

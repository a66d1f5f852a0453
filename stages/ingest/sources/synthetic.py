"""``synthetic:nodes=N,avg_degree=D,features=F,classes=C,homophily=H,seed=S``: a generated graph.

A degree-corrected stochastic block model (Karrer and Newman, 2011) whose labels can be
learned from structure and features, so a GCN trained on it beats chance by a wide margin
without finding it trivial:

- every node gets a class (balanced: a seeded permutation of ``arange(N) % C``) and a
  power-law degree propensity ``theta`` (Pareto tail, exponent ``DEGREE_EXPONENT``, capped
  at ``sqrt(N)`` so hubs do not turn into cliques of duplicate edges);
- ``N * D / 2`` undirected edges are drawn: one endpoint with probability proportional to
  ``theta``; the other, with probability H, from the same class, otherwise from a class
  drawn uniformly among the others, again proportional to ``theta`` inside that class.
  H is therefore the edge homophily before cleaning; the writer stores both directions, so
  a node's average degree is about D (a little less once self loops and duplicates go);
- features are a class mean plus unit Gaussian noise; the class means have norm about
  ``FEATURE_SIGNAL``, so the features alone tell classes apart only weakly and averaging
  over neighbours (what a GCN layer does) sharpens them.

The graph is a pure function of its parameters: nodes, features and every edge chunk are
drawn from their own ``numpy.random.SeedSequence`` child of the seed, and chunks always
have ``EDGES_PER_CHUNK`` edges, so the result does not depend on how many workers generate
it or in which order they finish. Edge chunks are generated with Dask (see
``SCHEDULER``) a few at a time ahead of the writer, so memory stays at a few chunks
whatever the edge count.
"""

from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterator

import numpy as np

from stages.errors import DorylusError
from stages.ingest.schema import SPLIT_TEST, SPLIT_TRAIN, SPLIT_VAL, GraphSource

log = logging.getLogger("dorylus.ingest")

EDGES_PER_CHUNK = 1 << 22  # part of the graph's definition: changing it changes the graph
NODES_PER_BLOCK = 1 << 16  # feature rows drawn per seeded block (also part of the definition)
DEGREE_EXPONENT = 2.5  # P(theta > t) ~ t^-(exponent - 1), as in many real social graphs
FEATURE_SIGNAL = 1.0  # norm of a class mean; the noise has unit variance per dimension
SPLIT_FRACTIONS = (0.6, 0.2, 0.2)  # train / val / test, a random split of all nodes
# "processes" (a distributed LocalCluster) or "threads" (the same, in-process): numpy
# releases the GIL in the sampling kernels, so threads avoid shipping chunks between
# processes; tests/bench/bench_ingest.py compares the two.
SCHEDULER = "threads"
WORKERS = 2

# seed-sequence streams: one per kind of randomness, so adding one never shifts another
_NODES, _FEATURES, _EDGES, _SPLIT = 0, 1, 2, 3


@dataclass(frozen=True)
class Params:
    nodes: int = 100_000
    avg_degree: float = 16.0
    features: int = 64
    classes: int = 8
    homophily: float = 0.8
    seed: int = 0

    @property
    def num_edges(self) -> int:
        """Undirected edges drawn (before cleaning)."""
        return int(round(self.nodes * self.avg_degree / 2))

    @property
    def num_chunks(self) -> int:
        return math.ceil(self.num_edges / EDGES_PER_CHUNK)


_KINDS = {"nodes": int, "avg_degree": float, "features": int, "classes": int, "homophily": float, "seed": int}
_EXAMPLE = "synthetic:nodes=100000,avg_degree=16,features=64,classes=8,homophily=0.8,seed=0"


def parse(argument: str) -> Params:
    """``key=value`` pairs separated by commas; every key optional."""
    values: dict = {}
    for item in filter(None, (s.strip() for s in argument.split(","))):
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or key not in _KINDS:
            raise DorylusError(
                f"synthetic source: {item!r} is not one of the keys {', '.join(_KINDS)} written as key=value "
                f"(example: {_EXAMPLE})"
            )
        if key in values:
            raise DorylusError(f"synthetic source: {key} is given twice")
        try:
            number = float(text)
            if _KINDS[key] is int:
                if not number.is_integer():
                    raise ValueError
                number = int(number)
        except ValueError:
            raise DorylusError(f"synthetic source: {key}={text!r} is not a{'n integer' if _KINDS[key] is int else ' number'}") from None
        values[key] = number
    p = Params(**values)
    checks = [
        (p.nodes >= 2, "nodes must be at least 2"),
        (p.nodes < 2**31, "nodes must be below 2**31"),
        (p.classes >= 2, "classes must be at least 2"),
        (p.classes <= p.nodes, "classes cannot exceed nodes"),
        (p.features >= 1, "features must be at least 1"),
        (math.isfinite(p.avg_degree) and p.avg_degree > 0, "avg_degree must be a positive number"),
        (p.avg_degree <= p.nodes - 1, "avg_degree cannot exceed nodes - 1"),
        (0.0 <= p.homophily <= 1.0, "homophily must be between 0 and 1"),
        (p.seed >= 0, "seed must be a non-negative integer"),
    ]
    for ok, message in checks:
        if not ok:
            raise DorylusError(f"synthetic source: {message} (got {asdict(p)})")
    return p


def required_files(argument: str, options: dict) -> list[str]:
    parse(argument)  # a bad spec fails before anything runs
    return []


def load(argument: str, root: Path | None, options: dict) -> GraphSource:
    p = parse(argument)
    labels = _nodes(p).labels
    return GraphSource(
        name="synthetic",
        num_nodes=p.nodes,
        edge_chunks=lambda: edge_chunks(p),
        features=features(p, labels),
        labels=labels.astype(np.int64),
        num_classes=p.classes,
        splits=[split(p)],
        split_definition=(
            "random {:.0%}/{:.0%}/{:.0%} train/val/test split of all nodes (seeded)".format(*SPLIT_FRACTIONS)
        ),
        undirected=True,
        notes={
            "generator": "degree-corrected stochastic block model",
            "params": asdict(p),
            "undirected_edges_drawn": p.num_edges,
            "degree_exponent": DEGREE_EXPONENT,
            "feature_signal": FEATURE_SIGNAL,
            "edges_per_chunk": EDGES_PER_CHUNK,
        },
    )


def _seed(p: Params, *key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(p.seed, spawn_key=key))


@dataclass(frozen=True)
class _Tables:
    """Per-node tables the edge sampler reads; rebuilt from the parameters in each
    process (cached), so a chunk task is a few bytes."""

    labels: np.ndarray  # class of each node
    by_class: np.ndarray  # node ids grouped by class
    cum: np.ndarray  # cumulative theta along by_class
    bounds: np.ndarray  # (C, 2): each class's [start, end) range of cum values
    guide: np.ndarray  # guide[k]: first position with cum > k / scale
    scale: float


@lru_cache(maxsize=2)
def _nodes(p: Params) -> _Tables:
    rng = _seed(p, _NODES)
    labels = (rng.permutation(p.nodes) % p.classes).astype(np.int32)
    theta = (1.0 - rng.random(p.nodes)) ** (-1.0 / (DEGREE_EXPONENT - 1.0))
    np.minimum(theta, math.sqrt(p.nodes), out=theta)
    by_class = np.argsort(labels, kind="stable").astype(np.int32)
    cum = np.cumsum(theta[by_class])
    ends = np.cumsum(np.bincount(labels, minlength=p.classes))
    hi = cum[ends - 1]
    lo = np.concatenate([[0.0], hi[:-1]])
    # 2 guide entries per node and theta >= 1: a guide slot spans fewer than ~2 nodes on average
    slots = 2 * p.nodes
    scale = slots / cum[-1]
    guide = np.searchsorted(cum, np.arange(slots + 1) / scale, side="right")
    return _Tables(labels, by_class, cum, np.stack([lo, hi], axis=1), guide, scale)


def _position(t: _Tables, v: np.ndarray) -> np.ndarray:
    """``searchsorted(cum, v, side="right")``, clipped to the last node, in a few vector passes.

    A plain searchsorted does ~20 cache-missing probes per value; the guide table lands
    on or just before the answer, and the loop walks the few remaining steps.
    """
    pos = t.guide[np.minimum((v * t.scale).astype(np.int64), len(t.guide) - 1)]
    last = len(t.cum) - 1
    np.minimum(pos, last, out=pos)
    todo = np.flatnonzero((pos < last) & (t.cum[pos] <= v))
    while todo.size:
        pos[todo] += 1
        at = pos[todo]
        todo = todo[(at < last) & (t.cum[at] <= v[todo])]
    return pos


def _draw(t: _Tables, lo, hi, u: np.ndarray) -> np.ndarray:
    """Positions in ``by_class`` drawn with probability proportional to theta inside [lo, hi)."""
    return _position(t, lo + u * (hi - lo))


def edge_chunk(p: Params, index: int, chunk_edges: int = EDGES_PER_CHUNK) -> tuple[np.ndarray, np.ndarray]:
    """Undirected edges ``[index * chunk_edges, ...)`` as (src, dst) int32 arrays."""
    t = _nodes(p)
    count = min(chunk_edges, p.num_edges - index * chunk_edges)
    rng = _seed(p, _EDGES, index)
    a = _draw(t, 0.0, t.cum[-1], rng.random(count))
    cls = t.labels[t.by_class[a]]
    other = rng.random(count) >= p.homophily
    # a different class, uniform among the other C - 1
    target = np.where(other, (cls + rng.integers(1, p.classes, size=count, dtype=np.int32)) % p.classes, cls)
    b = _draw(t, t.bounds[target, 0], t.bounds[target, 1], rng.random(count))
    return t.by_class[a], t.by_class[b]


def edge_chunks(
    p: Params, scheduler: str | None = None, workers: int = WORKERS, chunk_edges: int = EDGES_PER_CHUNK
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The edge chunks in order, generated ahead of the consumer on a Dask cluster.

    ``scheduler``: "processes" or "threads" (a distributed LocalCluster either way) or
    "sync" (in this thread; also used when there is a single chunk, where a cluster
    would only add its start-up time). The output is the same for every choice.
    """
    scheduler = scheduler or SCHEDULER
    n_chunks = math.ceil(p.num_edges / chunk_edges)
    if scheduler == "sync" or n_chunks == 1:
        for i in range(n_chunks):
            yield edge_chunk(p, i, chunk_edges)
        return
    if scheduler not in ("threads", "processes"):
        raise ValueError(f"unknown scheduler {scheduler!r}")
    from distributed import Client, LocalCluster

    processes = scheduler == "processes"
    # worker processes talk over TCP on loopback only; threads use in-process comms
    network = {"host": "127.0.0.1"} if processes else {}
    with LocalCluster(
        n_workers=workers if processes else 1,
        threads_per_worker=1 if processes else workers,
        processes=processes,
        # scheduler and workers serve HTTP routes even without a dashboard, on all
        # interfaces when in-process: keep them on loopback and free ports
        dashboard_address=None,
        scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
        worker_dashboard_address="127.0.0.1:0",
        **network,
    ) as cluster, Client(cluster) as client:
        window = 2 * workers  # chunks in flight: bounds memory, keeps every worker busy
        futures = []
        for i in range(n_chunks):
            futures.append(client.submit(edge_chunk, p, i, chunk_edges, pure=False))
            if len(futures) > window:
                yield futures.pop(0).result()
        for future in futures:
            yield future.result()


def features(p: Params, labels: np.ndarray) -> np.ndarray:
    """(N, F) float32: the class mean plus unit Gaussian noise, drawn block by block."""
    means = _seed(p, _FEATURES).standard_normal((p.classes, p.features), dtype=np.float32)
    means *= FEATURE_SIGNAL / math.sqrt(p.features)
    x = np.empty((p.nodes, p.features), dtype=np.float32)
    for block, start in enumerate(range(0, p.nodes, NODES_PER_BLOCK)):
        stop = min(p.nodes, start + NODES_PER_BLOCK)
        _seed(p, _FEATURES, block + 1).standard_normal(out=x[start:stop], dtype=np.float32)
        x[start:stop] += means[labels[start:stop]]
    return x


def split(p: Params) -> np.ndarray:
    order = _seed(p, _SPLIT).permutation(p.nodes)
    n_train = int(round(SPLIT_FRACTIONS[0] * p.nodes))
    n_val = int(round(SPLIT_FRACTIONS[1] * p.nodes))
    codes = np.full(p.nodes, SPLIT_TEST, dtype=np.int8)
    codes[order[:n_train]] = SPLIT_TRAIN
    codes[order[n_train : n_train + n_val]] = SPLIT_VAL
    return codes

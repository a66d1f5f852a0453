"""Ingested graphs shared by the partition tests (ingested once per session)."""

from __future__ import annotations

import numpy as np
import pytest

from stages.contract import Stage, run_stage
from stages.ingest import ingest
from stages.ingest.dataset import IngestedGraph
from stages.ingest.schema import GraphSource
from stages.ingest.writer import CleanOptions, write_dataset
from stages.store import ArtifactStore
from tests.stages.partition.checks import direct_normalized_adjacency


@pytest.fixture(scope="session")
def part_store(tmp_path_factory) -> ArtifactStore:
    return ArtifactStore.open(str(tmp_path_factory.mktemp("partition-store")))


def planted_graph(n: int = 3000, communities: int = 6, out_degree: int = 8, seed: int = 7) -> GraphSource:
    """A directed planted-partition graph: 85% of edges stay in a community.

    Communities are random (not id ranges), a tenth of the vertices have no out-edges and
    a few have no edges at all, and there are two splits.
    """
    rng = np.random.default_rng(seed)
    community = rng.integers(0, communities, n)
    members = [np.flatnonzero(community == c) for c in range(communities)]
    sources = rng.permutation(n)[: int(n * 0.9)]
    src = np.repeat(sources, out_degree)
    inside = rng.random(len(src)) < 0.85
    dst = rng.integers(0, n, len(src))
    for c in range(communities):
        pick = inside & (community[src] == c)
        dst[pick] = rng.choice(members[c], int(pick.sum()))
    sinks = np.setdiff1d(np.arange(n), sources)
    isolated = rng.choice(sinks, min(5, len(sinks) // 2), replace=False)
    keep = ~np.isin(dst, isolated)
    src, dst = src[keep], dst[keep]
    splits = [rng.integers(0, 4, n).astype(np.int8) for _ in range(2)]
    return GraphSource(
        name="planted",
        num_nodes=n,
        edge_chunks=lambda: iter([(src[:7000], dst[:7000]), (src[7000:], dst[7000:])]),
        features=rng.standard_normal((n, 8)).astype(np.float32),
        labels=community.astype(np.int64),
        num_classes=communities,
        splits=splits,
        split_definition="random, two splits",
        undirected=False,
    )


def ingest_source(source: GraphSource, store: ArtifactStore):
    """An ingest artifact written by the real ingest writer from an in-memory source."""

    def run(ctx):
        meta = write_dataset(source, ctx.out, CleanOptions())
        return {"num_nodes": meta["num_nodes"], "num_edges": meta["num_edges"], "directed": meta["directed"]}

    stage = Stage(name="ingest", version=f"test-{source.name}", package="stages.ingest", run=run)
    return run_stage(stage, {"source": source.name, "n": source.num_nodes}, store=store)


class Dataset:
    def __init__(self, artifact):
        self.artifact = artifact
        self.graph = IngestedGraph(artifact.path())
        self.direct = direct_normalized_adjacency(self.graph)


@pytest.fixture(scope="session")
def cora(datasets, part_store) -> Dataset:
    return Dataset(ingest("planetoid:cora", str(datasets / "planetoid"), store=part_store))


@pytest.fixture(scope="session")
def tolokers(datasets, part_store) -> Dataset:
    return Dataset(ingest(f"npz:{datasets / 'heterophilous' / 'tolokers.npz'}", store=part_store))


@pytest.fixture(scope="session")
def synthetic(part_store) -> Dataset:
    """The synthetic source's degree-corrected block model (undirected, power-law degrees)."""
    spec = "synthetic:nodes=4000,avg_degree=10,features=8,classes=4,homophily=0.8,seed=1"
    return Dataset(ingest(spec, store=part_store))


@pytest.fixture(scope="session")
def planted(part_store) -> Dataset:
    """A directed graph: in-edges and out-edges of a part differ."""
    return Dataset(ingest_source(planted_graph(), part_store))

"""The synthetic source: parameters, determinism across schedulers, the block model's
statistics, learnability, and the end-to-end ingest of the built-in default kind."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from stages.errors import DorylusError
from stages.ingest import ingest
from stages.ingest.dataset import IngestedGraph
from stages.ingest.schema import SPLIT_TEST, SPLIT_TRAIN, SPLIT_VAL
from stages.ingest.sources import synthetic


def _listening() -> set[tuple[str, int]]:
    """(address, port) this process and its children listen on."""
    import psutil

    me = psutil.Process()
    return {
        (c.laddr.ip, c.laddr.port)
        for proc in [me, *me.children(recursive=True)]
        for c in proc.net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN
    }


def _edges(p, **kwargs):
    src, dst = zip(*synthetic.edge_chunks(p, **kwargs))
    return np.concatenate(src), np.concatenate(dst)


def test_defaults_and_parsing():
    assert synthetic.parse("") == synthetic.Params()
    p = synthetic.parse("nodes=500, classes=5,homophily=0.25,avg_degree=3.5,seed=7,features=3")
    assert (p.nodes, p.classes, p.homophily, p.avg_degree, p.seed, p.features) == (500, 5, 0.25, 3.5, 7, 3)
    assert synthetic.parse("nodes=1e3").nodes == 1000
    assert p.num_edges == round(500 * 3.5 / 2)


@pytest.mark.parametrize("argument, message", [
    ("nodes=10,colour=3", "colour"),
    ("nodes", "key=value"),
    ("nodes=ten", "not an integer"),
    ("nodes=10.5", "not an integer"),
    ("homophily=1.5", "homophily must be between 0 and 1"),
    ("homophily=high", "not a number"),
    ("nodes=4,classes=5", "classes cannot exceed nodes"),
    ("classes=1", "classes must be at least 2"),
    ("avg_degree=0", "avg_degree must be a positive"),
    ("avg_degree=nan", "avg_degree must be a positive"),
    ("nodes=10,avg_degree=10", "avg_degree cannot exceed"),
    ("features=0", "features must be at least 1"),
    ("seed=-1", "seed must be"),
    ("seed=1,seed=2", "given twice"),
])
def test_bad_parameters(argument, message, store, assert_nothing_written):
    with pytest.raises(DorylusError, match=message):
        ingest(f"synthetic:{argument}", store=store)
    assert_nothing_written(store)


def test_same_graph_for_every_scheduler_and_seeded_by_chunk():
    p = synthetic.parse("nodes=3000,avg_degree=10,classes=4,seed=3")
    chunk = 1000  # 15 chunks: every scheduler has work to share
    sync = _edges(p, scheduler="sync", chunk_edges=chunk)
    assert len(sync[0]) == p.num_edges == 15000
    for scheduler in ("threads", "processes"):
        before = _listening()
        stream = synthetic.edge_chunks(p, scheduler=scheduler, workers=2, chunk_edges=chunk)
        chunks = [next(stream)]
        opened = _listening() - before  # the cluster is up: it listens on loopback only
        assert opened and {ip for ip, _ in opened} == {"127.0.0.1"}
        chunks += list(stream)
        np.testing.assert_array_equal(sync[0], np.concatenate([c[0] for c in chunks]))
        np.testing.assert_array_equal(sync[1], np.concatenate([c[1] for c in chunks]))
    # a chunk is a function of (seed, index) alone
    src5, dst5 = synthetic.edge_chunk(p, 5, chunk)
    np.testing.assert_array_equal(src5, sync[0][5000:6000])
    np.testing.assert_array_equal(dst5, sync[1][5000:6000])
    reseeded = _edges(synthetic.parse("nodes=3000,avg_degree=10,classes=4,seed=4"), scheduler="sync", chunk_edges=chunk)
    assert not np.array_equal(sync[0], reseeded[0])


def test_guided_search_equals_searchsorted():
    p = synthetic.parse("nodes=20000,classes=3,seed=1")
    t = synthetic._nodes(p)
    v = np.random.default_rng(0).random(200_000) * t.cum[-1]
    v[:4] = [0.0, t.cum[-1], t.cum[10], np.nextafter(t.cum[-1], 0)]  # the edges of the range
    expected = np.minimum(np.searchsorted(t.cum, v, side="right"), p.nodes - 1)
    np.testing.assert_array_equal(synthetic._position(t, v), expected)


def test_block_model_statistics():
    p = synthetic.parse("nodes=20000,avg_degree=20,classes=5,homophily=0.7,seed=0")
    src, dst = _edges(p, scheduler="sync")
    labels = synthetic._nodes(p).labels
    same = labels[src] == labels[dst]
    assert abs(same.mean() - 0.7) < 0.01  # 200,000 edges: the standard error is 0.001
    np.testing.assert_array_equal(np.bincount(labels), [4000] * 5)
    # cross-class edges land uniformly on the other classes
    cross = (labels[dst] - labels[src])[~same] % 5
    shares = np.bincount(cross, minlength=5)[1:] / (~same).sum()
    assert np.abs(shares - 0.25).max() < 0.01
    degree = np.bincount(np.concatenate([src, dst]), minlength=p.nodes)
    assert degree.mean() == pytest.approx(20)
    assert degree.max() > 10 * degree.mean()  # power-law hubs, unlike an Erdos-Renyi graph
    assert np.median(degree) < degree.mean()


@pytest.mark.parametrize("homophily", [0.0, 1.0])
def test_homophily_extremes_are_exact(homophily):
    p = synthetic.parse(f"nodes=2000,avg_degree=6,classes=3,homophily={homophily}")
    src, dst = _edges(p, scheduler="sync")
    labels = synthetic._nodes(p).labels
    assert (labels[src] == labels[dst]).mean() == homophily


def test_labels_learnable_from_features_and_structure():
    """Nearest class mean (fit on the train split): the features alone beat chance, and
    averaging over neighbours as a GCN layer does raises accuracy a lot more."""
    p = synthetic.parse("nodes=8000,avg_degree=16,features=32,classes=8,homophily=0.8,seed=2")
    src, dst = _edges(p, scheduler="sync")
    source = synthetic.load(f"nodes=8000,avg_degree=16,features=32,classes=8,homophily=0.8,seed=2", None, {})
    x, y, split = source.features, source.labels, source.splits[0]
    a = sp.coo_matrix((np.ones(len(src)), (src, dst)), shape=(p.nodes, p.nodes)).tocsr()
    a = a + a.T + sp.eye(p.nodes)
    d = sp.diags(1 / np.sqrt(np.asarray(a.sum(1)).ravel()))
    a_hat = d @ a @ d
    train, test = split == SPLIT_TRAIN, split == SPLIT_TEST

    def accuracy(z):
        means = np.stack([z[train & (y == c)].mean(0) for c in range(p.classes)])
        predicted = ((z[:, None, :] - means[None]) ** 2).sum(-1).argmin(1)
        return (predicted == y)[test].mean()

    raw, one_hop, two_hop = accuracy(x), accuracy(a_hat @ x), accuracy(a_hat @ (a_hat @ x))
    assert 0.25 < raw < 0.6  # chance is 0.125
    assert one_hop > raw + 0.2
    assert two_hop > one_hop


def test_ingest_end_to_end(store):
    spec = "synthetic:nodes=3000,avg_degree=8,features=12,classes=4,homophily=0.9,seed=5"
    artifact = ingest(spec, store=store)
    g = IngestedGraph(artifact.path())
    assert (g.num_nodes, g.feature_dim, g.num_classes) == (3000, 12, 4)
    assert g.meta["directed"] is False and g.meta["name"] == "synthetic"
    src, dst = g.edges()
    # both directions stored, no self loops, no duplicates; about avg_degree per node
    key = src.astype(np.int64) * 3000 + dst
    np.testing.assert_array_equal(np.sort(key), np.unique(dst.astype(np.int64) * 3000 + src))
    assert (src != dst).all() and len(np.unique(key)) == len(key)
    assert 0.95 * 3000 * 8 < g.num_edges <= 3000 * 8
    p = synthetic.parse(spec.split(":", 1)[1])
    y = synthetic._nodes(p).labels
    np.testing.assert_array_equal(g.labels(), y)
    np.testing.assert_array_equal(g.features(), synthetic.features(p, y))
    counts = {c: int((g.split() == c).sum()) for c in (SPLIT_TRAIN, SPLIT_VAL, SPLIT_TEST)}
    assert counts == {SPLIT_TRAIN: 1800, SPLIT_VAL: 600, SPLIT_TEST: 600}
    assert "60%/20%/20%" in g.meta["split"]["definition"]
    assert g.meta["notes"]["params"]["homophily"] == 0.9
    again = ingest(spec, store=store)
    assert again.cached and again.key == artifact.key
    assert ingest(spec.replace("seed=5", "seed=6"), store=store).key != artifact.key

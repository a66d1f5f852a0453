"""The MUSAE source on the real Facebook Page-Page files."""

from __future__ import annotations

import collections
import csv
import json
import shutil

import numpy as np
import pytest

from stages.errors import DorylusError
from stages.ingest import ingest

FILES = ("facebook_edges.csv", "facebook.json", "facebook_target.csv")


def test_facebook_counts(ingested, datasets):
    g = ingested("musae:musae-facebook")
    # 170,823 undirected edges stored in both directions; the 179 self loops dropped
    assert (g.num_nodes, g.num_edges, g.feature_dim, g.num_classes) == (22470, 2 * 170823, 4714, 4)
    assert g.meta["self_loops"] == {"in_source": 179, "policy": "drop"}
    assert g.meta["edges_in_source"] == 171002
    assert g.meta["split"]["definition"] == "none in source"
    assert (g.split() == 0).all()


def test_facebook_labels_and_features_match_the_files(ingested, datasets):
    g = ingested("musae:musae-facebook")
    folder = datasets / "musae-facebook"
    with open(folder / "facebook_target.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    classes = g.meta["notes"]["classes"]
    assert classes == ["company", "government", "politician", "tvshow"]
    y = g.labels()
    assert collections.Counter(classes[c] for c in y) == collections.Counter(r["page_type"] for r in rows)
    for r in rows[:: len(rows) // 50]:
        assert classes[y[int(r["id"])]] == r["page_type"]

    active = json.loads((folder / "facebook.json").read_text())
    x = g.features()
    assert set(np.unique(x)) == {0.0, 1.0}
    np.testing.assert_array_equal(x.sum(axis=1), [len(set(active[str(i)])) for i in range(g.num_nodes)])
    for node in ("0", "554", "22469"):
        assert np.flatnonzero(x[int(node)]).tolist() == sorted(set(active[node]))


def _copy(datasets, tmp_path):
    folder = tmp_path / "fb"
    shutil.copytree(datasets / "musae-facebook", folder)
    for f in folder.iterdir():
        f.chmod(0o644)  # the shared copies are read-only
    return folder


@pytest.mark.parametrize("name, keep, match", [
    ("facebook.json", 0.5, "not valid JSON"),
    ("facebook_edges.csv", 0.5, "facebook_edges.csv"),
    ("facebook_target.csv", 0.5, "facebook_target.csv"),
])
def test_truncated_files(tmp_path, datasets, store, assert_nothing_written, name, keep, match):
    folder = _copy(datasets, tmp_path)
    data = (folder / name).read_bytes()
    cut = int(len(data) * keep)
    # end mid-row: a truncated CSV must not pass as a shorter, valid one
    cut = data.rindex(b",", 0, cut) + 1 if name.endswith(".csv") else cut
    (folder / name).write_bytes(data[:cut])
    with pytest.raises(DorylusError, match=match):
        ingest("musae:fb", str(tmp_path), store=store)
    assert_nothing_written(store)


def test_bad_header_and_ids(tmp_path, store, assert_nothing_written):
    folder = tmp_path / "fb"
    folder.mkdir()
    (folder / "facebook_target.csv").write_text("id,facebook_id,page_name,page_type\n0,1,a,tvshow\n1,2,b,company\n2,3,c,tvshow\n")
    (folder / "facebook.json").write_text(json.dumps({"0": [0, 3], "1": [1], "2": []}))

    (folder / "facebook_edges.csv").write_text("source,target\n0,1\n")
    with pytest.raises(DorylusError, match="columns id_1, id_2"):
        ingest("musae:fb", str(tmp_path), store=store)

    (folder / "facebook_edges.csv").write_text("id_1,id_2\n0,1\n1,3\n")
    with pytest.raises(DorylusError, match="edge endpoint 3 is out of range"):
        ingest("musae:fb", str(tmp_path), store=store)

    (folder / "facebook_edges.csv").write_text("id_1,id_2\n0,1\n1,2\n2,2\n")
    (folder / "facebook.json").write_text(json.dumps({"0": [0], "7": [1]}))
    with pytest.raises(DorylusError, match="node id 7 is outside 0..2"):
        ingest("musae:fb", str(tmp_path), store=store)
    assert_nothing_written(store)

    # the small valid graph: classes in sorted order, a node with no feature ids
    (folder / "facebook.json").write_text(json.dumps({"0": [0, 3], "1": [1], "2": []}))
    art = ingest("musae:fb", str(tmp_path), store=store)
    from stages.ingest.dataset import IngestedGraph

    g = IngestedGraph(art.path())
    assert g.labels().tolist() == [1, 0, 1]
    assert g.meta["notes"]["classes"] == ["company", "tvshow"]
    assert g.meta["notes"]["nodes_without_features"] == 1
    assert g.features().tolist() == [[1, 0, 0, 1], [0, 1, 0, 0], [0, 0, 0, 0]]
    assert g.num_edges == 4 and g.meta["self_loops"]["in_source"] == 1

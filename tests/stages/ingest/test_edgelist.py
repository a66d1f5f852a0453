"""The edgelist source: SNAP text with comments, feature and label files, node counts,
block streaming, compressed files and malformed input."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from stages.errors import DorylusError
from stages.ingest import ingest
from stages.ingest.dataset import IngestedGraph
from stages.ingest.sources import edgelist

SNAP = """# Directed graph (each unordered pair of nodes is saved once): tiny.txt
# FromNodeId\tToNodeId
0\t1
0\t2
% a comment in the Matrix Market style

1\t2
3\t0
  # an indented comment
4\t3
"""


def _ingest(tmp_path, store, text=SNAP, **kwargs):
    path = tmp_path / "tiny.txt"
    path.write_text(text)
    return IngestedGraph(ingest(f"edgelist:{path}", store=store, **kwargs).path())


def _pairs(g):
    src, dst = g.edges()
    return sorted(zip(src.tolist(), dst.tolist()))


def test_snap_text_directed_by_default(tmp_path, store):
    g = _ingest(tmp_path, store)
    assert g.num_nodes == 5 and g.meta["directed"] is True and g.meta["name"] == "tiny"
    assert _pairs(g) == [(0, 1), (0, 2), (1, 2), (3, 0), (4, 3)]
    assert g.num_classes == 0 and g.feature_dim == 1


def test_undirected_adds_reverse_edges(tmp_path, store):
    g = _ingest(tmp_path, store, undirected=True)
    assert g.meta["directed"] is False
    assert _pairs(g) == sorted([(0, 1), (0, 2), (1, 2), (3, 0), (4, 3), (1, 0), (2, 0), (2, 1), (0, 3), (3, 4)])


def test_features_and_labels_any_number_form(tmp_path, store):
    (tmp_path / "x.txt").write_text("-0.3, .5\n1e-3 2\n+4,-.25\n0 0\n7.0,   8\n6 6\n-1 1\n")
    (tmp_path / "y.txt").write_text("0\n1\n2\n-1\n1\n0\n2\n")
    g = _ingest(tmp_path, store, options={"features": str(tmp_path / "x.txt"), "labels": str(tmp_path / "y.txt")})
    assert g.num_nodes == 7  # more rows than the largest id + 1: isolated nodes 5 and 6
    np.testing.assert_allclose(
        g.features(), [[-0.3, 0.5], [1e-3, 2], [4, -0.25], [0, 0], [7, 8], [6, 6], [-1, 1]], rtol=1e-6
    )
    np.testing.assert_array_equal(g.labels(), [0, 1, 2, -1, 1, 0, 2])
    assert g.num_classes == 3
    assert set(g.meta["source_files"]) == {str(tmp_path / f) for f in ("tiny.txt", "x.txt", "y.txt")}


def test_relative_files_under_root(tmp_path, store):
    (tmp_path / "tiny.txt").write_text(SNAP)
    (tmp_path / "y.txt").write_text("0\n1\n0\n1\n0\n")
    g = IngestedGraph(ingest("edgelist:tiny.txt", str(tmp_path), store=store, options={"labels": "y.txt"}).path())
    assert g.num_nodes == 5 and g.labels().tolist() == [0, 1, 0, 1, 0]


@pytest.mark.parametrize("features, labels, message", [
    ("1\n2\n3\n4\n5\n", "0\n1\n0\n", "5 rows but the label file has 3"),
    ("1\n2\n3\n", None, "names node 4 but the feature file has only 3 rows"),
    (None, "0\n1\n", "names node 4 but the label file has only 2 rows"),
    ("1 2\n3\n4 5\n6 7\n8 9\n", None, "line 2: expected 2 numbers per feature line, found 1"),
    (None, "0\n1\n1.5\n0\n0\n", "line 3: '1.5' is not an integer"),
    ("1 2\n3 4\n5 nan\n1 1\n1 1\n", None, "feature of node 2, column 1 is nan"),
])
def test_feature_and_label_mistakes(tmp_path, store, assert_nothing_written, features, labels, message):
    options = {}
    for name, text in (("features", features), ("labels", labels)):
        if text is not None:
            (tmp_path / f"{name}.txt").write_text(text)
            options[name] = str(tmp_path / f"{name}.txt")
    with pytest.raises(DorylusError, match=message):
        _ingest(tmp_path, store, options=options)
    assert_nothing_written(store)


@pytest.mark.parametrize("bad_line, message", [
    ("5\t6\t7", "line 6: expected 2 integers per edge line, found 3"),
    ("5\tx", "line 6: '5\\\\tx' is not 2 integers"),
    ("5", "line 6: expected 2 integers per edge line, found 1"),
    ("-1\t2", "line 6: negative node id"),
    ("1.5\t2", "line 6: '1.5\\\\t2' is not 2 integers"),
    ("nan\t2", "line 6: 'nan\\\\t2' is not 2 integers"),
    ("99999999999999999999 1", "does not fit in int64"),
])
def test_malformed_line_is_named(tmp_path, store, assert_nothing_written, bad_line, message):
    lines = SNAP.splitlines()
    lines.insert(5, bad_line)  # after "% a comment": line 6 of the file
    with pytest.raises(DorylusError, match=message):
        _ingest(tmp_path, store, text="\n".join(lines) + "\n")
    assert_nothing_written(store)


def test_irregular_spacing_crlf_and_no_final_newline(tmp_path, store):
    text = "0 1\r\n  1   2 \r\n2,3\r\n\t3\t\t4\r\n4 0.0"  # an integral float is an id too
    assert _pairs(_ingest(tmp_path, store, text=text)) == [(0, 1), (1, 2), (2, 3), (3, 4), (4, 0)]


def test_only_comments_is_an_error(tmp_path, store):
    with pytest.raises(DorylusError, match="no edges found"):
        _ingest(tmp_path, store, text="# nothing here\n\n% still nothing\n")


def test_missing_file(tmp_path, store):
    with pytest.raises(DorylusError, match="does not exist"):
        ingest(f"edgelist:{tmp_path / 'absent.txt'}", store=store)


def test_streams_in_blocks_with_line_numbers(tmp_path, monkeypatch):
    """Tiny blocks: lines split across block ends, comments between, a bad line found
    in a late block still gets its true line number."""
    rng = np.random.default_rng(0)
    edges = rng.integers(0, 10_000, size=(3000, 2))
    lines = ["# header"]
    for i, (a, b) in enumerate(edges.tolist()):
        lines.append(f"{a}\t{b}")
        if i % 700 == 0:
            lines.append("% interleaved comment")
    path = tmp_path / "blocks.txt"
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(edgelist, "BLOCK_BYTES", 997)
    src, dst = map(np.concatenate, zip(*edgelist._edge_chunks(path)))
    np.testing.assert_array_equal(np.stack([src, dst], 1), edges)
    assert len(list(edgelist._edge_chunks(path))) > 20

    lines[2500] = "12 oops"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DorylusError, match="line 2501: '12 oops'"):
        list(edgelist._edge_chunks(path))


def test_gzip_edge_list(tmp_path, store):
    with gzip.open(tmp_path / "tiny.txt.gz", "wt") as f:
        f.write(SNAP)
    g = IngestedGraph(ingest(f"edgelist:{tmp_path / 'tiny.txt.gz'}", store=store).path())
    assert g.meta["name"] == "tiny" and _pairs(g) == [(0, 1), (0, 2), (1, 2), (3, 0), (4, 3)]


def test_truncated_gzip(tmp_path, store):
    data = gzip.compress(("\n".join(f"{i} {i + 1}" for i in range(20000)) + "\n").encode())
    (tmp_path / "cut.txt.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(DorylusError, match="truncated or corrupt"):
        ingest(f"edgelist:{tmp_path / 'cut.txt.gz'}", store=store)

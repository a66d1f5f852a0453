"""The Facebook100 ``.mat`` source: the real Cornell5 file and small hand-made ones."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from stages.errors import DorylusError
from stages.ingest import ingest
from stages.ingest.dataset import IngestedGraph


def test_cornell5(ingested):
    g = ingested("mat:facebook100/Cornell5.mat")
    assert (g.num_nodes, g.num_edges, g.num_classes) == (18660, 2 * 790777, 2)
    y = g.labels()
    # gender 0 (missing) for 1,838 students; 1 and 2 become classes 0 and 1
    assert np.bincount(y + 1).tolist() == [1838, 8135, 8687]
    layout = g.meta["notes"]["feature_layout"]
    assert [c["column"] for c in layout] == ["status", "major", "second_major", "dorm", "year", "high_school"]
    # distinct values per column, 0 (missing) counted as a value of its own
    assert [c["values"] for c in layout] == [7, 105, 105, 134, 45, 4339]
    assert g.feature_dim == sum(c["values"] for c in layout) == 4735
    x = g.features()
    assert (x.sum(axis=1) == 6).all()  # exactly one entry per column
    assert g.meta["split"]["definition"] == "none in source" and (g.split() == 0).all()


def _save(path, a, info):
    scipy.io.savemat(path, {"A": a, "local_info": np.asarray(info, dtype=np.uint16)})


def test_one_hot_layout_on_a_small_file(tmp_path, store):
    a = sp.csc_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=float))
    info = [
        # status gender major 2nd dorm year school
        [1, 2, 5, 0, 9, 2008, 7],
        [0, 0, 5, 3, 9, 2009, 7],
        [1, 1, 6, 0, 0, 2008, 8],
    ]
    _save(tmp_path / "Tiny1.mat", a, info)
    g = IngestedGraph(ingest("mat:Tiny1.mat", str(tmp_path), store=store).path())
    assert g.labels().tolist() == [1, -1, 0]
    expected = [
        # status 0,1 | major 5,6 | 2nd 0,3 | dorm 0,9 | year 2008,2009 | school 7,8
        [0, 1, 1, 0, 1, 0, 0, 1, 1, 0, 1, 0],
        [1, 0, 1, 0, 0, 1, 0, 1, 0, 1, 1, 0],
        [0, 1, 0, 1, 1, 0, 1, 0, 1, 0, 0, 1],
    ]
    assert g.features().tolist() == expected
    src, dst = g.edges()
    assert list(zip(src.tolist(), dst.tolist())) == [(0, 1), (1, 0), (1, 2), (2, 1)]
    assert g.meta["name"] == "Tiny1"


def test_truncated_copy(tmp_path, datasets, store, assert_nothing_written):
    data = (datasets / "facebook100" / "Cornell5.mat").read_bytes()
    (tmp_path / "Cornell5.mat").write_bytes(data[: len(data) // 3])
    with pytest.raises(DorylusError, match="truncated"):
        ingest("mat:Cornell5.mat", str(tmp_path), store=store)
    assert_nothing_written(store)


def test_bad_contents(tmp_path, store, assert_nothing_written):
    a = sp.csc_matrix(np.ones((2, 2)))
    scipy.io.savemat(tmp_path / "noinfo.mat", {"A": a})
    with pytest.raises(DorylusError, match="no variable 'local_info'"):
        ingest("mat:noinfo.mat", str(tmp_path), store=store)

    _save(tmp_path / "gender.mat", a, [[1, 3, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1]])
    with pytest.raises(DorylusError, match="gender column holds 3"):
        ingest("mat:gender.mat", str(tmp_path), store=store)

    _save(tmp_path / "shape.mat", a, [[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]])
    with pytest.raises(DorylusError, match="local_info has shape"):
        ingest("mat:shape.mat", str(tmp_path), store=store)

    scipy.io.savemat(tmp_path / "dense.mat", {"A": np.ones((2, 2)), "local_info": np.ones((2, 7), dtype=np.uint16)})
    with pytest.raises(DorylusError, match="square sparse"):
        ingest("mat:dense.mat", str(tmp_path), store=store)

    (tmp_path / "text.mat").write_text("not a MATLAB file\n")
    with pytest.raises(DorylusError, match="not a readable MATLAB file"):
        ingest("mat:text.mat", str(tmp_path), store=store)
    assert_nothing_written(store)

"""``planetoid:cora|citeseer|pubmed``: the raw Planetoid files (Yang et al., 2016).

The root folder holds ``ind.<name>.{x,y,tx,ty,allx,ally,graph,test.index}``. All but
``test.index`` are Python 2 pickles; they are read with ``PlanetoidUnpickler``, which
admits only the handful of numpy/scipy/collections classes these files are made of, so a
tampered file cannot run code.

The nodes and the standard split follow Kipf and Welling's loader (also PyG's):

- nodes ``0 .. len(allx)-1`` are the rows of ``allx``/``ally``; the test nodes follow.
  Row ``i`` of ``tx``/``ty`` belongs to node ``test.index[i]`` (the file's order).
- train = ``range(len(y))`` (the first 140 / 120 / 60 nodes), val = the next 500 nodes,
  test = the nodes of ``test.index`` (1,000).
- Citeseer's test ids leave gaps (15 isolated nodes have no ``tx`` row): like the
  reference loaders those nodes get all-zero features; unlike them (which give them class
  0 through ``argmax`` of a zero row) they get label -1 (unlabeled), and they are in no
  split. The count is recorded in the metadata notes.
- The graph is the undirected union of the adjacency lists; the writer drops self loops
  and duplicates unless asked to keep them.
"""

from __future__ import annotations

import collections
import pickle
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from stages.errors import DorylusError
from stages.hashing import sha256_file
from stages.ingest.schema import GraphSource, splits_from_masks

try:  # numpy >= 2
    from numpy._core.multiarray import _reconstruct
except ImportError:  # numpy 1.x
    from numpy.core.multiarray import _reconstruct

NAMES = ("cora", "citeseer", "pubmed")
PICKLES = ("x", "y", "tx", "ty", "allx", "ally", "graph")
NUM_VAL = 500
NEEDS_ROOT = True  # several files in one folder: the CLI's --root names it

# (module, name) as written in the pickle -> the object it may stand for. Python 2 names
# (__builtin__) and the pre-2.0 numpy / pre-1.8 scipy module paths appear in the published
# files; the newer paths are admitted so a re-pickled copy loads too.
_ALLOWED = {
    ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("scipy.sparse.csr", "csr_matrix"): sp.csr_matrix,
    ("scipy.sparse._csr", "csr_matrix"): sp.csr_matrix,
    ("scipy.sparse", "csr_matrix"): sp.csr_matrix,
    ("collections", "defaultdict"): collections.defaultdict,
    ("__builtin__", "list"): list,
    ("builtins", "list"): list,
}


class PlanetoidUnpickler(pickle.Unpickler):
    """An unpickler that resolves only the classes the Planetoid files are made of."""

    def find_class(self, module: str, name: str):
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise DorylusError(
                f"refusing to unpickle {module}.{name}: a Planetoid file holds only numpy arrays, "
                "scipy CSR matrices and a dict of lists; this file is not an original Planetoid file"
            ) from None


def required_files(argument: str, options: dict) -> list[str]:
    name = _name(argument)
    return [f"ind.{name}.{ext}" for ext in PICKLES] + [f"ind.{name}.test.index"]


def load(argument: str, root: Path | None, options: dict) -> GraphSource:
    name = _name(argument)
    folder = Path(root)  # never None: NEEDS_ROOT
    raw = {ext: _unpickle(folder / f"ind.{name}.{ext}") for ext in PICKLES}
    test_index = _test_index(folder / f"ind.{name}.test.index")

    x, tx, allx = (_csr(raw[k], folder / f"ind.{name}.{k}") for k in ("x", "tx", "allx"))
    y, ty, ally = (_one_hot(raw[k], folder / f"ind.{name}.{k}") for k in ("y", "ty", "ally"))
    graph = raw["graph"]
    if not isinstance(graph, dict):
        raise DorylusError(f"ind.{name}.graph holds a {type(graph).__name__}, expected a dict node -> neighbour list")
    _check_shapes(name, x, y, tx, ty, allx, ally, test_index)

    n_known = allx.shape[0]
    n = n_known + int(test_index.max()) - int(test_index.min()) + 1
    if test_index.min() < n_known:
        raise DorylusError(
            f"ind.{name}.test.index: test node {int(test_index.min())} is below {n_known}, the number of allx rows; "
            "test nodes must follow the allx nodes as in the published files"
        )

    features = np.zeros((n, allx.shape[1]), dtype=np.float32)
    features[:n_known] = allx.toarray()
    features[test_index] = tx.toarray()
    labels = np.full(n, -1, dtype=np.int64)
    labels[:n_known] = _classes(ally)
    labels[test_index] = _classes(ty)
    missing = n - n_known - len(test_index)

    train = np.zeros(n, dtype=bool)
    val = np.zeros(n, dtype=bool)
    test = np.zeros(n, dtype=bool)
    train[: y.shape[0]] = True
    val[y.shape[0] : y.shape[0] + NUM_VAL] = True
    test[test_index] = True
    split = splits_from_masks(train, val, test, f"planetoid {name}")

    src, dst = _adjacency(name, graph)
    return GraphSource(
        name=name,
        num_nodes=n,
        edge_chunks=lambda: iter([(src, dst)]),
        features=features,
        labels=labels,
        num_classes=y.shape[1],
        splits=[split],
        split_definition=(
            f"standard Planetoid split (Kipf and Welling): train = the {y.shape[0]} nodes of x, "
            f"val = the next {NUM_VAL} nodes, test = the {len(test_index)} nodes of test.index"
        ),
        undirected=True,
        files={f"ind.{name}.{ext}": sha256_file(folder / f"ind.{name}.{ext}") for ext in (*PICKLES, "test.index")},
        notes={
            "test_nodes_without_rows": missing,
            "test_nodes_without_rows_policy": "zero features, label -1 (unlabeled), in no split",
        },
    )


def _name(argument: str) -> str:
    name = argument.lower()
    if name not in NAMES:
        raise DorylusError(f"planetoid dataset {argument!r} is not known; write planetoid:NAME with NAME one of {', '.join(NAMES)}")
    return name


def _unpickle(path: Path):
    try:
        with open(path, "rb") as f:
            # latin1: the files were pickled by Python 2, whose numpy buffers are byte strings
            return PlanetoidUnpickler(f, encoding="latin1").load()
    except DorylusError:
        raise
    except FileNotFoundError:
        raise DorylusError(f"{path} does not exist; --root must be the folder holding the ind.* files") from None
    except Exception as exc:  # a damaged pickle raises almost anything (EOFError, UnpicklingError, ValueError, ...)
        raise DorylusError(f"{path} is not a readable Planetoid pickle ({type(exc).__name__}: {exc}); the file may be truncated") from None


def _test_index(path: Path) -> np.ndarray:
    try:
        values = [int(line) for line in path.read_text().split()]
    except ValueError as exc:
        raise DorylusError(f"{path}: expected one integer node id per line ({exc})") from None
    index = np.array(values, dtype=np.int64)
    if index.size == 0:
        raise DorylusError(f"{path} is empty; it must list the test node ids")
    if len(np.unique(index)) != len(index):
        raise DorylusError(f"{path} lists a node id more than once")
    return index


def _csr(obj, path: Path) -> sp.csr_matrix:
    if not isinstance(obj, sp.csr_matrix):
        raise DorylusError(f"{path} holds a {type(obj).__name__}, expected a scipy CSR feature matrix")
    try:
        # rebuilt from its parts: the unpickled object carries an old scipy's attributes
        m = sp.csr_matrix((obj.data, obj.indices, obj.indptr), shape=obj.shape)
        m.check_format(full_check=True)
    except Exception as exc:
        raise DorylusError(f"{path} holds a malformed sparse matrix ({exc})") from None
    return m


def _one_hot(obj, path: Path) -> np.ndarray:
    if not isinstance(obj, np.ndarray) or obj.ndim != 2:
        raise DorylusError(f"{path} holds a {type(obj).__name__}, expected a 2-d one-hot label array")
    return obj


def _classes(one_hot: np.ndarray) -> np.ndarray:
    """The class of each one-hot row; -1 for an all-zero row (no label)."""
    return np.where(one_hot.any(axis=1), one_hot.argmax(axis=1), -1)


def _check_shapes(name, x, y, tx, ty, allx, ally, test_index) -> None:
    pairs = (("x", x, "y", y), ("tx", tx, "ty", ty), ("allx", allx, "ally", ally))
    for a, ma, b, mb in pairs:
        if ma.shape[0] != mb.shape[0]:
            raise DorylusError(f"ind.{name}.{a} has {ma.shape[0]} rows but ind.{name}.{b} has {mb.shape[0]}; the files do not belong together")
    if len({x.shape[1], tx.shape[1], allx.shape[1]}) != 1:
        raise DorylusError(f"ind.{name}: x, tx and allx have different feature counts {x.shape[1]}, {tx.shape[1]}, {allx.shape[1]}")
    if len({y.shape[1], ty.shape[1], ally.shape[1]}) != 1:
        raise DorylusError(f"ind.{name}: y, ty and ally have different class counts {y.shape[1]}, {ty.shape[1]}, {ally.shape[1]}")
    if len(test_index) != tx.shape[0]:
        raise DorylusError(f"ind.{name}.test.index lists {len(test_index)} nodes but tx has {tx.shape[0]} rows")
    if y.shape[0] + NUM_VAL > allx.shape[0]:
        raise DorylusError(f"ind.{name}: allx has {allx.shape[0]} rows, too few for {y.shape[0]} train and {NUM_VAL} val nodes")


def _adjacency(name: str, graph: dict) -> tuple[np.ndarray, np.ndarray]:
    try:
        keys = np.fromiter(graph.keys(), dtype=np.int64, count=len(graph))
        lists = [np.asarray(graph[k], dtype=np.int64).reshape(-1) for k in graph]
    except (TypeError, ValueError) as exc:
        raise DorylusError(f"ind.{name}.graph: node ids must be integers ({exc})") from None
    lengths = np.array([len(v) for v in lists], dtype=np.int64)
    src = np.repeat(keys, lengths)
    dst = np.concatenate(lists) if lists else np.zeros(0, dtype=np.int64)
    return src, dst

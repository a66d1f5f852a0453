"""METIS through pymetis: the best edge cut, for graphs whose adjacency fits in memory.

METIS needs a symmetric adjacency without self loops, built here from the whole edge
list in one process (the one method that does so). The vertex weights are the vertices'
work (``deg_in + 1``), so the parts balance edges, not only vertices.
"""

from __future__ import annotations

import numpy as np

from stages.errors import DorylusError
from stages.ingest.dataset import IngestedGraph


def _pymetis():
    try:
        import pymetis
    except ImportError:
        raise DorylusError(
            "method 'metis' needs pymetis, which is not installed; install the extra with "
            "pip install 'dorylus-pipeline[metis]' (or pick --method fennel, which needs no extra)"
        ) from None
    return pymetis


def metis_owner(graph: IngestedGraph, work: np.ndarray, parts: int, seed: int) -> np.ndarray:
    pymetis = _pymetis()
    xadj, adjncy = symmetric_adjacency(graph, pymetis.zero_copy_dtype())
    result = pymetis.part_graph(
        parts,
        adjacency=pymetis.CSRAdjacency(xadj, adjncy),
        vweights=work.astype(pymetis.zero_copy_dtype()),
        options=pymetis.Options(seed=seed),
    )
    return np.asarray(result.vertex_part, dtype=np.int32)


def symmetric_adjacency(graph: IngestedGraph, dtype=np.int64) -> tuple[np.ndarray, np.ndarray]:
    """(xadj, adjncy) of the undirected simple graph underlying the edges."""
    n = graph.num_nodes
    src, dst = graph.edges()
    meta = graph.meta
    already_simple = (
        not meta.get("directed", True)
        and meta.get("dedupe", False)
        and meta.get("self_loops", {}).get("policy") == "drop"
    )
    if not already_simple:  # add reverse edges, drop loops and duplicates
        keep = src != dst
        src, dst = src[keep].astype(np.int64), dst[keep].astype(np.int64)
        keys = np.unique(np.concatenate([src * n + dst, dst * n + src]))
        del src, dst
        src, dst = np.divmod(keys, n)
        del keys
    # the ingest order (src, dst) is already CSR order
    xadj = np.zeros(n + 1, dtype=dtype)
    np.cumsum(np.bincount(src, minlength=n), out=xadj[1:])
    return xadj, dst.astype(dtype)

"""Reading a partition artifact: what a graph server loads (the format is in the package doc).

Everything is memory-mapped read-only, so a graph server touches only the pages it uses.
"""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from stages.errors import DorylusError

META = "META.json"
INT32_LIMIT = 2**31 - 1

# the arrays of one part folder, as attributes of ``Partition``
PART_ARRAYS = (
    "vertices",
    "in_indptr",
    "in_indices",
    "in_weights",
    "ghosts",
    "ghost_owner",
    "out_indptr",
    "out_indices",
    "out_weights",
    "out_ghosts",
    "out_ghost_owner",
    "features",
    "labels",
    "splits",
)


def index_dtype(count: int) -> np.dtype:
    """int32 for ids below ``count`` when they fit (half the bytes of the big arrays)."""
    return np.dtype(np.int32) if count <= INT32_LIMIT else np.dtype(np.int64)


def part_dir(folder: Path, i: int) -> Path:
    return Path(folder) / f"part_{i}"


class PartitionSet:
    """A partition artifact folder: ``META.json``, the global maps and ``part_<i>/``."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        meta_path = self.folder / META
        if not meta_path.exists():
            raise DorylusError(f"{self.folder} is not a partition artifact (no {META}); pass the partition stage's output")
        self.meta = json.loads(meta_path.read_text())

    @property
    def num_parts(self) -> int:
        return int(self.meta["num_parts"])

    def owner(self) -> np.ndarray:
        return np.load(self.folder / self.meta["owner_map"], mmap_mode="r")

    def local_index(self) -> np.ndarray:
        return np.load(self.folder / self.meta["local_index_map"], mmap_mode="r")

    def part(self, i: int) -> "Partition":
        if not 0 <= i < self.num_parts:
            raise DorylusError(f"partition {i} does not exist: this artifact has parts 0..{self.num_parts - 1}")
        return Partition(part_dir(self.folder, i), i, self.num_parts)

    def parts(self) -> list["Partition"]:
        return [self.part(i) for i in range(self.num_parts)]


class Partition:
    """One graph server's share of the graph; arrays load lazily and memory-mapped."""

    def __init__(self, folder: Path, index: int, num_parts: int):
        self.folder = Path(folder)
        self.index = index
        self.num_parts = num_parts

    def _load(self, name: str) -> np.ndarray:
        return np.load(self.folder / f"{name}.npy", mmap_mode="r")

    def __getattr__(self, name: str):
        if name in PART_ARRAYS:
            value = self._load(name)
            self.__dict__[name] = value  # cached: later reads skip __getattr__
            return value
        raise AttributeError(name)

    @cached_property
    def num_local(self) -> int:
        return int(self.vertices.shape[0])

    @cached_property
    def num_ghosts(self) -> int:
        return int(self.ghosts.shape[0])

    @cached_property
    def num_out_ghosts(self) -> int:
        return int(self.out_ghosts.shape[0])

    def _list(self, kind: str, j: int) -> np.ndarray:
        path = self.folder / f"{kind}_{j}.npy"
        if path.exists():
            return np.load(path, mmap_mode="r")
        return np.zeros(0, dtype=np.int32)  # absent file: nothing to exchange with j

    def send_fwd(self, j: int) -> np.ndarray:
        """Local ids whose forward activations go to peer ``j``, in ``j``'s ghost order."""
        return self._list("send_fwd", j)

    def recv_fwd(self, j: int) -> np.ndarray:
        """Positions in this part's ghosts that peer ``j`` fills, in the order ``j`` sends."""
        return self._list("recv_fwd", j)

    def send_bwd(self, j: int) -> np.ndarray:
        """Local ids whose backward gradient rows go to peer ``j``, in ``j``'s out-ghost order."""
        return self._list("send_bwd", j)

    def recv_bwd(self, j: int) -> np.ndarray:
        """Positions in this part's out-ghosts that peer ``j`` fills."""
        return self._list("recv_bwd", j)

    def peers(self) -> list[int]:
        """Parts this one exchanges rows with, in either pass and either direction."""
        return [
            j
            for j in range(self.num_parts)
            if j != self.index
            and any((self.folder / f"{kind}_{j}.npy").exists() for kind in ("send_fwd", "recv_fwd", "send_bwd", "recv_bwd"))
        ]


def to_scipy_in_adjacency(part: Partition) -> sp.csr_matrix:
    """The part's rows of Â as (n_i, n_i + g_i): columns are local vertices, then ghosts."""
    shape = (part.num_local, part.num_local + part.num_ghosts)
    return sp.csr_matrix((np.asarray(part.in_weights), np.asarray(part.in_indices), np.asarray(part.in_indptr)), shape=shape)


def to_scipy_out_adjacency(part: Partition) -> sp.csr_matrix:
    """The part's rows of Â^T as (n_i, n_i + h_i): columns are local vertices, then out-ghosts."""
    shape = (part.num_local, part.num_local + part.num_out_ghosts)
    return sp.csr_matrix((np.asarray(part.out_weights), np.asarray(part.out_indices), np.asarray(part.out_indptr)), shape=shape)

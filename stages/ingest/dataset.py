"""Reading an ingest artifact: what the partition and train stages build on."""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path
from typing import Iterator

import numpy as np
import pyarrow.parquet as pq

from stages.errors import DorylusError


class IngestedGraph:
    """A view of an ingest artifact folder; nothing is loaded until asked for."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        meta_path = self.folder / "metadata.json"
        if not meta_path.exists():
            raise DorylusError(f"{self.folder} is not an ingest artifact (no metadata.json)")
        self.meta = json.loads(meta_path.read_text())

    num_nodes = property(lambda self: int(self.meta["num_nodes"]))
    num_edges = property(lambda self: int(self.meta["num_edges"]))
    feature_dim = property(lambda self: int(self.meta["feature_dim"]))
    num_classes = property(lambda self: int(self.meta["num_classes"]))

    def edge_files(self) -> list[Path]:
        return [self.folder / part["file"] for part in self.meta["edge_parts"]]

    def iter_edges(self, batch_rows: int = 1 << 22) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(src, dst) batches in (src, dst) order, never the whole list at once."""
        for path in self.edge_files():
            for batch in pq.ParquetFile(path).iter_batches(batch_size=batch_rows):
                yield batch.column(0).to_numpy(), batch.column(1).to_numpy()

    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        table = pq.read_table(self.edge_files()[0].parent) if self.edge_files() else None
        return table.column("src").to_numpy(), table.column("dst").to_numpy()

    @cached_property
    def _nodes(self):
        return pq.read_table(self.folder / "nodes.parquet")

    def features(self) -> np.ndarray:
        """(num_nodes, feature_dim) float32."""
        col = self._nodes.column("features").combine_chunks()
        return col.values.to_numpy().reshape(len(col), self.feature_dim)

    def labels(self) -> np.ndarray:
        return self._nodes.column("label").to_numpy()

    def split(self, k: int = 0) -> np.ndarray:
        """Split codes (0 none, 1 train, 2 val, 3 test) of split ``k``."""
        name = "split" if k == 0 else f"split_{k}"
        if name not in self._nodes.column_names:
            raise DorylusError(f"split {k} does not exist: this dataset has {self.meta['split']['num_splits']} split(s)")
        return self._nodes.column(name).to_numpy()

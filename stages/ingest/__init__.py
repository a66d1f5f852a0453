"""The ingest stage: any supported graph source to one versioned Parquet dataset.

See ``stages.ingest.schema`` for the artifact layout and ``stages.ingest.sources`` for the
source kinds.
"""

from __future__ import annotations

from pathlib import Path

from stages.contract import Artifact, Stage, StageContext, run_stage
from stages.hashing import sha256_file
from stages.ingest import sources
from stages.ingest.download import local_root
from stages.ingest.writer import CleanOptions, write_dataset
from stages.store import ArtifactStore

VERSION = "1"


def _run(ctx: StageContext) -> dict:
    p = ctx.params
    root = local_root(p["root"], p["source"], p["options"])
    with ctx.timer("load"):
        source = sources.load(p["source"], root, p["options"])
    with ctx.timer("write"):
        meta = write_dataset(source, ctx.out, CleanOptions(**p["clean"]))
    return {
        "name": meta["name"],
        "num_nodes": meta["num_nodes"],
        "num_edges": meta["num_edges"],
        "feature_dim": meta["feature_dim"],
        "num_classes": meta["num_classes"],
        "directed": meta["directed"],
        "num_splits": meta["split"]["num_splits"],
    }


STAGE = Stage(name="ingest", version=VERSION, package="stages.ingest", run=_run)


def ingest(
    source: str,
    root: str | None = None,
    *,
    store: ArtifactStore | None = None,
    options: dict | None = None,
    undirected: bool | None = None,
    dedupe: bool = True,
    self_loops: str = "drop",
    force: bool = False,
) -> Artifact:
    """Ingest ``source`` (``KIND:ARGUMENT``) into the store; cached by source content.

    ``options`` are source-specific (e.g. ``features``/``labels`` files for ``edgelist``).
    """
    options = dict(options or {})
    sources.parse(source)
    clean = CleanOptions(undirected=undirected, dedupe=dedupe, self_loops=self_loops)
    root_dir = local_root(root, source, options)
    files = sources.local_files(source, root_dir, options)
    params = {
        "source": source,
        "root": root,
        "options": options,
        "clean": clean.__dict__,
        # the content of what is read, so an edited file is a new key
        "files": {_name(f, root_dir): sha256_file(f) for f in files},
    }
    return run_stage(STAGE, params, store=store, force=force)


def _name(path: Path, root: Path | None) -> str:
    return str(path.relative_to(root)) if root is not None else str(path)

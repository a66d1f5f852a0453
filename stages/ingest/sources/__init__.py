"""Dataset sources: ``KIND:ARGUMENT`` strings, each kind in its own module.

A source module has two functions:

- ``required_files(argument, options) -> list[str]``: the files it reads, relative to the
  root folder (or as given when there is no root). Remote roots are downloaded first by
  ``stages.ingest.download``, and the files' checksums enter the stage key.
- ``load(argument, root, options) -> GraphSource``: ``root`` is a local folder or ``None``.

A module that reads several files from one folder named only by ``--root`` sets
``NEEDS_ROOT = True``; without a root it is an error that says so.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from stages.errors import DorylusError
from stages.ingest.schema import GraphSource

# kind -> module under stages.ingest.sources
KINDS = {
    "planetoid": "planetoid",
    "npz": "npz",
    "musae": "musae",
    "mat": "mat",
    "ogb": "ogb",
    "edgelist": "edgelist",
    "dorylus": "dorylus_binary",
    "synthetic": "synthetic",
}


def parse(spec: str) -> tuple[str, str]:
    kind, sep, argument = spec.partition(":")
    if not sep or kind not in KINDS:
        known = ", ".join(f"{k}:..." for k in KINDS)
        raise DorylusError(f"unknown source {spec!r}; write KIND:ARGUMENT with KIND one of {known}")
    return kind, argument


def _module(spec: str, root: Path | None):
    kind, argument = parse(spec)
    module = importlib.import_module(f"stages.ingest.sources.{KINDS[kind]}")
    if root is None and getattr(module, "NEEDS_ROOT", False):
        raise DorylusError(
            f"source {spec!r} reads its files from a folder: pass --root FOLDER "
            "(a local folder, https:// or s3:// URL holding the dataset's files)"
        )
    return module, argument


def load(spec: str, root: Path | None, options: dict) -> GraphSource:
    module, argument = _module(spec, root)
    return module.load(argument, root, options)


def local_files(spec: str, root: Path | None, options: dict) -> list[Path]:
    """The local files a source reads; a missing one is an error that names it."""
    module, argument = _module(spec, root)
    paths = [Path(root, f) if root is not None else Path(f) for f in module.required_files(argument, options)]
    for path in paths:
        if not path.is_file():
            raise DorylusError(f"source {spec!r}: file {path} does not exist; check the path or --root")
    return paths

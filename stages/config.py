"""Where the project keeps its state, and the default artifact store."""

from __future__ import annotations

import os
from pathlib import Path


def state_dir() -> Path:
    """The project's state folder: ``$DORYLUS_HOME`` or ``./.dorylus``.

    It holds the default local artifact store, the download cache and Prefect's home.
    """
    return Path(os.environ.get("DORYLUS_HOME") or ".dorylus").absolute()


def default_store_uri() -> str:
    return str(state_dir() / "store")


def cache_dir(name: str) -> Path:
    path = state_dir() / "cache" / name
    path.mkdir(parents=True, exist_ok=True)
    return path

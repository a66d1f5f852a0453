"""The stage contract: ``(params, input artifacts) -> output artifact``, cached by key.

The stage key hashes exactly what determines the output:

- the stage's name and ``VERSION`` (bumped when the meaning of the output changes),
- the code digest of the stage's package and every project module it imports,
- the parameters (canonical JSON),
- the content digest of every input artifact.

Nothing else enters it (no run id, no time, no host), so an existing key is a cache hit.
"""

from __future__ import annotations

import json
import logging
import platform
import resource
import socket
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from stages.errors import DorylusError
from stages.hashing import code_digest, sha256_file, sha256_json
from stages.store import MANIFEST, ArtifactStore, is_s3, local_copy, read_manifest

log = logging.getLogger("dorylus")

KEY_LENGTH = 24  # hex digits of sha256 kept in names: 96 bits
LIBRARIES = ("numpy", "scipy", "pyarrow", "dask", "distributed", "torch", "pyzmq", "prefect", "boto3")


@dataclass(frozen=True)
class Stage:
    """A named, versioned function from ``StageContext`` to a summary dict."""

    name: str
    version: str
    package: str  # whose code (and project imports) the key covers
    run: Callable[["StageContext"], dict]


@dataclass(frozen=True)
class Artifact:
    uri: str
    manifest: dict
    cached: bool = False

    @property
    def key(self) -> str:
        return self.manifest["key"]

    @property
    def stage(self) -> str:
        return self.manifest["stage"]

    @property
    def digest(self) -> str:
        return self.manifest["digest"]

    @property
    def summary(self) -> dict:
        return self.manifest.get("summary", {})

    def path(self) -> Path:
        """A local folder with the artifact's files (downloaded and verified if on S3)."""
        return local_copy(self.uri, self.manifest)

    def result(self) -> dict:
        """What ``--json`` prints: the URI, the key and the key figures."""
        return {"stage": self.stage, "uri": self.uri, "key": self.key, "cached": self.cached, **self.summary}


@dataclass
class StageContext:
    params: dict
    inputs: dict[str, Artifact]
    out: Path  # the staging folder to write outputs into
    timings: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def timer(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - start


def stage_key(stage: Stage, params: Mapping[str, Any], inputs: Mapping[str, Artifact]) -> str:
    """Hash of stage name, version, code digest, parameters and input digests."""
    return sha256_json(
        {
            "stage": stage.name,
            "version": stage.version,
            "code": code_digest(stage.package),
            "params": dict(params),
            "inputs": {name: art.digest for name, art in sorted(inputs.items())},
        }
    )[:KEY_LENGTH]


def run_stage(
    stage: Stage,
    params: Mapping[str, Any],
    inputs: Mapping[str, Artifact] | None = None,
    store: ArtifactStore | None = None,
    force: bool = False,
) -> Artifact:
    """Return the stage's artifact for these inputs, computing it unless cached.

    On failure nothing is left behind: the staging folder is removed and the exception
    propagates.
    """
    store = store or ArtifactStore.open()
    inputs = dict(inputs or {})
    params = json.loads(json.dumps(dict(params), default=str))  # what the manifest will hold
    key = stage_key(stage, params, inputs)
    uri = store.artifact_uri(stage.name, key)
    if not force and store.has(stage.name, key):
        log.info("%s: cached %s", stage.name, uri)
        return Artifact(uri, read_manifest(uri), cached=True)

    staging = store.staging_dir(stage.name, key)
    ctx = StageContext(params=params, inputs=inputs, out=staging)
    started = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    try:
        summary = stage.run(ctx) or {}
        ctx.timings["total"] = time.perf_counter() - t0
        manifest = _manifest(stage, key, params, inputs, staging, summary, ctx.timings, started)
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2))
        uri = store.publish(staging, stage.name, key)
    except BaseException:
        store.discard(staging)
        raise
    log.info("%s: wrote %s", stage.name, uri)
    return Artifact(uri, manifest, cached=False)


def resolve_artifact(ref: str, store: ArtifactStore | None = None, stage: str | None = None) -> Artifact:
    """An artifact named by URI (local path or s3://) or by (a prefix of) its stage key."""
    store = store or ArtifactStore.open()
    if is_s3(ref) or Path(ref).exists():
        uri = ref if is_s3(ref) else str(Path(ref).absolute())
    else:
        matches = store.find(ref) if ref and "/" not in ref else []
        if stage and len(matches) > 1:  # the same key prefix in several stages
            matches = [m for m in matches if read_manifest(m)["stage"] == stage] or matches
        if not matches:
            raise DorylusError(
                f"no artifact {ref!r}: pass an artifact folder, an s3:// URI, or a stage key present in the store {store.uri}"
            )
        if len(matches) > 1:
            raise DorylusError(f"key prefix {ref!r} is ambiguous ({len(matches)} artifacts); give more digits")
        uri = matches[0]
    manifest = read_manifest(uri)
    if stage and manifest.get("stage") != stage:
        raise DorylusError(f"{ref} is a {manifest.get('stage')!r} artifact, but a {stage!r} artifact is needed here")
    return Artifact(uri, manifest, cached=True)


def _manifest(stage, key, params, inputs, folder: Path, summary, timings, started) -> dict:
    outputs = {
        p.relative_to(folder).as_posix(): {"sha256": sha256_file(p), "size": p.stat().st_size}
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    }
    return {
        "stage": stage.name,
        "version": stage.version,
        "key": key,
        "code_digest": code_digest(stage.package),
        "params": params,
        "inputs": {n: {"uri": a.uri, "key": a.key, "digest": a.digest} for n, a in sorted(inputs.items())},
        "outputs": outputs,
        # the content digest: what reproductions compare and downstream keys hash
        "digest": sha256_json({rel: entry["sha256"] for rel, entry in outputs.items()}),
        "summary": summary,
        "timings": {k: round(v, 6) for k, v in timings.items()},
        "peak_memory_bytes": _peak_rss(),
        "created": started.isoformat(),
        "host": {
            "hostname": socket.gethostname(),
            "platform": platform.platform(),
            "python": sys.version.split()[0],
            "cpus": _cpu_count(),
        },
        "libraries": library_versions(),
    }


def _peak_rss() -> int:
    """Peak resident memory of this process and its finished children, in bytes."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, children) * 1024


def _cpu_count() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def library_versions(names: tuple[str, ...] = LIBRARIES) -> dict[str, str]:
    """Installed versions of the named distributions (absent ones are left out)."""
    versions = {}
    for name in names:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return versions

"""Run lock files: everything needed to rerun a run and check that it reproduces.

A lock file (JSON, like ``dvc.lock``) records the run's configuration and, per stage, its
key, version, code digest, parameters, input digests, artifact URI and content digest,
plus the project's git commit and the package versions. ``dorylus reproduce LOCKFILE``
reruns the configuration into a fresh store and compares digests stage by stage.
"""

from __future__ import annotations

import json
import platform
import subprocess
import uuid
from datetime import datetime, timezone
from pathlib import Path

from stages.config import state_dir
from stages.contract import LIBRARIES, Artifact, library_versions
from stages.errors import DorylusError

FORMAT = 1
PACKAGES = ("dorylus-pipeline", *LIBRARIES, "matplotlib", "rich", "pymetis", "torch-geometric")
REPO = Path(__file__).resolve().parents[1]


def runs_dir() -> Path:
    path = state_dir() / "runs"
    path.mkdir(parents=True, exist_ok=True)
    return path


def git_state() -> dict:
    """The project's commit and whether the working tree differs from it."""
    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        status = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return {"commit": None, "dirty": None}
    if commit.returncode != 0:
        return {"commit": None, "dirty": None}
    return {"commit": commit.stdout.strip(), "dirty": bool(status.stdout.strip())}


def stage_entry(artifact: Artifact) -> dict:
    m = artifact.manifest
    return {
        "key": m["key"],
        "version": m["version"],
        "code_digest": m["code_digest"],
        "params": m["params"],
        "inputs": {name: ref["digest"] for name, ref in m["inputs"].items()},
        "uri": artifact.uri,
        "digest": m["digest"],
        "outputs": {rel: entry["sha256"] for rel, entry in m["outputs"].items()},
    }


def lock(config: dict, store_uri: str, artifacts: dict[str, Artifact], extra: dict | None = None) -> dict:
    return {
        "format": FORMAT,
        "created": datetime.now(timezone.utc).isoformat(),
        "config": config,
        "store": store_uri,
        "stages": {name: stage_entry(a) for name, a in artifacts.items()},
        "git": git_state(),
        "packages": library_versions(PACKAGES),
        "python": platform.python_version(),
        **(extra or {}),
    }


def write_lock(data: dict, path: Path | None = None) -> Path:
    """Write atomically; the default name is ``<state>/runs/<time>-<last key>.lock.json``,
    and ``runs/latest.lock.json`` always holds the most recent run's lock."""
    if path is None:
        last = list(data["stages"].values())[-1]["key"][:8]
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
        path = runs_dir() / f"{stamp}-{last}.lock.json"
    text = json.dumps(data, indent=2, default=str)
    for target in (path, runs_dir() / "latest.lock.json"):
        tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}")
        tmp.write_text(text)
        tmp.replace(target)
    return path


def read_lock(path: str | Path | None = None) -> dict:
    path = Path(path) if path else runs_dir() / "latest.lock.json"
    if not path.is_file():
        raise DorylusError(f"lock file {path} not found; every `dorylus run` writes one under {runs_dir()}")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise DorylusError(f"{path} is not a lock file (bad JSON: {exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or "stages" not in data or "config" not in data:
        raise DorylusError(f"{path} is not a dorylus lock file (format {FORMAT}); pass a file written by `dorylus run`")
    return data


def compare(expected: dict, got: dict) -> dict:
    """Stage by stage: do keys (same code, params, inputs) and digests (same output) match?"""
    stages = {}
    for name, want in expected["stages"].items():
        have = got["stages"].get(name)
        stages[name] = {
            "key_matches": bool(have) and have["key"] == want["key"],
            "digest_matches": bool(have) and have["digest"] == want["digest"],
            "expected_digest": want["digest"],
            "digest": have["digest"] if have else None,
            # which files differ: e.g. only the timing records of a deterministic training
            "files_differing": sorted(
                rel for rel in set(want.get("outputs", {})) | set((have or {}).get("outputs", {}))
                if want.get("outputs", {}).get(rel) != (have or {}).get("outputs", {}).get(rel)
            ),
            "uri": have["uri"] if have else None,
        }
    packages = {
        name: {"locked": v, "now": got["packages"].get(name)}
        for name, v in expected.get("packages", {}).items()
        if got["packages"].get(name) != v
    }
    return {
        "stages": stages,
        "all_digests_match": all(s["digest_matches"] for s in stages.values()),
        "git": {"locked": expected.get("git", {}).get("commit"), "now": got["git"]["commit"],
                "same_commit": expected.get("git", {}).get("commit") == got["git"]["commit"]},
        "package_differences": packages,
    }

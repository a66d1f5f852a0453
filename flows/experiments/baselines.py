"""Baseline trainers an experiment can compare against (kind = "sage-sampling")."""

from __future__ import annotations

from flows import tasks
from flows.experiments import BASELINES as KINDS
from stages.contract import Artifact
from stages.errors import DorylusError
from stages.store import ArtifactStore


def run_baseline(kind: str, config: dict, store: ArtifactStore, force: list[str]) -> Artifact:
    """Ingest (shared with the Dorylus variants), train the baseline, evaluate it."""
    if kind not in KINDS:
        raise DorylusError(f"unknown baseline kind {kind!r}; kinds: {', '.join(KINDS)}")
    dataset = tasks.run("ingest", config["ingest"], {}, store, force="ingest" in force)
    trained = tasks.run("baseline", config.get("baseline", {}), {"dataset": dataset}, store, force="train" in force)
    return tasks.run("evaluate", config["evaluate"], {"train": trained}, store, force="evaluate" in force)

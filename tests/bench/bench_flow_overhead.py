"""What Prefect orchestration costs: the same stages called directly and through the flow.

Side by side on Cora (ingest + partition), in a fresh state folder:
- direct: the stage functions called one after the other (the peer: no orchestration);
- flow, first run: stages computed inside a Prefect flow (includes the temporary server's
  start, paid once per process);
- flow, cold cache vs warm: a second flow run where every stage is a Prefect cache hit,
  against direct calls that hit the artifact store.

Prints the figures and ratios and saves them to tests/bench/results/flow_overhead.json.
Run: .venv/bin/python tests/bench/bench_flow_overhead.py
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATASETS = Path(os.environ.get("DORYLUS_DATASETS", REPO.parent / "shared" / "datasets"))


def main() -> dict:
    home = tempfile.mkdtemp(prefix="bench-flow-")
    os.environ["DORYLUS_HOME"] = home
    sys.path.insert(0, str(REPO))
    from flows import settings

    settings.configure()
    from stages.store import ArtifactStore

    spec = {"source": "planetoid:cora", "root": str(DATASETS / "planetoid")}
    part = {"parts": 4, "method": "fennel", "seed": 0}

    from flows import calls

    def direct(store):
        d = calls.CALLS["ingest"](spec, {}, store, False, None)
        return calls.CALLS["partition"](part, {"dataset": d}, store, False, None)

    figures = {}
    t = time.perf_counter()
    direct(ArtifactStore.open(f"{home}/direct"))
    figures["direct_compute_s"] = time.perf_counter() - t
    t = time.perf_counter()
    direct(ArtifactStore.open(f"{home}/direct"))
    figures["direct_cached_s"] = time.perf_counter() - t

    from prefect import flow

    from flows import tasks

    @flow
    def chain(store_uri: str):
        store = ArtifactStore.open(store_uri)
        d = tasks.run("ingest", spec, {}, store)
        return tasks.run("partition", part, {"dataset": d}, store).cached

    t = time.perf_counter()
    chain(f"{home}/flow")
    figures["flow_first_run_s"] = time.perf_counter() - t  # includes the temporary server start
    t = time.perf_counter()
    chain(f"{home}/flow2")
    figures["flow_compute_s"] = time.perf_counter() - t
    t = time.perf_counter()
    assert chain(f"{home}/flow2")
    figures["flow_cached_s"] = time.perf_counter() - t

    figures["ratio_compute_flow_vs_direct"] = figures["flow_compute_s"] / figures["direct_compute_s"]
    figures["overhead_compute_s"] = figures["flow_compute_s"] - figures["direct_compute_s"]
    figures["overhead_cached_s"] = figures["flow_cached_s"] - figures["direct_cached_s"]
    out = REPO / "tests" / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "flow_overhead.json").write_text(json.dumps(figures, indent=2))
    for k, v in figures.items():
        print(f"{k:32s} {v:8.3f}")
    return figures


if __name__ == "__main__":
    main()

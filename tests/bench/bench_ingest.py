"""Ingest benchmark: synthetic generation + Parquet write, and SNAP text edge lists.

Every case runs the real ``ingest()`` stage in its own child process, so its wall time and
peak memory are its own: peak RSS is sampled over the child's whole process tree (Dask
worker processes included) and also read from ``wait4`` for the child itself.

Cases:
- synthetic graphs of about 1M, 10M and 100M stored (directed) edges, the largest with
  128-dim features on 1M nodes; the 10M and 100M cases once per Dask scheduler (sync,
  threads, processes) to choose ``synthetic.SCHEDULER``;
- a 10M-edge SNAP text edge list: the full ingest, and its parser side by side with its
  peers (pandas' C reader in chunks, pyarrow's streaming CSV reader), as ratios.

Run: ``.venv/bin/python tests/bench/bench_ingest.py [--quick]`` (``--quick`` skips 100M).
Figures are printed and saved to ``tests/bench/results/bench_ingest.json``. Other work on
the machine makes the times noisy; nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "tests" / "bench" / "results"

SYNTHETIC = {
    "synthetic-1M": "synthetic:nodes=100000,avg_degree=10,features=64,classes=8,homophily=0.8,seed=0",
    "synthetic-10M": "synthetic:nodes=1000000,avg_degree=10,features=64,classes=8,homophily=0.8,seed=0",
    "synthetic-100M": "synthetic:nodes=1000000,avg_degree=100,features=128,classes=8,homophily=0.8,seed=0",
}
TEXT_EDGES = 10_000_000
TEXT_NODES = 1_000_000


# ---------------------------------------------------------------- child side


def child(case: str, arg: str, scheduler: str | None) -> dict:
    """Runs one case in this (child) process and returns its figures."""
    from stages.ingest import ingest
    from stages.ingest.sources import synthetic
    from stages.store import ArtifactStore

    if scheduler:
        synthetic.SCHEDULER = scheduler
    store = ArtifactStore.open(tempfile.mkdtemp(prefix="bench-store-", dir=os.environ["BENCH_TMP"]))
    if case == "parse":
        return parse_peers(Path(arg))
    t0 = time.perf_counter()
    artifact = ingest(arg, store=store, force=True)
    wall = time.perf_counter() - t0
    m = artifact.manifest
    return {
        "wall_s": wall,
        "num_nodes": artifact.summary["num_nodes"],
        "num_edges": artifact.summary["num_edges"],
        "timings": m.get("timings", {}),
        "output_bytes": sum(f["size"] for f in m["outputs"].values()),
    }


def parse_peers(path: Path) -> dict:
    """Edges per second of our block parser and of its peers on the same file."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.csv as pacsv

    from stages.ingest.sources import edgelist

    def ours():
        return sum(len(s) for s, _ in edgelist._edge_chunks(path))

    def pandas_chunks():
        reader = pd.read_csv(
            path, sep="\t", comment="#", header=None, names=["s", "d"], dtype="int64", chunksize=1 << 22
        )
        return sum(len(chunk) for chunk in reader)

    def arrow_stream():  # no comment support: told how many header lines to skip
        reader = pacsv.open_csv(
            path,
            read_options=pacsv.ReadOptions(column_names=["s", "d"], skip_rows=2, block_size=1 << 25),
            parse_options=pacsv.ParseOptions(delimiter="\t"),
            convert_options=pacsv.ConvertOptions(column_types={"s": pa.int64(), "d": pa.int64()}),
        )
        return sum(batch.num_rows for batch in reader)

    out = {}
    for name, fn in (("ours", ours), ("pandas_c_chunks", pandas_chunks), ("pyarrow_open_csv", arrow_stream)):
        best = None
        for _ in range(2):  # best of two: the machine is shared
            t0 = time.perf_counter()
            rows = fn()
            dt = time.perf_counter() - t0
            best = dt if best is None else min(best, dt)
        out[name] = {"rows": rows, "seconds": best, "edges_per_s": rows / best}
    return out


# ---------------------------------------------------------------- parent side


def run_child(case: str, arg: str, scheduler: str | None, tmp: Path) -> dict:
    import psutil

    env = dict(os.environ, DORYLUS_HOME=str(tmp / "home"), BENCH_TMP=str(tmp), PYTHONPATH=str(REPO))
    cmd = [sys.executable, __file__, "--child", case, arg, scheduler or ""]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, env=env, cwd=REPO)
    peak = 0
    done = threading.Event()

    def sample():  # RSS of the child and every descendant (Dask workers), summed
        nonlocal peak
        root = psutil.Process(proc.pid)
        while not done.is_set():
            try:
                total = sum(p.memory_info().rss for p in [root, *root.children(recursive=True)])
                peak = max(peak, total)
            except psutil.Error:
                pass
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    done.set()
    sampler.join()
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"case {case} ({arg}) failed with status {status}")
    result = json.loads(out.decode().strip().splitlines()[-1])
    result.update(
        process_wall_s=wall,
        peak_rss_tree_bytes=peak,
        peak_rss_child_bytes=usage.ru_maxrss * 1024,
        scheduler=scheduler,
    )
    return result


def write_snap(path: Path) -> None:
    """A SNAP-style text file: two comment lines, then TEXT_EDGES random tab-separated pairs."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pacsv

    rng = np.random.default_rng(0)
    with open(path, "wb") as f:
        f.write(f"# Directed graph: bench.txt\n# Nodes: {TEXT_NODES} Edges: {TEXT_EDGES}\n".encode())
        step = 1 << 22
        for start in range(0, TEXT_EDGES, step):
            n = min(step, TEXT_EDGES - start)
            table = pa.table({"s": rng.integers(0, TEXT_NODES, n), "d": rng.integers(0, TEXT_NODES, n)})
            pacsv.write_csv(table, f, pacsv.WriteOptions(include_header=False, delimiter="\t"))


def gib(n: int) -> float:
    return n / 2**30


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="skip the 100M-edge case")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        case, arg, scheduler = args.child
        print(json.dumps(child(case, arg, scheduler or None)))
        return

    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp_name:
        tmp = Path(tmp_name)
        schedulers = ("sync", "threads", "processes")
        plan = [("synthetic-1M", None)] + [("synthetic-10M", s) for s in schedulers]
        if not args.quick:
            plan += [("synthetic-100M", s) for s in schedulers]
        for case, scheduler in plan:
            print(f"running {case} (scheduler {scheduler or 'default'}) ...", flush=True)
            r = run_child(case, SYNTHETIC[case], scheduler, tmp)
            rows.append({"case": case, "source": SYNTHETIC[case], **r})

        snap = tmp / "bench.txt"
        t0 = time.perf_counter()
        write_snap(snap)
        print(f"wrote {snap.stat().st_size / 2**20:.0f} MiB SNAP text in {time.perf_counter() - t0:.1f} s", flush=True)
        print("running edgelist-10M ...", flush=True)
        rows.append({"case": "edgelist-10M", "source": "edgelist:<10M-edge SNAP text>", **run_child("edgelist-10M", f"edgelist:{snap}", None, tmp)})
        print("running the parser comparison ...", flush=True)
        peers = run_child("parse", str(snap), None, tmp)

    from stages.ingest.sources import synthetic

    print()
    header = f"{'case':<16}{'scheduler':<11}{'edges':>13}{'wall s':>9}{'Medges/s':>10}{'peak GiB':>10}  load/write/total s"
    print(header)
    print("-" * len(header))
    for r in rows:
        r["edges_per_s"] = r["num_edges"] / r["wall_s"]
        t = r["timings"]
        print(
            f"{r['case']:<16}{r['scheduler'] or synthetic.SCHEDULER if r['case'].startswith('synthetic') else '-':<11}"
            f"{r['num_edges']:>13,}{r['wall_s']:>9.1f}{r['edges_per_s'] / 1e6:>10.2f}{gib(r['peak_rss_tree_bytes']):>10.2f}"
            f"  {t.get('load', 0):.1f}/{t.get('write', 0):.1f}/{t.get('total', 0):.1f}"
        )
    for case in ("synthetic-10M", "synthetic-100M"):
        walls = {r["scheduler"]: r["wall_s"] for r in rows if r["case"] == case}
        if walls:
            ratios = ", ".join(f"{k} {v / walls['sync']:.2f}x" for k, v in walls.items())
            print(f"\n{case} wall time relative to sync: {ratios}")
    print("\nSNAP text parsing, 10M edges (best of 2):")
    for name, p in peers.items():
        if name in ("scheduler", "process_wall_s", "peak_rss_tree_bytes", "peak_rss_child_bytes"):
            continue
        print(f"  {name:<18}{p['seconds']:>7.2f} s {p['edges_per_s'] / 1e6:>7.2f} Medges/s  ours/peer time ratio {peers['ours']['seconds'] / p['seconds']:.2f}")

    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "bench_ingest.json"
    out.write_text(json.dumps({
        "when": datetime.now(timezone.utc).isoformat(),
        "host": {"machine": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version()},
        "default_scheduler": synthetic.SCHEDULER,
        "cases": rows,
        "parse_peers": {k: v for k, v in peers.items() if isinstance(v, dict)},
    }, indent=2))
    print(f"\nsaved {out}")


if __name__ == "__main__":
    main()

"""``dorylus partition DATASET``: an ingest artifact split into one part per graph server."""

from __future__ import annotations

from stages.partition import METHODS, partition
from stages.store import ArtifactStore


def add_parser(sub) -> None:
    from flows.cli import add_common

    p = sub.add_parser("partition", help="partition an ingested graph for the graph servers", description=__doc__)
    p.add_argument("dataset", help="an ingest artifact: its folder, s3:// URI, or (a prefix of) its key")
    p.add_argument("--parts", "-p", type=int, required=True, metavar="P", help="number of partitions (graph servers)")
    p.add_argument(
        "--method",
        "-m",
        choices=METHODS,
        default="fennel",
        help="hash, range (contiguous ids balanced by edges), metis (needs the metis extra) "
        "or fennel (streaming; default)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of hash, metis and fennel's tie-breaking (default 0)")
    p.add_argument("--slack", type=float, default=1.1, help="fennel: cap on a part's load as a multiple of the mean (default 1.1)")
    p.add_argument("--passes", type=int, default=3, help="fennel: streaming passes over the edges; 1 is classic one-pass Fennel (default 3)")
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="where the Dask tasks run: auto (default: in-process for small graphs, else a LocalCluster), "
        "inprocess, local, or a scheduler address tcp://HOST:8786",
    )
    add_common(p)
    p.set_defaults(handler=run)


def run(args) -> dict:
    artifact = partition(
        args.dataset,
        args.parts,
        args.method,
        store=ArtifactStore.open(args.store),
        seed=args.seed,
        scheduler=args.scheduler,
        force=args.force,
        slack=args.slack,
        passes=args.passes,
    )
    return artifact.result()

"""``dorylus ingest SOURCE``: a dataset to versioned Parquet."""

from __future__ import annotations

from stages.ingest import ingest
from stages.ingest.sources import KINDS
from stages.store import ArtifactStore

DEFAULT_SOURCE = "synthetic:nodes=100000,avg_degree=16,features=64,classes=8,homophily=0.8,seed=0"


def add_parser(sub) -> None:
    from flows.cli import add_common

    p = sub.add_parser("ingest", help="ingest a graph dataset into Parquet", description=__doc__)
    p.add_argument(
        "source",
        nargs="?",
        default=DEFAULT_SOURCE,
        help=f"KIND:ARGUMENT with KIND in {', '.join(KINDS)} (default: the built-in synthetic graph {DEFAULT_SOURCE})",
    )
    p.add_argument("--root", help="folder, https:// or s3:// URL the source's files are under")
    p.add_argument("--features", help="edgelist: a feature file (one row per node)")
    p.add_argument("--labels", help="edgelist: a label file (one integer per node)")
    p.add_argument("--sha256", action="append", default=[], metavar="FILE=DIGEST", help="expected checksum of a remote file")
    direction = p.add_mutually_exclusive_group()
    direction.add_argument("--undirected", dest="undirected", action="store_true", default=None, help="add reverse edges")
    direction.add_argument("--directed", dest="undirected", action="store_false", help="keep edges as given even if the source is undirected")
    p.add_argument("--keep-duplicates", dest="dedupe", action="store_false", help="keep duplicate edges")
    p.add_argument("--self-loops", choices=("drop", "keep"), default="drop", help="what to do with self loops (default: drop)")
    add_common(p)
    p.set_defaults(handler=run)


def run(args) -> dict:
    options = {}
    if args.features:
        options["features"] = args.features
    if args.labels:
        options["labels"] = args.labels
    if args.sha256:
        options["sha256"] = dict(item.split("=", 1) for item in args.sha256)
    artifact = ingest(
        args.source,
        args.root,
        store=ArtifactStore.open(args.store),
        options=options,
        undirected=args.undirected,
        dedupe=args.dedupe,
        self_loops=args.self_loops,
        force=args.force,
    )
    return artifact.result()

"""``dorylus run [CONFIG] [--set KEY=VALUE ...]``: the end-to-end flow, and where its report is."""

from __future__ import annotations


def add_store_json(p) -> None:
    """``--store`` and ``--json`` as in ``flows.cli.add_common``; ``--force`` here names stages."""
    p.add_argument("--store", metavar="URI", help="artifact store: a folder or s3://BUCKET/PREFIX (default: .dorylus/store)")
    p.add_argument("--json", action="store_true", help="print one JSON object with the artifact URIs and key figures")


def add_config(p) -> None:
    p.add_argument("config", nargs="?", help="a TOML run configuration or a preset name (default: the built-in synthetic preset 'default')")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override one setting, e.g. --set train.epochs=50 (repeatable)")


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="run the end-to-end flow (ingest, partition, train, evaluate)", description=__doc__)
    add_config(p)
    add_store_json(p)
    p.add_argument("--force", action="append", default=[], metavar="STAGE", help="rerun this stage even if cached (repeatable; 'all' for every stage)")
    p.set_defaults(handler=run)


def run(args) -> dict:
    from flows.config import load_config

    config = load_config(args.config, args.set)  # user errors surface before Prefect starts
    from flows import pipeline, progress

    force = pipeline.check_force(args.force)
    with progress.shown(pipeline.stage_names(config)):
        result = pipeline.end_to_end(config, force=force, store=args.store)
    return result if args.json else readable(result)


def readable(result: dict) -> dict:
    """For the terminal: one line per stage instead of the nested stage table."""
    stages = result.pop("stages")
    for name, s in stages.items():
        result[name] = f"{s['key']} ({'cached' if s['cached'] else 'computed'})"
    return result

"""``dorylus reproduce LOCKFILE | EXPERIMENT [--preset small|paper]``.

With a lock file: rerun that run's configuration into a fresh store and say, stage by
stage, whether each artifact's digest matches the locked one (and whether the code,
git commit and package versions are the same). With an experiment name (asynchrony,
backends, scaling, sampling): run the paper experiment's flow with the chosen preset.
"""

from __future__ import annotations

from pathlib import Path


def add_parser(sub) -> None:
    from flows.experiments import EXPERIMENTS

    p = sub.add_parser("reproduce", help="rerun a run from its lock file, or run one of the paper's experiments", description=__doc__)
    p.add_argument("target", metavar="LOCKFILE|EXPERIMENT", help=f"a lock file written by `dorylus run`, or one of: {', '.join(EXPERIMENTS)}")
    p.add_argument("--preset", default="small", choices=("small", "paper"), help="experiment size: small (minutes here) or paper (the paper's setup, for AWS)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="experiments: override a setting of every variant, e.g. --set train.epochs=20")
    p.add_argument("--store", metavar="URI", help="artifact store (lock files: default a fresh folder under .dorylus/reproductions; experiments: .dorylus/store)")
    p.add_argument("--force", action="append", default=[], metavar="STAGE", help="experiments: rerun this stage in every variant (repeatable; 'all')")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(handler=run)


def run(args) -> dict:
    from flows.experiments import EXPERIMENTS
    from stages.errors import DorylusError

    if args.target in EXPERIMENTS:
        return run_experiment(args)
    if Path(args.target).is_file():
        return reproduce_lock(args)
    raise DorylusError(f"{args.target!r} is neither a lock file nor an experiment ({', '.join(EXPERIMENTS)})")


def run_experiment(args) -> dict:
    from flows.experiments.runner import load_experiment

    spec = load_experiment(args.target, args.preset, args.set)  # user errors before Prefect starts
    from flows import progress
    from flows.experiments.runner import experiment

    with progress.shown(list(spec["variants"])):
        return experiment(args.target, args.preset, args.set, store=args.store, force=args.force)


def reproduce_lock(args) -> dict:
    from datetime import datetime, timezone

    from flows.config import check_config
    from flows.lockfile import compare, read_lock
    from stages.config import state_dir

    locked = read_lock(args.target)
    config = check_config(locked["config"], args.target)
    store = args.store or str(state_dir() / "reproductions" / f"{Path(args.target).name.split('.')[0]}-{datetime.now(timezone.utc):%Y%m%dT%H%M%S}")
    from flows import pipeline, progress

    with progress.shown(pipeline.stage_names(config)):
        result = pipeline.end_to_end(config, store=store)
    again = read_lock(result["lock_file"])
    report = compare(locked, again)
    verdict = "reproduced: every artifact digest matches" if report["all_digests_match"] else "NOT reproduced: " + ", ".join(
        n for n, s in report["stages"].items() if not s["digest_matches"]) + " differ"
    return {"stage": "reproduce", "uri": result["lock_file"], "verdict": verdict, "store": store, **report}

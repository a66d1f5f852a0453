"""``dorylus stage NAME``: rerun one stage of an earlier run against that run's upstream artifacts.

The run is named by its lock file (default: the latest run's). The stage's settings are the
run's, changed by ``--set``; its inputs are the artifacts the run recorded. Stages after
it are not rerun: ``dorylus run`` with the same changes does that.
"""

from __future__ import annotations


def add_parser(sub) -> None:
    from flows.calls import ORDER
    from flows.cli import add_common

    p = sub.add_parser("stage", help="rerun a single stage of an earlier run", description=__doc__)
    p.add_argument("name", choices=ORDER, help="the stage to rerun")
    p.add_argument("--run", metavar="LOCKFILE", help="the earlier run's lock file (default: the latest run)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="change one of the stage's settings, e.g. --set train.epochs=50")
    add_common(p)
    p.set_defaults(handler=run)


def run(args) -> dict:
    from flows import calls
    from flows.config import apply_overrides, check_config
    from flows.lockfile import read_lock
    from stages.contract import resolve_artifact
    from stages.errors import DorylusError
    from stages.store import ArtifactStore

    lock = read_lock(args.run)
    for item in args.set:
        if not item.startswith(f"{args.name}."):
            raise DorylusError(f"--set {item!r} does not change stage {args.name}; write {args.name}.KEY=VALUE")
    config = check_config(apply_overrides(lock["config"], args.set), "the run's configuration")
    store = ArtifactStore.open(args.store or lock["store"])
    inputs = {}
    if calls.UPSTREAM[args.name]:
        input_name, upstream = calls.UPSTREAM[args.name]
        entry = lock["stages"].get(upstream)
        if entry is None:
            raise DorylusError(f"the run has no {upstream} artifact to feed {args.name}")
        artifact = resolve_artifact(entry["uri"], store, stage=upstream)
        if artifact.digest != entry["digest"]:
            raise DorylusError(f"the run's {upstream} artifact {entry['uri']} has changed since the run (digest differs); rerun the run")
        inputs[input_name] = artifact
    scheduler = config["run"].get("scheduler")
    return calls.CALLS[args.name](config[args.name], inputs, store, args.force, scheduler).result()

"""One flow for every experiment: run each variant's stages, then compare the evaluations.

Variants share their upstream stages through the stage keys: the asynchrony experiment
ingests and partitions once and trains three times; the scaling experiment partitions once
per server count.
"""

from __future__ import annotations

from flows import settings

settings.configure()

from prefect import flow  # noqa: E402

from flows import progress, tasks  # noqa: E402
from flows.config import apply_overrides, apply_settings, check_config, preset_path, read_toml  # noqa: E402
from flows.experiments import BASELINES, EXPERIMENTS  # noqa: E402
from flows.pipeline import check_force, run_stages  # noqa: E402
from stages.errors import DorylusError  # noqa: E402
from stages.evaluate.experiment import compare  # noqa: E402
from stages.store import ArtifactStore  # noqa: E402

PRESETS = ("small", "paper")


def load_experiment(name: str, preset: str = "small", overrides: list[str] | tuple = ()) -> dict:
    """The preset of an experiment, with its variants expanded into run configurations.

    ``overrides`` (``--set``) apply to the base configuration of every variant.
    """
    if name not in EXPERIMENTS:
        raise DorylusError(f"no experiment {name!r}; experiments: {', '.join(EXPERIMENTS)}")
    if preset not in PRESETS:
        raise DorylusError(f"no preset {preset!r}; presets: {', '.join(PRESETS)}")
    data = read_toml(preset_path(f"experiment-{name}")).get(preset)
    if not data or "base" not in data or not data.get("variants"):
        raise DorylusError(f"flows/presets/experiment-{name}.toml has no [{preset}] table with a base and variants")
    base = apply_overrides(data["base"], overrides)
    variants = {}
    for v in data["variants"]:
        label = v.get("label")
        if not label or label in variants:
            raise DorylusError(f"{name}/{preset}: every variant needs a distinct label")
        kind = v.get("kind", "dorylus")
        if kind != "dorylus" and kind not in BASELINES:
            raise DorylusError(f"{name}/{preset}/{label}: unknown kind {kind!r}; kinds: dorylus, {', '.join(BASELINES)}")
        config = apply_settings(base, v.get("set", {}))
        variants[label] = {"config": check_config(config, f"{name}/{preset}/{label}"), "kind": kind}
    return {
        "experiment": name,
        "preset": preset,
        "title": data.get("title", name),
        "description": data.get("description", ""),
        "target_accuracy": data.get("target_accuracy"),
        "variants": variants,
    }


@flow(name="experiment", flow_run_name="{experiment}-{preset}", persist_result=False)
def experiment(experiment: str, preset: str = "small", overrides: list[str] | None = None, store: str | None = None, force: list[str] | None = None) -> dict:
    spec = load_experiment(experiment, preset, overrides or [])
    store_ = ArtifactStore.open(store)
    force = check_force(force)
    evaluations = {}
    for label, variant in spec["variants"].items():
        config = variant["config"]
        if spec["target_accuracy"] is not None:
            config["evaluate"].setdefault("target_accuracy", spec["target_accuracy"])
        with progress.step(label) as outcome:
            if variant["kind"] == "dorylus":
                evaluations[label] = run_stages(config, store_, force)["evaluate"]
            else:
                from flows.experiments.baselines import run_baseline

                evaluations[label] = run_baseline(variant["kind"], config, store_, force)
            outcome["state"] = "cached" if evaluations[label].cached else "done"
    artifact = compare(
        experiment, preset, evaluations, store=store_, title=spec["title"], description=spec["description"],
        target_accuracy=spec["target_accuracy"], force="experiment" in (force or []),
    )
    report = artifact.path() / "report.md"
    tasks.publish(artifact)
    tasks.publish_markdown(f"experiment-{experiment}-{preset}", report.read_text(), f"experiment {experiment} ({preset})")
    table_rows = [{k: (v if not isinstance(v, float) else round(v, 6)) for k, v in r.items()} for r in artifact.summary["rows"]]
    from prefect.artifacts import create_table_artifact

    create_table_artifact(table=table_rows, key=f"experiment-{experiment}-{preset}-table", description=f"{experiment} ({preset})")
    return {**artifact.result(), "report": str(report), "table": str(artifact.path() / "table.csv"),
            "evaluations": {label: a.uri for label, a in evaluations.items()}}

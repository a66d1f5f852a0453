"""Run configuration: a TOML file (or a built-in preset) plus ``--set key=value`` overrides.

A run configuration has one table per stage::

    [ingest]     source, root, options, undirected, dedupe, self_loops
    [partition]  parts, method, seed, slack, passes
    [build]      enabled (default false), push, require_images, base_image, python_version,
                 repository_prefix
    [train]      the fields of stages.train.config.TrainConfig
    [evaluate]   target_accuracy, target_metric, graph_instance, parameter_instance, pricing
    [run]        scheduler (a Dask scheduler address; not part of any stage key)
    [baseline]   the sampling baseline's settings (experiments only; see
                 stages.evaluate.sage_baseline)

Every CLI flag has a key here; ``--set train.epochs=50`` sets one (the value is read as
TOML, so ``0.8``, ``true`` and ``"text"`` keep their types; bare words are strings).
"""

from __future__ import annotations

import copy
import tomllib
from importlib import resources
from pathlib import Path

from stages.errors import DorylusError

SECTIONS = {
    "ingest": {"source", "root", "options", "undirected", "dedupe", "self_loops"},
    "partition": {"parts", "method", "seed", "slack", "passes"},
    "build": {"enabled", "push", "require_images", "base_image", "python_version", "repository_prefix"},
    "train": None,  # checked by TrainConfig itself
    "evaluate": {"target_accuracy", "target_metric", "graph_instance", "parameter_instance", "pricing"},
    "run": {"scheduler"},
    "baseline": {"fanouts", "batch_size", "hidden", "lr", "dropout", "epochs", "seed", "split"},
}
DEFAULT_PRESET = "default"


def preset_path(name: str) -> Path:
    return Path(str(resources.files("flows") / "presets" / f"{name}.toml"))


def presets() -> list[str]:
    """Run-configuration presets (experiment presets are named ``experiment-<name>.toml``)."""
    names = (p.name for p in resources.files("flows").joinpath("presets").iterdir())
    return sorted(n[:-5] for n in names if n.endswith(".toml") and not n.startswith("experiment-"))


def read_toml(path: str | Path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise DorylusError(f"configuration {path} not found; pass a TOML file or one of the presets: {', '.join(presets())}")
    try:
        return tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise DorylusError(f"{path} is not valid TOML: {exc}") from None


def load_config(source: str | None = None, overrides: list[str] | tuple[str, ...] = ()) -> dict:
    """The run configuration from a file path or preset name (default preset if None)."""
    if source is None:
        source = DEFAULT_PRESET
    path = Path(source)
    if not path.suffix and not path.exists():
        if source not in presets():
            raise DorylusError(f"no configuration file or preset {source!r}; presets: {', '.join(presets())}")
        path = preset_path(source)
    config = read_toml(path)
    return check_config(apply_overrides(config, overrides), str(path))


def parse_value(text: str):
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text  # a bare word: a string


def apply_overrides(config: dict, overrides) -> dict:
    """A copy of ``config`` with ``SECTION.KEY=VALUE`` strings applied (``--set``)."""
    settings = {}
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise DorylusError(f"--set {item!r}: write SECTION.KEY=VALUE, e.g. --set train.epochs=50")
        settings[key.strip()] = parse_value(value.strip())
    return apply_settings(config, settings)


def apply_settings(config: dict, settings: dict) -> dict:
    """A copy of ``config`` with ``{"section.key": value}`` applied."""
    config = copy.deepcopy(config)
    for key, value in settings.items():
        parts = key.split(".")
        if len(parts) < 2 or not all(parts):
            raise DorylusError(f"setting {key!r}: name it SECTION.KEY, e.g. train.epochs")
        node = config
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise DorylusError(f"setting {key!r}: {part} is not a table")
        node[parts[-1]] = value
    return config


def check_config(config: dict, where: str = "configuration") -> dict:
    unknown = set(config) - set(SECTIONS)
    if unknown:
        raise DorylusError(f"{where}: unknown section(s) {', '.join(sorted(unknown))}; known: {', '.join(SECTIONS)}")
    for section, keys in SECTIONS.items():
        table = config.setdefault(section, {})
        if not isinstance(table, dict):
            raise DorylusError(f"{where}: [{section}] must be a table")
        if keys is not None and set(table) - keys:
            raise DorylusError(
                f"{where}: unknown key(s) {', '.join(sorted(set(table) - keys))} in [{section}]; known: {', '.join(sorted(keys))}"
            )
    if "source" not in config["ingest"]:
        raise DorylusError(f"{where}: [ingest] needs a source, e.g. source = \"planetoid:cora\"")
    return config

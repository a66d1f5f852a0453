"""The pricing table (``infra/pricing.toml``): loading and checking it.

The table is data, not code: the evaluate stage takes it as a parameter, so its content
(dates, region, prices) is part of every evaluation's key and manifest.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from stages.errors import DorylusError

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "infra" / "pricing.toml"
REQUIRED = {
    "meta": ("as_of", "region", "currency"),
    "lambda": ("gb_second", "per_request"),
    "deployment": ("graph_server", "parameter_server", "gpu_graph_server"),
}


def load_pricing(path: str | Path | None = None) -> dict:
    """The pricing table at ``path`` (default ``infra/pricing.toml``), checked."""
    path = Path(path) if path else DEFAULT_PATH
    if not path.is_file():
        raise DorylusError(f"pricing table {path} not found; pass --pricing FILE (see infra/pricing.toml for the format)")
    try:
        table = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise DorylusError(f"pricing table {path} is not valid TOML: {exc}") from None
    check_pricing(table, str(path))
    return table


def check_pricing(table: dict, where: str = "pricing table") -> None:
    for section, keys in REQUIRED.items():
        missing = [k for k in keys if k not in table.get(section, {})]
        if missing:
            raise DorylusError(f"{where}: [{section}] lacks {', '.join(missing)}; see infra/pricing.toml for the format")
    ec2 = table.get("ec2", {})
    for role in REQUIRED["deployment"]:
        instance = table["deployment"][role]
        if instance not in ec2:
            raise DorylusError(f"{where}: [deployment] {role} = {instance!r} has no price in [ec2]; add it")
    prices = {f"ec2.{k}": v for k, v in ec2.items()} | {f"lambda.{k}": table["lambda"][k] for k in REQUIRED["lambda"]}
    for name, value in prices.items():
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
            raise DorylusError(f"{where}: {name} = {value!r} is not a non-negative number")


def instance_price(table: dict, instance: str) -> float:
    """$ per hour of an EC2 instance type."""
    try:
        return float(table["ec2"][instance])
    except KeyError:
        known = ", ".join(sorted(table.get("ec2", {})))
        raise DorylusError(f"no price for instance type {instance!r} in the pricing table; known: {known}") from None

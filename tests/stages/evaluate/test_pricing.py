import pytest

from stages.errors import DorylusError
from stages.evaluate.pricing import check_pricing, instance_price, load_pricing


def test_missing_or_broken_tables_are_user_errors(tmp_path):
    with pytest.raises(DorylusError, match="not found"):
        load_pricing(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[meta\n")
    with pytest.raises(DorylusError, match="not valid TOML"):
        load_pricing(bad)


def test_incomplete_tables_say_what_is_missing():
    table = load_pricing()
    broken = {**table, "lambda": {"gb_second": 1e-5}}
    with pytest.raises(DorylusError, match=r"\[lambda\] lacks per_request"):
        check_pricing(broken)
    unpriced = {**table, "deployment": {**table["deployment"], "graph_server": "x9.huge"}}
    with pytest.raises(DorylusError, match="x9.huge"):
        check_pricing(unpriced)
    negative = {**table, "ec2": {**table["ec2"], "c5.xlarge": -1}}
    with pytest.raises(DorylusError, match="non-negative"):
        check_pricing(negative)
    with pytest.raises(DorylusError, match="no price for instance type"):
        instance_price(table, "m1.small")

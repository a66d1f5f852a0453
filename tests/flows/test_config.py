import pytest

from flows.config import apply_overrides, check_config, load_config, parse_value, presets
from stages.errors import DorylusError


def test_default_preset_and_overrides_keep_types():
    config = load_config(None, ["train.epochs=7", "evaluate.target_accuracy=0.5", "train.staleness=sync", 'ingest.root="/x"'])
    assert config["train"]["epochs"] == 7 and config["evaluate"]["target_accuracy"] == 0.5
    assert config["train"]["staleness"] == "sync" and config["ingest"]["root"] == "/x"
    assert config["ingest"]["source"].startswith("synthetic:")
    assert "default" in presets() and not any(p.startswith("experiment-") for p in presets())


def test_parse_value_reads_toml_and_falls_back_to_text():
    assert parse_value("[10, 25]") == [10, 25] and parse_value("true") is True and parse_value("abc") == "abc"
    assert parse_value('"0"') == "0" and parse_value("0") == 0


def test_config_mistakes_are_user_errors(tmp_path):
    with pytest.raises(DorylusError, match="SECTION.KEY=VALUE"):
        apply_overrides({}, ["epochs"])
    with pytest.raises(DorylusError, match="unknown key"):
        load_config(None, ["partition.pieces=3"])
    with pytest.raises(DorylusError, match="unknown section"):
        check_config({"ingest": {"source": "x"}, "trian": {}})
    with pytest.raises(DorylusError, match="needs a source"):
        check_config({})
    with pytest.raises(DorylusError, match="no configuration file or preset"):
        load_config("nosuchpreset")
    bad = tmp_path / "bad.toml"
    bad.write_text("[train\n")
    with pytest.raises(DorylusError, match="not valid TOML"):
        load_config(str(bad))
    with pytest.raises(DorylusError, match="not found"):
        load_config(str(tmp_path / "missing.toml"))


def test_a_toml_file_is_a_run_configuration(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('[ingest]\nsource = "planetoid:cora"\n[partition]\nparts = 3\n')
    config = load_config(str(path), ["partition.parts=4"])
    assert config["partition"]["parts"] == 4 and config["train"] == {}

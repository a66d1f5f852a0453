"""The images' Python packages (stages/build/wheelhouse.py)."""

from __future__ import annotations

from importlib import metadata

import pytest

from stages.build import wheelhouse
from stages.errors import DorylusError


def test_lock_pins_the_installed_runtime_closure():
    pins = wheelhouse.lock(wheelhouse.runtime_requirements())
    assert pins["torch"] == metadata.version("torch")
    assert pins["numpy"] == metadata.version("numpy")
    # extras are followed: dask[distributed,dataframe] brings distributed and pandas
    assert pins["distributed"] == metadata.version("distributed") and "pandas" in pins
    # transitive requirements are followed: boto3 -> botocore -> jmespath
    assert "jmespath" in pins
    for driver_only in wheelhouse.DRIVER_ONLY:
        assert driver_only not in pins
    assert wheelhouse.lock_text(pins).splitlines()[0] == f"{next(iter(pins))}=={pins[next(iter(pins))]}"


def test_missing_package_is_a_clear_error():
    from packaging.requirements import Requirement

    with pytest.raises(DorylusError, match="no-such-dorylus-package"):
        wheelhouse.lock([Requirement("no-such-dorylus-package")])


def test_fetch_downloads_once_then_reuses_the_cache(tmp_path, monkeypatch):
    req = tmp_path / "requirements.txt"
    req.write_text("# comment\nsix==1.17.0\nsimplejson==3.20.2\n")
    cache = tmp_path / "cache"
    wheelhouse.fetch(req, tmp_path / "a", cache, "3.11")
    assert sorted(p.name.split("-")[0] for p in (tmp_path / "a").iterdir()) == ["simplejson", "six"]
    assert "cp311" in next((tmp_path / "a").glob("simplejson-*")).name
    # offline now: an unusable index proves the second fetch downloads nothing
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    wheelhouse.fetch(req, tmp_path / "b", cache, "3.11")
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == sorted(p.name for p in (tmp_path / "a").iterdir())


def test_fetch_reports_a_pin_that_has_no_wheel(tmp_path):
    req = tmp_path / "requirements.txt"
    req.write_text("six==0.0.0\n")
    with pytest.raises(DorylusError, match="could not fetch wheels"):
        wheelhouse.fetch(req, tmp_path / "out", tmp_path / "cache", "3.11")

import json

import pytest

from flows import lockfile
from stages.errors import DorylusError


def _entry(key, digest, outputs):
    return {"key": key, "version": "1", "code_digest": "c", "params": {}, "inputs": {}, "uri": f"/s/{key}", "digest": digest, "outputs": outputs}


def test_lock_records_git_and_packages_and_round_trips(tmp_path):
    data = lockfile.lock({"ingest": {"source": "x"}}, "/store", {}, {"report": "r.md"})
    data["stages"] = {"ingest": _entry("k1", "d1", {"a": "1"})}
    assert data["git"]["commit"] and len(data["git"]["commit"]) == 40  # this checkout is a git repository
    assert data["packages"]["prefect"] and data["packages"]["torch"].startswith("2.13")
    path = lockfile.write_lock(data, tmp_path / "run.lock.json")
    assert lockfile.read_lock(path) == json.loads(json.dumps(data, default=str))
    assert lockfile.read_lock(None)["stages"] == data["stages"]  # latest.lock.json


def test_compare_names_the_stages_and_files_that_differ():
    locked = {"stages": {"ingest": _entry("k1", "d1", {"a": "1"}), "train": _entry("k2", "d2", {"w": "1", "m": "1"})},
              "git": {"commit": "abc"}, "packages": {"torch": "2.13.0"}}
    again = {"stages": {"ingest": _entry("k1", "d1", {"a": "1"}), "train": _entry("k2", "d9", {"w": "1", "m": "2"})},
             "git": {"commit": "abc"}, "packages": {"torch": "2.14.0"}}
    report = lockfile.compare(locked, again)
    assert report["stages"]["ingest"]["digest_matches"] and not report["stages"]["train"]["digest_matches"]
    assert report["stages"]["train"]["key_matches"] and report["stages"]["train"]["files_differing"] == ["m"]
    assert not report["all_digests_match"] and report["git"]["same_commit"]
    assert report["package_differences"] == {"torch": {"locked": "2.13.0", "now": "2.14.0"}}


def test_bad_lock_files_are_user_errors(tmp_path):
    with pytest.raises(DorylusError, match="not found"):
        lockfile.read_lock(tmp_path / "none.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(DorylusError, match="bad JSON"):
        lockfile.read_lock(bad)
    bad.write_text('{"stages": {}}')
    with pytest.raises(DorylusError, match="not a dorylus lock file"):
        lockfile.read_lock(bad)

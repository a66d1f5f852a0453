"""The build stage (stages/build/__init__.py) against a real Docker engine."""

from __future__ import annotations


import pytest

from stages.build import IMAGES_FILE, build, images
from stages.build.context import IMAGES
from stages.errors import DorylusError


def test_builds_both_images_tagged_by_content(built_images, docker_client):
    spec = images(built_images)
    assert spec["status"] == "built"
    assert set(spec["images"]) == set(IMAGES)
    for name, image in spec["images"].items():
        digest = built_images.manifest["params"]["images"][name]
        assert image["tag"] == f"dorylus/{name}:{digest}"
        engine_image = docker_client.images.get(image["tag"])
        assert engine_image.id == image["id"]
        assert engine_image.labels["dorylus.digest"] == digest
        assert image["base_image_id"] == docker_client.images.get(image["base_image"]).id
    assert built_images.manifest["outputs"][IMAGES_FILE]["size"] > 0


def test_unchanged_code_is_a_cache_hit_and_builds_nothing(built_images, docker_host):
    # compared with a build made here, not the session's: others may edit the checkout meanwhile
    store = _store_of(built_images, "unchanged")
    first = build(store=store)
    again = build(store=store)
    assert again.cached and again.key == first.key
    # a new store still finds the images by their content tags in the engine
    fresh = build(store=_store_of(built_images, "other"))
    assert not fresh.cached and fresh.summary["rebuilt"] == []
    assert images(fresh)["images"] == images(first)["images"]


def test_lost_image_is_built_again(built_images, docker_client):
    store = _store_of(built_images, "lost")
    first = build(store=store)
    lost = images(first)["images"]["lambda"]
    # drop the tagged image only: its layers stay cached, so rebuilding it is quick
    docker_client.images.remove(lost["tag"], noprune=True)
    again = build(store=store)
    assert again.key == first.key and again.summary["rebuilt"] == ["lambda"]
    assert docker_client.images.get(lost["tag"]).id == images(again)["images"]["lambda"]["id"]


def test_no_engine_is_reported_as_skipped(monkeypatch, store):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    artifact = build(store=store)
    assert artifact.summary["status"] == "skipped"
    assert "no Docker engine" in artifact.summary["reason"] and "start-docker.sh" in artifact.summary["reason"]
    assert images(artifact) == {"status": "skipped", "reason": artifact.summary["reason"], "images": {}}


def test_require_images_turns_skipped_into_an_error_and_writes_nothing(monkeypatch, store, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(DorylusError, match="no Docker engine"):
        build(store=store, require_images=True)
    assert not any((tmp_path / "store").rglob("manifest.json"))


def test_missing_base_image_is_reported(docker_host, store):
    artifact = build(store=store, base_image="dorylus/no-such-base:1")
    assert artifact.summary["status"] == "skipped"
    assert "make-base-image.sh" in artifact.summary["reason"]
    with pytest.raises(DorylusError, match="dorylus/no-such-base:1"):
        build(store=store, base_image="dorylus/no-such-base:1", require_images=True)


def test_a_skipped_result_is_not_reused_once_an_engine_answers(monkeypatch, built_images):
    store = _store_of(built_images)
    with monkeypatch.context() as m:
        m.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        skipped = build(store=store)
    built = build(store=store)
    assert built.summary["status"] == "built" and built.key != skipped.key


def _store_of(artifact, sub: str | None = None):
    from pathlib import Path

    from stages.store import ArtifactStore

    root = Path(artifact.uri).parents[1]
    return ArtifactStore.open(str(root / sub) if sub else str(root))

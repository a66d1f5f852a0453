"""The Docker engine wrapper (stages/build/engine.py) against a real engine."""

from __future__ import annotations

import pytest

from stages.build import engine
from stages.errors import DorylusError


def test_connect_reports_why_no_engine_answers(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    eng = engine.connect()
    assert not eng.available
    assert "unix:///nonexistent/docker.sock" in eng.reason and "start-docker.sh" in eng.reason


def test_connect_finds_the_running_engine(docker_host):
    eng = engine.connect()
    assert eng.available and eng.reason == ""


@pytest.mark.parametrize(
    "ref, registry",
    [
        ("public.ecr.aws/lambda/python:3.12", True),
        ("123456789012.dkr.ecr.us-east-1.amazonaws.com/dorylus/lambda:abc", True),
        ("localhost/base:1", True),
        ("registry:5000/base", True),
        ("dorylus/debian-python:bookworm", False),
        ("python:3.11", False),
    ],
)
def test_only_references_that_name_a_registry_are_pulled(ref, registry):
    assert engine._names_registry(ref) is registry


def test_base_image_id(docker_host, docker_client):
    eng = engine.connect()
    image_id, reason = engine.base_image_id(eng, "dorylus/debian-python:bookworm")
    assert image_id == docker_client.images.get("dorylus/debian-python:bookworm").id and reason == ""
    missing, reason = engine.base_image_id(eng, "dorylus/missing-base:0")
    assert missing is None and "make-base-image.sh" in reason


def test_build_streams_and_returns_the_image_id(docker_host, docker_client, tmp_path):
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "Dockerfile").write_text(
        "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\nRUN echo built > /marker\n"
    )
    eng = engine.connect()
    tag = "dorylus/engine-test:ok"
    try:
        image_id = engine.build(eng, tmp_path, "img/Dockerfile", tag, {"BASE_IMAGE": "dorylus/debian-python:bookworm"}, {"t": "1"})
        assert docker_client.images.get(tag).id == image_id
        assert docker_client.containers.run(tag, ["cat", "/marker"], remove=True) == b"built\n"
    finally:
        docker_client.images.remove(tag, force=True)


def test_failed_build_raises_with_the_output(docker_host, tmp_path):
    (tmp_path / "Dockerfile").write_text("FROM dorylus/debian-python:bookworm\nRUN echo about to fail && false\n")
    with pytest.raises(DorylusError, match="building dorylus/engine-test:bad failed") as err:
        engine.build(engine.connect(), tmp_path, "Dockerfile", "dorylus/engine-test:bad", {}, {})
    assert "about to fail" in str(err.value)

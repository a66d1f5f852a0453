"""The Docker engine, through the Docker SDK: connect, find the base image, build.

The engine is whatever ``DOCKER_HOST`` names (default ``unix:///var/run/docker.sock``);
``infra/local/start-docker.sh`` starts one on a machine without. Only the engine's legacy
builder is used: the SDK cannot drive BuildKit, and the Dockerfiles need nothing more.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from stages.errors import DorylusError

log = logging.getLogger("dorylus.build")

HOW_TO_START = "start one with `eval $(infra/local/start-docker.sh)` (or `export DOCKER_HOST=...`)"
HOW_TO_BASE = "make it with `infra/local/make-base-image.sh` or pass another --base-image"


@dataclass
class Engine:
    client: object | None  # docker.DockerClient when the engine answers
    reason: str = ""  # why not, when it does not

    @property
    def available(self) -> bool:
        return self.client is not None


def connect() -> Engine:
    """The engine if one answers, else the reason none does (never raises)."""
    import docker

    where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    try:
        client = docker.from_env(timeout=600)  # builds of large layers hold one request open
        client.ping()
    except Exception as exc:  # DockerException, connection or permission errors alike
        return Engine(None, f"no Docker engine answers at {where} ({_first_line(exc)}); {HOW_TO_START}")
    return Engine(client)


def base_image_id(engine: Engine, ref: str) -> tuple[str | None, str]:
    """``(image id, "")`` of the base image, pulling it if it names a registry; else ``(None, reason)``."""
    import docker

    try:
        return engine.client.images.get(ref).id, ""
    except docker.errors.ImageNotFound:
        pass
    if not _names_registry(ref):
        return None, f"base image {ref} is not in the engine and names no registry to pull from; {HOW_TO_BASE}"
    try:
        log.info("pulling base image %s", ref)
        return engine.client.images.pull(ref).id, ""
    except docker.errors.APIError as exc:
        return None, f"could not pull base image {ref} ({_first_line(exc)}); {HOW_TO_BASE}"


def _names_registry(ref: str) -> bool:
    # Docker's own rule: a first component with a dot or a colon (or localhost) is a registry host
    first = ref.split("/", 1)[0]
    return "/" in ref and ("." in first or ":" in first or first == "localhost")


def image_id(engine: Engine, tag: str) -> str | None:
    import docker

    try:
        return engine.client.images.get(tag).id
    except docker.errors.ImageNotFound:
        return None


def build(engine: Engine, context: Path, dockerfile: str, tag: str, buildargs: dict[str, str], labels: dict[str, str]) -> str:
    """Build ``tag`` from ``context``; returns the image id. Build output goes to the log."""
    image = None
    last = []
    stream = engine.client.api.build(
        path=str(context), dockerfile=dockerfile, tag=tag, buildargs=buildargs, labels=labels,
        rm=True, forcerm=True, pull=False, decode=True,
        network_mode="host",  # the wheels are served on the host's loopback (context.serve_wheels)
    )
    for chunk in stream:
        if "error" in chunk or "errorDetail" in chunk:
            detail = chunk.get("error") or chunk.get("errorDetail", {}).get("message", "")
            raise DorylusError(f"building {tag} failed: {detail.strip()}\n" + "".join(last[-20:]))
        if "stream" in chunk:
            text = chunk["stream"]
            last.append(text)
            if text.strip():  # the steps at INFO, their output at DEBUG
                level = logging.INFO if text.startswith("Step ") else logging.DEBUG
                log.log(level, "%s | %s", tag.split(":")[0], text.rstrip())
        if "aux" in chunk and "ID" in chunk["aux"]:
            image = chunk["aux"]["ID"]
    image = image or image_id(engine, tag)
    if image is None:
        raise DorylusError(f"the engine finished building {tag} but has no such image:\n" + "".join(last[-20:]))
    return image


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]

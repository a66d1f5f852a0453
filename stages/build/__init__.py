"""The build stage: the graph-server and Lambda container images, tagged by content.

``build()`` computes each image's content digest from the sources (see ``context``) and
runs the stage with those digests among its parameters, so the stage key changes exactly
when an image would. The stage builds the images with the Docker SDK, skipping any whose
tag the engine already holds, optionally pushes them to ECR, and writes ``images.json``:

    {"status": "built", "images": {"graph-server": {"tag", "id", "digest", "size",
     "base_image", "base_image_id", ["repository", "image_uri", "registry_digest"]}, ...}}

Without a Docker engine (or without the base image) there is nothing to build here: the
stage records ``"status": "skipped"`` with the reason, unless images are required.
"""

from __future__ import annotations

import json
import logging
import tempfile
from contextlib import ExitStack
from pathlib import Path

from stages.build import context, ecr, engine, wheelhouse
from stages.config import cache_dir
from stages.contract import Artifact, Stage, StageContext, run_stage
from stages.errors import DorylusError
from stages.store import ArtifactStore

VERSION = "1"
DEFAULT_BASE_IMAGE = "dorylus/debian-python:bookworm"
DEFAULT_PYTHON = "3.11"
DEFAULT_REPOSITORY_PREFIX = "dorylus"
IMAGES_FILE = "images.json"

log = logging.getLogger("dorylus.build")


def build(
    *,
    store: ArtifactStore | None = None,
    push: bool = False,
    require_images: bool = False,
    force: bool = False,
    base_image: str = DEFAULT_BASE_IMAGE,
    python_version: str = DEFAULT_PYTHON,
    repository_prefix: str = DEFAULT_REPOSITORY_PREFIX,
) -> Artifact:
    """Build (and with ``push`` push) both images; cached by their content digests.

    ``require_images`` turns "no engine here" from a ``skipped`` result into an error.
    """
    root = context.checkout()
    eng = engine.connect()
    base_id, reason = engine.base_image_id(eng, base_image) if eng.available else (None, eng.reason)
    if base_id is None:
        if require_images or push:
            raise DorylusError(f"cannot build the images: {reason}")
        log.warning("build skipped: %s", reason)
    lock = wheelhouse.lock_text(wheelhouse.lock(wheelhouse.runtime_requirements()))
    source = context.source_listing(root)
    buildargs = {"BASE_IMAGE": base_image}
    params = {
        "base_image": base_image,
        "base_image_id": base_id,  # None: skipped, and a later run with an engine is a new key
        "python_version": python_version,
        "push": push,
        "repository_prefix": repository_prefix if push else None,
        "images": {
            name: context.image_digest(root, name, lock, source, base_id, python_version, buildargs)
            for name in context.IMAGES
        },
        "lock": lock,
    }
    store = store or ArtifactStore.open()
    artifact = run_stage(STAGE, params, store=store, force=force)
    if artifact.cached and base_id is not None and not _images_present(eng, artifact):
        log.info("build: the engine lost the cached images; building them again")
        artifact = run_stage(STAGE, params, store=store, force=True)
    return artifact


def _images_present(eng: engine.Engine, artifact: Artifact) -> bool:
    images = json.loads((artifact.path() / IMAGES_FILE).read_text())["images"]
    return all(engine.image_id(eng, spec["tag"]) == spec["id"] for spec in images.values())


def _run(ctx: StageContext) -> dict:
    p = ctx.params
    eng = engine.connect()
    if p["base_image_id"] is None:
        reason = eng.reason if not eng.available else engine.base_image_id(eng, p["base_image"])[1]
        (ctx.out / IMAGES_FILE).write_text(json.dumps({"status": "skipped", "reason": reason, "images": {}}, indent=2))
        return {"status": "skipped", "reason": reason}
    if not eng.available:
        raise DorylusError(f"the Docker engine went away during the build: {eng.reason}")

    images, rebuilt = {}, []
    with ExitStack() as stack:
        wheels_url = None
        for name, digest in p["images"].items():
            tag = f"dorylus/{name}:{digest}"
            image_id = engine.image_id(eng, tag)
            if image_id is None:  # unchanged content keeps its tag: only new content is built
                if wheels_url is None:
                    tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="dorylus-build-")))
                    with ctx.timer("context"):
                        build_context, wheels = context.assemble(tmp, context.checkout(), p["lock"],
                                                                 p["python_version"], cache_dir("wheels"))
                    wheels_url = stack.enter_context(context.serve_wheels(wheels, p["lock"]))
                with ctx.timer(f"build_{name}"):
                    image_id = engine.build(eng, build_context, f"{name}/Dockerfile", tag,
                                            {"BASE_IMAGE": p["base_image"], "WHEELS": wheels_url},
                                            {"dorylus.image": name, "dorylus.digest": digest})
                rebuilt.append(name)
            image = eng.client.images.get(image_id)
            images[name] = {
                "tag": tag, "id": image_id, "digest": digest, "size": image.attrs.get("Size"),
                "base_image": p["base_image"], "base_image_id": p["base_image_id"],
            }
            if p["push"]:
                with ctx.timer(f"push_{name}"):
                    images[name].update(ecr.push(eng, tag, f"{p['repository_prefix']}/{name}", digest))
    (ctx.out / IMAGES_FILE).write_text(json.dumps({"status": "built", "images": images}, indent=2))
    summary = {"status": "built", "rebuilt": rebuilt, "pushed": bool(p["push"])}
    for name, spec in images.items():
        summary[f"{name}_image"] = spec.get("image_uri", spec["tag"])
        summary[f"{name}_size_mb"] = round((spec["size"] or 0) / 2**20, 1)
    return summary


STAGE = Stage(name="build", version=VERSION, package="stages.build", run=_run)


def images(artifact: Artifact) -> dict:
    """The ``images.json`` of a build artifact: status, and per image its tag, id and URIs."""
    return json.loads((artifact.path() / IMAGES_FILE).read_text())

"""The tensor-worker Lambda on a local moto server: the function's code and a runtime image.

On AWS the function runs the Lambda image (``containers/lambda``, deployed by the
CloudFormation stack). moto's Lambda instead runs every invocation in a container of a
*runtime* image with the function's zip unpacked in /var/task, and it cannot pull AWS's
runtime images here. So, for local runs against moto:

- ``function_zip()``: the function's code, the project's ``stages`` package (sources only,
  a few hundred kB). Its dependencies (torch, numpy, pyzmq) come from the runtime image.
- ``runtime_image()``: ``infra/local/lambda-runtime``: the local base image with the
  project's pinned runtime packages and a bootstrap that follows moto's calling
  convention (instead of the Lambda Runtime API). Tagged by its content, so it is built
  once per lock (the function's code is not in it: changing the code rebuilds nothing).
- ``volume_holder_image()``: moto unpacks the zip through a helper container of the image
  ``busybox`` that just runs ``sleep``; the local base image does that as well.

Point moto at them with ``MOTO_DOCKER_LAMBDA_IMAGE=<runtime image>`` and, so that the
function reaches the graph servers on 127.0.0.1, ``MOTO_DOCKER_NETWORK_MODE=host``; then
``deploy_function`` creates the function there (or updates its code).
"""

from __future__ import annotations

import io
import shutil
import tempfile
import zipfile
from pathlib import Path

from stages.build import context, engine, wheelhouse
from stages.config import cache_dir
from stages.hashing import sha256_file, sha256_json

RUNTIME_REPOSITORY = "dorylus/lambda-runtime"
HANDLER = "stages.train.worker.handler"
ROLE = "dorylus-tensor-worker"
ROLE_POLICY = ('{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", '
               '"Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]}')
HOLDER_IMAGE = "busybox:latest"
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # fixed timestamps: the same code makes the same zip


def runtime_folder(root: Path | None = None) -> Path:
    return (root or context.checkout()) / "infra" / "local" / "lambda-runtime"


def function_zip(root: Path | None = None) -> bytes:
    """The function's deployment package: ``stages/**/*.py`` of the checkout."""
    root = root or context.checkout()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted((root / "stages").rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            info = zipfile.ZipInfo(path.relative_to(root).as_posix(), _ZIP_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, path.read_bytes())
    return buf.getvalue()


def runtime_image(eng: engine.Engine, base_image: str, python_version: str = "3.11") -> str:
    """Tag of the moto runtime image (built if missing): the base image, the pinned
    runtime packages and the bootstrap, tagged by the digest of all three."""
    folder = runtime_folder()
    lock = wheelhouse.lock_text(wheelhouse.lock(wheelhouse.runtime_requirements()))
    base_id = eng.client.images.get(base_image).id
    files = {p.name: sha256_file(p) for p in sorted(folder.iterdir()) if p.is_file()}
    digest = sha256_json({"base_image_id": base_id, "lock": lock, "files": files, "python": python_version})
    tag = f"{RUNTIME_REPOSITORY}:{digest[:context.TAG_LENGTH]}"
    if engine.image_id(eng, tag) is not None:
        return tag
    with tempfile.TemporaryDirectory(prefix="dorylus-lambda-runtime-") as tmp:
        ctx = Path(tmp) / "context"
        shutil.copytree(folder, ctx)
        (ctx / "requirements.txt").write_text(lock)
        wheels = Path(tmp) / "wheels"
        wheelhouse.fetch(ctx / "requirements.txt", wheels, cache_dir("wheels"), python_version)
        with context.serve_wheels(wheels, lock) as url:
            engine.build(eng, ctx, "Dockerfile", tag, {"BASE_IMAGE": base_image, "WHEELS": url},
                         {"dorylus.image": "lambda-runtime", "dorylus.digest": digest})
    return tag


def volume_holder_image(eng: engine.Engine, base_image: str) -> str:
    """Make sure ``busybox:latest`` exists; if not, tag the local base image as it."""
    if engine.image_id(eng, HOLDER_IMAGE) is None:
        repository, tag = HOLDER_IMAGE.split(":")
        eng.client.images.get(base_image).tag(repository, tag)
    return HOLDER_IMAGE


def deploy_function(name: str, endpoint_url: str, region: str = "us-east-1", memory_mb: int = 3008,
                    code: bytes | None = None, handler: str = HANDLER) -> str:
    """Create the function on a local moto server from ``code`` (default: ``function_zip()``),
    or update its code if it exists; returns its ARN. Not for AWS, whose Python runtime
    lacks torch: there the CloudFormation stack deploys the Lambda image."""
    import boto3

    kw = {"endpoint_url": endpoint_url, "region_name": region}
    iam = boto3.client("iam", **kw)
    try:
        role = iam.get_role(RoleName=ROLE)["Role"]["Arn"]
    except iam.exceptions.NoSuchEntityException:
        role = iam.create_role(RoleName=ROLE, AssumeRolePolicyDocument=ROLE_POLICY)["Role"]["Arn"]
    lam = boto3.client("lambda", **kw)
    code = function_zip() if code is None else code
    try:
        return lam.update_function_code(FunctionName=name, ZipFile=code)["FunctionArn"]
    except lam.exceptions.ResourceNotFoundException:
        return lam.create_function(FunctionName=name, Runtime="python3.11", Role=role, Handler=handler,
                                   Code={"ZipFile": code}, MemorySize=memory_mb, Timeout=300)["FunctionArn"]

"""Pushing images to Amazon ECR: repository with immutable tags, registry login, push.

The tag is the image's content digest, so an immutable tag that exists already holds
this very content and is not pushed again. The registry digest the push reports is what
a Lambda function or a launch template should name (``repository@sha256:...``).
"""

from __future__ import annotations

import base64
import logging

from stages.build.engine import Engine, _first_line
from stages.errors import DorylusError

log = logging.getLogger("dorylus.build")


def ecr_client():
    import boto3

    return boto3.client("ecr")


def ensure_repository(ecr, name: str) -> str:
    """The URI of repository ``name``, created with immutable tags if missing."""
    try:
        repo = ecr.describe_repositories(repositoryNames=[name])["repositories"][0]
    except ecr.exceptions.RepositoryNotFoundException:
        log.info("creating ECR repository %s (immutable tags)", name)
        repo = ecr.create_repository(
            repositoryName=name,
            imageTagMutability="IMMUTABLE",
            imageScanningConfiguration={"scanOnPush": True},
            encryptionConfiguration={"encryptionType": "AES256"},
        )["repository"]
    return repo["repositoryUri"]


def pushed_digest(ecr, name: str, tag: str) -> str | None:
    try:
        found = ecr.describe_images(repositoryName=name, imageIds=[{"imageTag": tag}])["imageDetails"]
    except ecr.exceptions.ImageNotFoundException:
        return None
    return found[0]["imageDigest"] if found else None


def push(engine: Engine, local_tag: str, repository: str, tag: str, ecr=None) -> dict:
    """Push ``local_tag`` as ``<repository>:<tag>``; returns the repository URI and digests."""
    from botocore.exceptions import BotoCoreError, ClientError

    ecr = ecr or ecr_client()
    try:
        uri = ensure_repository(ecr, repository)
        digest = pushed_digest(ecr, repository, tag)
        if digest is None:
            auth = ecr.get_authorization_token()["authorizationData"][0]
    except (BotoCoreError, ClientError) as exc:
        raise DorylusError(f"ECR refused the push of {local_tag} ({_first_line(exc)}); check the AWS credentials and region") from None
    if digest is not None:
        log.info("%s:%s is in ECR already", uri, tag)
        return {"repository": uri, "image_uri": f"{uri}@{digest}", "registry_digest": digest, "pushed": False}

    user, password = base64.b64decode(auth["authorizationToken"]).decode().split(":", 1)
    registry = auth["proxyEndpoint"]
    credentials = {"username": user, "password": password, "serveraddress": registry}
    try:
        engine.client.login(username=user, password=password, registry=registry, reauth=True)
    except Exception as exc:  # the engine reports an unreachable or refusing registry as an APIError
        raise DorylusError(f"docker login to {registry} failed ({_first_line(exc)}); check network access to ECR") from None
    engine.client.images.get(local_tag).tag(uri, tag)
    digest = None
    # the engine answers 200 and reports registry errors inside the stream: read every line
    for line in engine.client.api.push(uri, tag=tag, stream=True, decode=True, auth_config=credentials):
        if "error" in line or "errorDetail" in line:
            detail = line.get("error") or line.get("errorDetail", {}).get("message", "")
            raise DorylusError(f"pushing {uri}:{tag} failed: {detail}")
        digest = line.get("aux", {}).get("Digest", digest)
    if digest is None:
        raise DorylusError(f"pushing {uri}:{tag} reported no digest; check the repository in the ECR console")
    log.info("pushed %s:%s (%s)", uri, tag, digest)
    return {"repository": uri, "image_uri": f"{uri}@{digest}", "registry_digest": digest, "pushed": True}

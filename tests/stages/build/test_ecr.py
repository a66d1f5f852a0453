"""Pushing to ECR (stages/build/ecr.py) against moto's ECR on 127.0.0.1.

moto serves ECR's API but no image registry, so a real ``docker push`` cannot happen
here: these tests cover the repository (created once, immutable tags, encrypted), the
"this content is pushed already" shortcut, and the push path up to the registry login,
which must fail with a clear message rather than hang or push elsewhere.
"""

from __future__ import annotations

import json
import uuid

import boto3
from botocore.config import Config
import pytest

from stages.build import ecr
from stages.build.engine import connect
from stages.errors import DorylusError


@pytest.fixture
def repo_name(moto_server):
    return f"dorylus-test-{uuid.uuid4().hex[:8]}/lambda"


def test_repository_is_created_once_with_immutable_tags(repo_name):
    client = boto3.client("ecr")
    uri = ecr.ensure_repository(client, repo_name)
    assert uri.endswith(f".amazonaws.com/{repo_name}")
    repo = client.describe_repositories(repositoryNames=[repo_name])["repositories"][0]
    assert repo["imageTagMutability"] == "IMMUTABLE"
    assert repo["imageScanningConfiguration"]["scanOnPush"] is True
    assert repo["encryptionConfiguration"]["encryptionType"] == "AES256"
    assert ecr.ensure_repository(client, repo_name) == uri
    assert len([r for r in client.describe_repositories()["repositories"] if r["repositoryName"] == repo_name]) == 1


def test_content_already_in_the_repository_is_not_pushed_again(repo_name):
    client = boto3.client("ecr")
    ecr.ensure_repository(client, repo_name)
    manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                           "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "size": 1,
                                      "digest": "sha256:" + "0" * 64}, "layers": []})
    put = client.put_image(repositoryName=repo_name, imageManifest=manifest, imageTag="0123456789abcdef")
    digest = ecr.pushed_digest(client, repo_name, "0123456789abcdef")
    assert digest == put["image"]["imageId"]["imageDigest"] and digest.startswith("sha256:")
    assert ecr.pushed_digest(client, repo_name, "fedcba9876543210") is None
    # no engine is needed when the tag is there: nothing is pushed
    result = ecr.push(engine=None, local_tag="dorylus/lambda:0123456789abcdef", repository=repo_name,
                      tag="0123456789abcdef", ecr=client)
    assert result["pushed"] is False and result["registry_digest"] == digest
    assert result["image_uri"] == f"{result['repository']}@{digest}"


def test_push_goes_as_far_as_the_registry_login(repo_name, built_images):
    eng = connect()
    tag = json.loads((built_images.path() / "images.json").read_text())["images"]["lambda"]["tag"]
    with pytest.raises(DorylusError, match=r"docker login to https://123456789012\.dkr\.ecr\.us-east-1\.amazonaws\.com failed"):
        ecr.push(eng, tag, repo_name, tag.split(":")[1])
    # the repository was made before the login was tried
    repo = boto3.client("ecr").describe_repositories(repositoryNames=[repo_name])["repositories"][0]
    assert repo["imageTagMutability"] == "IMMUTABLE"


def test_ecr_errors_become_clear_messages(moto_server, monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    client = boto3.client("ecr", config=Config(retries={"max_attempts": 1}, connect_timeout=2))
    with pytest.raises(DorylusError, match="ECR refused the push"):
        ecr.push(None, "dorylus/lambda:x", "dorylus/lambda", "x", ecr=client)

"""The artifact store: where stage outputs live, on the local disk or in S3.

An artifact is a folder ``<store>/<stage>/<key>/`` holding the stage's files and a
``manifest.json``. The manifest is written last, so a folder without one is not an
artifact. Locally a stage writes into a hidden staging folder beside the target and
renames it into place (atomic on one filesystem); on S3 the files are uploaded first and
the manifest last, and a failed upload deletes what it wrote.

S3 goes through boto3; set ``AWS_ENDPOINT_URL`` to use an S3-compatible endpoint.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from stages.config import cache_dir, default_store_uri
from stages.errors import DorylusError
from stages.hashing import sha256_file

MANIFEST = "manifest.json"


def is_s3(uri: str) -> bool:
    return uri.startswith("s3://")


def split_s3(uri: str) -> tuple[str, str]:
    parsed = urlparse(uri)
    if not parsed.netloc:
        raise DorylusError(f"S3 URI {uri!r} has no bucket; write it as s3://BUCKET/PREFIX")
    return parsed.netloc, parsed.path.lstrip("/").rstrip("/")


def s3_client():
    import boto3
    from botocore.config import Config

    return boto3.client("s3", config=Config(retries={"max_attempts": 5, "mode": "standard"}))


def join(uri: str, *parts: str) -> str:
    if is_s3(uri):
        return "/".join([uri.rstrip("/"), *parts])
    return str(Path(uri, *parts))


@dataclass(frozen=True)
class ArtifactStore:
    uri: str

    @classmethod
    def open(cls, uri: str | None = None) -> "ArtifactStore":
        uri = uri or default_store_uri()
        if is_s3(uri):
            split_s3(uri)
            return cls(uri.rstrip("/"))
        if "://" in uri:
            raise DorylusError(f"store {uri!r}: only local paths and s3:// URIs are supported")
        return cls(str(Path(uri).absolute()))

    # --- naming -------------------------------------------------------------------
    def artifact_uri(self, stage: str, key: str) -> str:
        return join(self.uri, stage, key)

    def has(self, stage: str, key: str) -> bool:
        return exists(join(self.artifact_uri(stage, key), MANIFEST))

    def find(self, key_prefix: str) -> list[str]:
        """URIs of artifacts in this store whose key starts with ``key_prefix``."""
        found = []
        if is_s3(self.uri):
            bucket, prefix = split_s3(self.uri)
            paginator = s3_client().get_paginator("list_objects_v2")
            base = f"{prefix}/" if prefix else ""
            for page in paginator.paginate(Bucket=bucket, Prefix=base):
                for obj in page.get("Contents", []):
                    rel = obj["Key"][len(base):].split("/")
                    if len(rel) == 3 and rel[2] == MANIFEST and rel[1].startswith(key_prefix):
                        found.append(join(self.uri, rel[0], rel[1]))
        else:
            root = Path(self.uri)
            if root.is_dir():
                found = [str(p.parent) for p in sorted(root.glob(f"*/{key_prefix}*/{MANIFEST}"))]
        return found

    # --- writing ------------------------------------------------------------------
    def staging_dir(self, stage: str, key: str) -> Path:
        """A fresh empty folder to write an artifact into before :meth:`publish`."""
        if is_s3(self.uri):
            return Path(tempfile.mkdtemp(prefix=f"{stage}-{key}-"))
        parent = Path(self.uri, stage)
        parent.mkdir(parents=True, exist_ok=True)
        path = parent / f".staging-{key}-{uuid.uuid4().hex[:8]}"
        path.mkdir()
        return path

    def publish(self, staging: Path, stage: str, key: str) -> str:
        """Move a finished staging folder (with its manifest) into place; returns its URI."""
        target = self.artifact_uri(stage, key)
        if is_s3(self.uri):
            _upload_folder(staging, target)
            shutil.rmtree(staging, ignore_errors=True)
            return target
        old = None
        if Path(target).exists():  # a forced rerun replaces the old artifact
            old = Path(target).with_name(f".old-{key}-{uuid.uuid4().hex[:8]}")
            os.rename(target, old)
        os.rename(staging, target)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return target

    def discard(self, staging: Path) -> None:
        shutil.rmtree(staging, ignore_errors=True)


def exists(uri: str) -> bool:
    if is_s3(uri):
        from botocore.exceptions import ClientError

        bucket, key = split_s3(uri)
        try:
            s3_client().head_object(Bucket=bucket, Key=key)
            return True
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return False
            raise
    return Path(uri).exists()


def read_manifest(artifact_uri: str) -> dict:
    uri = join(artifact_uri, MANIFEST)
    try:
        if is_s3(uri):
            bucket, key = split_s3(uri)
            body = s3_client().get_object(Bucket=bucket, Key=key)["Body"].read()
        else:
            body = Path(uri).read_bytes()
        return json.loads(body)
    except FileNotFoundError:
        raise DorylusError(f"{artifact_uri} is not an artifact (no {MANIFEST}); pass an artifact URI or key") from None
    except Exception as exc:  # botocore errors, bad JSON
        if "NoSuchKey" in str(exc) or "404" in str(exc):
            raise DorylusError(f"{artifact_uri} is not an artifact (no {MANIFEST}); pass an artifact URI or key") from None
        if isinstance(exc, json.JSONDecodeError):
            raise DorylusError(f"{uri} is corrupt ({exc}); delete the artifact and rerun its stage") from None
        raise


def local_copy(artifact_uri: str, manifest: dict) -> Path:
    """A local folder with the artifact's files: the folder itself, or a verified download."""
    if not is_s3(artifact_uri):
        return Path(artifact_uri)
    target = cache_dir("artifacts") / manifest["stage"] / manifest["key"]
    if (target / MANIFEST).exists():
        return target
    staging = target.with_name(f".dl-{uuid.uuid4().hex[:8]}")
    staging.mkdir(parents=True)
    try:
        bucket, prefix = split_s3(artifact_uri)
        client = s3_client()
        for rel, entry in manifest["outputs"].items():
            dest = staging / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            client.download_file(bucket, f"{prefix}/{rel}", str(dest))
            if sha256_file(dest) != entry["sha256"]:
                raise DorylusError(f"{artifact_uri}/{rel} does not match its manifest checksum; rerun its stage with --force")
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2))
        if target.exists():
            shutil.rmtree(target)
        os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def _upload_folder(folder: Path, target_uri: str) -> None:
    bucket, prefix = split_s3(target_uri)
    client = s3_client()
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST)
    written: list[str] = []
    try:
        for path in files + [folder / MANIFEST]:  # manifest last: it marks the artifact complete
            key = f"{prefix}/{path.relative_to(folder).as_posix()}"
            client.upload_file(str(path), bucket, key)
            written.append(key)
    except BaseException:
        for key in written:
            client.delete_object(Bucket=bucket, Key=key)
        raise

"""Remote dataset roots (``https://``, ``http://`` or ``s3://``): downloaded once, verified, cached.

``local_root`` fetches every file the source names (``required_files``) from
``ROOT/RELATIVE/NAME`` into the download cache (``<state>/cache/downloads``), one folder per
root URL, and returns that folder; a local ``--root`` is returned as it is. Each download
is written under a temporary name, checked, and only then renamed into place, so the
cache holds only complete, verified files and a second call needs no network:

- the size must match the server's Content-Length (HTTP) or ContentLength (S3);
- the sha256 must match the user's ``options["sha256"][RELATIVE]`` if given, otherwise the
  built-in digest of a canonical dataset file (``KNOWN_SHA256``, keyed by file name) if
  there is one. A file with neither is accepted as served (its digest still enters the
  ingest stage key).
"""

from __future__ import annotations

import hashlib
import http.client
import importlib
import logging
import os
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

from stages.config import cache_dir
from stages.errors import DorylusError
from stages.hashing import sha256_file
from stages.ingest import sources

log = logging.getLogger("dorylus.ingest")

# Where the canonical files are published: pass as --root (e.g. planetoid:cora).
PUBLIC_ROOTS = {
    "planetoid": "https://github.com/kimiyoung/planetoid/raw/master/data",
}
PLANETOID_PARTS = ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index")
PLANETOID_URLS = [
    f"{PUBLIC_ROOTS['planetoid']}/ind.{name}.{part}" for name in ("cora", "citeseer", "pubmed") for part in PLANETOID_PARTS
]

# sha256 of canonical dataset files (the shared datasets' README; byte-identical upstream).
KNOWN_SHA256 = {
    "ind.cora.x": "23cfa55d91c6f624233f5eb7b6e3f141f1bd2b2ae39608a63cf5d084bb27baab",
    "ind.cora.y": "94465c14eb53e04ca262198dcbb2521ee8af60fb3f3d546cd6ca24a511b0e7d1",
    "ind.cora.tx": "b9afbaa4a400df991f6f02ef677e1e44da55ffc04801fd02f9e673987829226a",
    "ind.cora.ty": "41f5ac76596a1699cc33f53084a2419e92961c42bb75f36fc38e616d348532ad",
    "ind.cora.allx": "9419ba2f26f5c35243db64aba110e0f35a04851609e0dc5433450676ca6b8543",
    "ind.cora.ally": "2b998f5cc7fedc86e7f97ca2498f47a1ffc1462c29e2d578b23bf3f62b6e7d71",
    "ind.cora.graph": "58f13302f39dde8852dad6fe6d15b89b077b6d7f837626bce671ef80344b383d",
    "ind.cora.test.index": "297ce89af2b51a6a194181c7dbe1796c6a1cf9cd9349a88383b1b1e227867875",
    "ind.citeseer.x": "d20de19150741e555de0ed037195630fc194114ebc7fd72ced62810148aa22f6",
    "ind.citeseer.y": "8ba87e515d8e3ee3cf52f6d2c5b86aa73f11ecad825a808455209ec26cd54924",
    "ind.citeseer.tx": "539a8906a2da97628d212f2fdd668c109a8b3f0d36574b59e5d3fd5b5303da21",
    "ind.citeseer.ty": "55e5bd1ba1e733a04598753ad1a8d57957f4b8f89e74519f41f4f4938767e4ce",
    "ind.citeseer.allx": "2ac30345d95c9ec933a817ee0bdd6a5f077f8c184a20e696910192d534414668",
    "ind.citeseer.ally": "f704b2d986dde6c2669934de1f3ae5696a6cf9455c0f6b2646a2d135ea0a1c95",
    "ind.citeseer.graph": "d79a4ef9d3e7169aee8946145f6b7306e35bc79bffad26346cfb94e10e9912a7",
    "ind.citeseer.test.index": "2af990671580b6b2df5d158d1038f8292e30c9cd821b5453f399659b25b723d4",
    "cora_ml.npz": "ffbe4e64857dc6bf38f1877e4312559a064df84b59d0f32f938717de5d5af0fd",
    "tolokers.npz": "dacf3ac94cec53d03cd2adb5255c08b33dee1656c33ca8164a464bd9450a1667",
    "squirrel.npz": "d436e3b42c0546b105241c0ab0766097074e68e55f67b133eeb9b0162e55cbd9",
    "actor.npz": "c350eef06b2c2a9bf8218be2b57cac6d4003d0922eb597a039e9123f75817816",
    "facebook.json": "ea870537646a93642a0008d38aa9bfeff02018070ba97b1f3f469d9622626436",
    "facebook_edges.csv": "7c50d8f02a75cc0829577814a1fc14535164daa38d79c3612340c9e9cdbd4022",
    "facebook_target.csv": "7bd96eafea3c2ca40f44bfa9e73642194696c21e38c7b29ed409c32ad14075cd",
    "Cornell5.mat": "d9ff76ae34e855cb77b0779a3a320f7f73f848901cb13352e2734c17804c4aec",
}

REMOTE_SCHEMES = ("http", "https", "s3")
_BLOCK = 1 << 20
_TIMEOUT_S = 60


def is_remote(root: str | None) -> bool:
    return root is not None and urlparse(root).scheme in REMOTE_SCHEMES


def local_root(root: str | None, source: str, options: dict) -> Path | None:
    """A local folder holding the files ``source`` reads from ``root``."""
    if root is None:
        return None
    if not is_remote(root):
        if "://" in root:
            raise DorylusError(f"--root {root}: only https://, http:// and s3:// URLs or a local folder are supported")
        return Path(root)
    files = _names(source, options)
    expected = dict(options.get("sha256") or {})
    unknown = sorted(set(expected) - set(files))
    if unknown:
        raise DorylusError(
            f"--sha256 names {', '.join(unknown)}, which {source!r} does not read from --root "
            f"(it reads {', '.join(files) or 'nothing'}); use those names"
        )
    folder = cache_dir("downloads") / hashlib.sha256(root.rstrip("/").encode()).hexdigest()[:24]
    for rel in files:
        target = folder / rel
        digest = expected.get(rel) or KNOWN_SHA256.get(Path(rel).name)
        # only complete, verified files are ever renamed into the cache; a digest the
        # cached copy does not match (a new --sha256) means fetching and checking again
        if target.is_file() and (digest is None or sha256_file(target) == digest.lower()):
            continue
        fetch(f"{root.rstrip('/')}/{rel}", target, digest)
    return folder


def _names(source: str, options: dict) -> list[str]:
    """The files ``source`` reads, relative to the root (they become URL paths)."""
    kind, argument = sources.parse(source)
    module = importlib.import_module(f"stages.ingest.sources.{sources.KINDS[kind]}")
    names = module.required_files(argument, options)
    for name in names:
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise DorylusError(f"{source!r}: {name} must be a path relative to the remote --root")
    return names


def fetch(url: str, target: Path, sha256: str | None = None) -> None:
    """Download ``url`` to ``target`` via a temporary file; verify size and checksum."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.part")
    log.info("downloading %s", url)
    try:
        with open(partial, "wb") as out:
            size, digest, announced = _copy(url, out)
        if announced is not None and size != announced:
            raise DorylusError(f"{url}: received {size} bytes but the server announced {announced}; try again")
        if sha256 is not None and digest != sha256.lower():
            raise DorylusError(
                f"{url}: sha256 {digest} does not match the expected {sha256}; the file is corrupt or a "
                "different version (nothing was cached). Check the URL or the --sha256 value"
            )
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)


def _copy(url: str, out) -> tuple[int, str, int | None]:
    """Stream ``url`` into ``out``; returns (bytes, sha256 hex, announced length)."""
    h = hashlib.sha256()
    size = 0
    with _Remote(url) as (stream, announced):
        try:
            while block := stream.read(_BLOCK):
                h.update(block)
                out.write(block)
                size += len(block)
        except (OSError, http.client.HTTPException) as exc:
            raise DorylusError(f"download of {url} broke off after {size} bytes ({exc!r}); try again") from None
        except Exception as exc:  # botocore's read errors, without importing botocore for http
            if type(exc).__module__.startswith(("botocore", "urllib3")):
                raise DorylusError(f"download of {url} broke off after {size} bytes ({exc}); try again") from None
            raise
    return size, h.hexdigest(), announced


class _Remote:
    """A readable stream for an http(s) or s3 URL, and its announced length."""

    def __init__(self, url: str):
        self.url = url
        self.stream = None

    def __enter__(self):
        parsed = urlparse(self.url)
        if parsed.scheme == "s3":
            return self._s3(parsed.netloc, parsed.path.lstrip("/"))
        try:
            self.stream = urllib.request.urlopen(self.url, timeout=_TIMEOUT_S)  # noqa: S310 (scheme checked)
        except urllib.error.HTTPError as exc:
            raise DorylusError(f"cannot download {self.url}: HTTP {exc.code} {exc.reason}; check --root and the file name") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise DorylusError(f"cannot download {self.url}: {reason}; check --root and the network") from None
        length = self.stream.headers.get("Content-Length")
        return self.stream, int(length) if length is not None else None

    def _s3(self, bucket: str, key: str):
        import boto3
        import botocore.exceptions

        try:
            reply = boto3.client("s3").get_object(Bucket=bucket, Key=key)
        except botocore.exceptions.ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "error")
            raise DorylusError(f"cannot download {self.url}: {code}; check the bucket, the key and your AWS credentials") from None
        except botocore.exceptions.BotoCoreError as exc:
            raise DorylusError(f"cannot download {self.url}: {exc}") from None
        self.stream = reply["Body"]
        return self.stream, int(reply["ContentLength"])

    def __exit__(self, *exc):
        if self.stream is not None:
            self.stream.close()
        return False

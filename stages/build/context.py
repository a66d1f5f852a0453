"""The build context of the images and its content digest (the images' tags).

One context folder serves both images:

    runtime/requirements.txt  pinned runtime packages (see ``wheelhouse``)
    project/                  the project's own wheel, built from the checkout
    graph-server/, lambda/    the Dockerfiles and entry points (``containers/``)

The wheels stay outside it, in a folder served over HTTP on 127.0.0.1 while the images
build on the host network (``serve_wheels``): the Dockerfiles install from that URL, so
no wheel is sent with the context or left in a layer, and no multi-stage copy of the
1.5 GB virtualenv is needed.

The digest of an image covers everything that decides its content: its Dockerfile
folder, the lock, the project's source, the base image id, the Python version and the
build arguments. It is computed from the sources before anything is assembled, so an
unchanged checkout finds its image by tag and builds nothing.
"""

from __future__ import annotations

import hashlib
import http.server
import os
import shutil
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import stages
from stages.build import wheelhouse
from stages.errors import DorylusError
from stages.hashing import sha256_file, sha256_json

IMAGES = ("graph-server", "lambda")
PROJECT_PACKAGES = ("stages", "flows")
TAG_LENGTH = 16  # hex digits: what Docker shows and plenty against collisions here


def checkout() -> Path:
    """The source checkout the images are built from (it holds ``containers/``)."""
    root = Path(stages.__file__).resolve().parents[1]
    if not (root / "containers").is_dir() or not (root / "pyproject.toml").is_file():
        raise DorylusError(
            f"building images needs the project's source checkout, with containers/ and pyproject.toml, "
            f"but stages is imported from {root}; install the project with `pip install -e .` from a checkout"
        )
    return root


def _files(folder: Path) -> list[Path]:
    return sorted(
        p for p in folder.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc" and not p.name.startswith(".")
    )


def source_listing(root: Path) -> dict[str, str]:
    """``{relative path: sha256}`` of what goes into the project wheel."""
    listing = {"pyproject.toml": sha256_file(root / "pyproject.toml")}
    for package in PROJECT_PACKAGES:
        for path in _files(root / package):
            listing[path.relative_to(root).as_posix()] = sha256_file(path)
    return listing


def image_digest(root: Path, image: str, lock: str, source: dict[str, str], base_image_id: str | None,
                 python_version: str, buildargs: dict[str, str]) -> str:
    folder = root / "containers" / image
    return sha256_json(
        {
            "image": image,
            "files": {p.relative_to(folder).as_posix(): sha256_file(p) for p in _files(folder)},
            "lock": lock,
            "source": source,
            "base_image_id": base_image_id,
            "python": python_version,
            "buildargs": buildargs,
        }
    )[:TAG_LENGTH]


def assemble(dest: Path, root: Path, lock: str, python_version: str, wheel_cache: Path) -> tuple[Path, Path]:
    """Write the build context and the wheels beside it into ``dest`` (an empty folder).

    Returns ``(context folder, wheels folder)``; the wheels folder has ``runtime/`` and
    ``lambda/`` below it.
    """
    context, wheels = dest / "context", dest / "wheels"
    (context / "runtime").mkdir(parents=True)
    (context / "runtime" / "requirements.txt").write_text(lock)
    wheelhouse.fetch(context / "runtime" / "requirements.txt", wheels / "runtime", wheel_cache, python_version)
    for image in IMAGES:
        shutil.copytree(root / "containers" / image, context / image, ignore=shutil.ignore_patterns(".*", "__pycache__"))
    wheelhouse.fetch(context / "lambda" / "requirements.txt", wheels / "lambda", wheel_cache, python_version)
    _project_wheel(root, context / "project")
    return context, wheels


@contextmanager
def serve_wheels(folder: Path, lock: str) -> Iterator[str]:
    """Serve ``folder`` on 127.0.0.1 for the length of a build; yields its URL.

    The port follows from the lock, because the URL is a build argument and a different
    one would defeat the engine's layer cache; a taken port falls back to a free one.
    """
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(folder), **kwargs)

        def log_message(self, *args):
            pass

    port = 40000 + int(hashlib.sha256(lock.encode()).hexdigest()[:8], 16) % 10000
    try:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Quiet)
    except OSError:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, name="wheel-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _project_wheel(root: Path, dest: Path) -> Path:
    """Build the project's wheel from a clean copy of its packages.

    The copy keeps build litter (build/, *.egg-info) out of the checkout, which other
    work shares, and its README is a stand-in so editing the docs rebuilds no image.
    """
    src = dest.parent / ".project-src"
    src.mkdir()
    shutil.copy2(root / "pyproject.toml", src / "pyproject.toml")
    (src / "README.md").write_text("dorylus-pipeline: see the project's README.\n")
    for package in PROJECT_PACKAGES:
        shutil.copytree(root / package, src / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".*"))
    dest.mkdir()
    env = {**os.environ, "SOURCE_DATE_EPOCH": "315532800"}  # 1980: a reproducible zip
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
         "--wheel-dir", str(dest), str(src)],
        capture_output=True, text=True, env=env,
    )
    shutil.rmtree(src, ignore_errors=True)
    wheels = list(dest.glob("*.whl"))
    if done.returncode != 0 or len(wheels) != 1:
        raise DorylusError(f"could not build the project's wheel from {root}:\n{done.stderr[-2000:]}")
    return wheels[0]

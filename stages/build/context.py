"""The build context of the images and its content digest (the images' tags).

One context folder serves both images:

    runtime/requirements.txt  pinned runtime packages (see ``wheelhouse``)
    runtime/wheels/           their wheels
    project/                  the project's own wheel, built from the checkout
    graph-server/, lambda/    the Dockerfiles and entry points (``containers/``)
    lambda/wheels/            the Lambda runtime interface client's wheels

The digest of an image covers everything that decides its content: its Dockerfile
folder, the lock, the project's source, the base image id, the Python version and the
build arguments. It is computed from the sources before anything is assembled, so an
unchanged checkout finds its image by tag and builds nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

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


def assemble(dest: Path, root: Path, lock: str, python_version: str, wheel_cache: Path) -> Path:
    """Write the build context into ``dest`` (an empty folder); returns ``dest``."""
    runtime = dest / "runtime"
    runtime.mkdir(parents=True)
    (runtime / "requirements.txt").write_text(lock)
    wheelhouse.fetch(runtime / "requirements.txt", runtime / "wheels", wheel_cache, python_version)
    for image in IMAGES:
        shutil.copytree(root / "containers" / image, dest / image, ignore=shutil.ignore_patterns(".*", "__pycache__"))
    wheelhouse.fetch(dest / "lambda" / "requirements.txt", dest / "lambda" / "wheels", wheel_cache, python_version)
    _project_wheel(root, dest / "project")
    return dest


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

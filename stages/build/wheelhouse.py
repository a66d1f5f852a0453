"""The Python packages inside the images: pinned to this environment, fetched as wheels.

The images must run the same library versions the project was tested with, so the lock is
the transitive closure of the project's runtime requirements *as installed here*, each
pinned to its installed version. The wheels are fetched on the host (where pip is
configured with the local torch CPU wheel and the host's CA bundle) and copied into the
build context, so ``pip install --no-index`` inside the build needs no network and no
certificate, and nothing about the host's TLS setup lands in an image.
"""

from __future__ import annotations

import logging
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement

from stages.errors import DorylusError

log = logging.getLogger("dorylus.build")

PROJECT = "dorylus-pipeline"
# Used only by the driver (flows, this build stage, plots); nothing inside a container
# imports them, and prefect alone would add ~100 packages to every image.
DRIVER_ONLY = frozenset({"prefect", "docker", "matplotlib"})
# Wheels for manylinux_2_28 run on Debian bookworm (glibc 2.36) and Amazon Linux 2023.
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "linux_x86_64")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def runtime_requirements() -> list[Requirement]:
    """The project's own requirements minus the driver-only ones."""
    try:
        requires = metadata.requires(PROJECT) or []
    except metadata.PackageNotFoundError:
        raise DorylusError(f"{PROJECT} is not installed in this Python; run `pip install -e .` in the checkout") from None
    roots = []
    for text in requires:
        req = Requirement(text)
        if req.marker and not req.marker.evaluate({"extra": ""}):
            continue  # an optional extra (metis, test)
        if canonical(req.name) not in DRIVER_ONLY:
            roots.append(req)
    return roots


def lock(roots: list[Requirement]) -> dict[str, str]:
    """``{canonical name: installed version}`` for ``roots`` and everything they need."""
    pinned: dict[str, str] = {}
    pending = [(r, frozenset(r.extras)) for r in roots]
    seen: set[tuple[str, frozenset]] = set()
    while pending:
        req, extras = pending.pop()
        name = canonical(req.name)
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            raise DorylusError(
                f"{req.name} (needed by the images) is not installed here; install the project's dependencies first"
            ) from None
        pinned[name] = dist.version
        for text in dist.requires or []:
            sub = Requirement(text)
            if sub.marker is None or any(_applies(sub, e) for e in ("", *extras)):
                pending.append((sub, frozenset(sub.extras)))
    return dict(sorted(pinned.items()))


def _applies(req: Requirement, extra: str) -> bool:
    env = default_environment()
    env["extra"] = extra
    return req.marker.evaluate(env)


def lock_text(pins: dict[str, str]) -> str:
    return "".join(f"{name}=={version}\n" for name, version in pins.items())


def fetch(requirements: Path, dest: Path, cache: Path, python_version: str) -> None:
    """Put a wheel for every pin in ``requirements`` into ``dest`` (hard links from ``cache``).

    Only pins missing from ``cache`` are downloaded, so a second build with the same lock
    touches no index at all.
    """
    dest.mkdir(parents=True, exist_ok=True)
    tag = "cp" + python_version.replace(".", "")
    pins = [line.strip() for line in requirements.read_text().splitlines() if line.strip() and not line.startswith("#")]
    missing = [pin for pin in pins if not _cached(cache, pin, tag)]
    if missing:
        log.info("downloading %d wheels for Python %s", len(missing), python_version)
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
               "--python-version", python_version, "--implementation", "cp", "--abi", tag, "--abi", "abi3", "--abi", "none",
               *[f"--platform={p}" for p in PLATFORMS], "--dest", str(cache), *missing]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            noise = "is ignored"  # this machine's pip warns about a local index on every line
            detail = "\n".join(line for line in done.stderr.splitlines() if noise not in line)[-2000:]
            raise DorylusError(f"could not fetch wheels for the images (is PyPI reachable?):\n{detail}")
    for pin in pins:
        wheel = _cached(cache, pin, tag)
        if wheel is None:
            raise DorylusError(f"pip reported success but no wheel for {pin} for Python {python_version} is in {cache}")
        target = dest / wheel.name
        if not target.exists():
            try:
                target.hardlink_to(wheel)
            except OSError:
                target.write_bytes(wheel.read_bytes())


def _cached(cache: Path, pin: str, tag: str) -> Path | None:
    """The cached wheel for ``name==version`` that this Python (``tag``, e.g. cp311) can use."""
    name, version = pin.split("==")
    stem = f"{canonical(name).replace('-', '_')}-{version}-"
    for wheel in sorted(cache.glob("*.whl")) if cache.is_dir() else []:
        wheel_name, wheel_version, *_, python_tag, abi, _platform = wheel.stem.split("-")
        # wheel file names escape the project name with underscores, in any case
        if f"{canonical(wheel_name).replace('-', '_')}-{wheel_version}-" != stem:
            continue
        if python_tag.startswith("py") or tag in python_tag.split(".") or abi == "abi3":
            return wheel
    return None

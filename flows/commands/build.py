"""``dorylus build``: the graph-server and Lambda container images, tagged by content."""

from __future__ import annotations

from stages.build import DEFAULT_BASE_IMAGE, DEFAULT_PYTHON, DEFAULT_REPOSITORY_PREFIX, build
from stages.store import ArtifactStore


def add_parser(sub) -> None:
    from flows.cli import add_common

    p = sub.add_parser("build", help="build the graph-server and Lambda container images", description=__doc__)
    p.add_argument("--push", action="store_true", help="push both images to ECR (creates the repositories, immutable tags)")
    p.add_argument("--require-images", action="store_true", help="fail instead of reporting 'skipped' when no Docker engine can build")
    p.add_argument("--base-image", default=DEFAULT_BASE_IMAGE,
                   help=f"image with python3 to build on (default: {DEFAULT_BASE_IMAGE}, made by infra/local/make-base-image.sh; "
                        "on AWS e.g. public.ecr.aws/lambda/python:3.12 with --python-version 3.12)")
    p.add_argument("--python-version", default=DEFAULT_PYTHON, help=f"the base image's Python, for the wheels (default: {DEFAULT_PYTHON})")
    p.add_argument("--repository-prefix", default=DEFAULT_REPOSITORY_PREFIX,
                   help=f"ECR repositories are PREFIX/graph-server and PREFIX/lambda (default: {DEFAULT_REPOSITORY_PREFIX})")
    add_common(p)
    p.set_defaults(handler=run)


def run(args) -> dict:
    artifact = build(
        store=ArtifactStore.open(args.store),
        push=args.push,
        require_images=args.require_images,
        force=args.force,
        base_image=args.base_image,
        python_version=args.python_version,
        repository_prefix=args.repository_prefix,
    )
    return artifact.result()

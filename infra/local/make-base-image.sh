#!/bin/sh
# Make the local stand-in for a Python base image from Debian's own packages.
#
#   infra/local/make-base-image.sh [IMAGE]      (default dorylus/debian-python:bookworm)
#
# No image registry can be reached here, so instead of pulling `python` or the AWS Lambda
# base image we debootstrap Debian bookworm (whose python3 is 3.11, the project's Python)
# and `docker import` the root filesystem. Needs root, debootstrap and a running engine
# (DOCKER_HOST, see start-docker.sh). Idempotent: an existing IMAGE is kept as it is, so
# the build stage's content tags stay stable.
set -eu

IMAGE=${1:-dorylus/debian-python:bookworm}
SUITE=${DEBIAN_SUITE:-bookworm}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
DOCKER=${DOCKER:-docker}

if $DOCKER image inspect "$IMAGE" >/dev/null 2>&1; then
    echo "$IMAGE exists" >&2
    exit 0
fi

work=$(mktemp -d /var/tmp/dorylus-rootfs.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "debootstrap $SUITE into $work (about a minute)" >&2
# python3-venv brings ensurepip, which the Dockerfiles use to make their virtualenv
debootstrap --variant=minbase --include=python3,python3-venv "$SUITE" "$work/rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1 || {
    tail -n 30 "$work/debootstrap.log" >&2
    exit 1
}
# apt's lists and caches are not needed in an image that never runs apt
rm -rf "$work/rootfs/var/lib/apt/lists/"* "$work/rootfs/var/cache/apt/"*
tar -C "$work/rootfs" -c . | $DOCKER import \
    -c 'ENV LANG=C.UTF-8' \
    -c 'CMD ["python3"]' \
    -m "debootstrap --variant=minbase --include=python3,python3-venv $SUITE" \
    - "$IMAGE" >&2
echo "$IMAGE made" >&2

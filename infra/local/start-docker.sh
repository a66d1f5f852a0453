#!/bin/sh
# Start a Docker engine for this project, installing it first if it is missing.
#
#   infra/local/start-docker.sh [STATE_DIR]
#
# Prints one line, `DOCKER_HOST=unix://...`, naming the engine to use; eval it or read it.
# Idempotent: an engine that already answers (at $DOCKER_HOST, at the default socket, or
# at STATE_DIR's socket) is reused and nothing is started. Otherwise dockerd runs in the
# background with all its state under STATE_DIR (default $DORYLUS_DOCKER_STATE or
# /var/tmp/dorylus-docker), so images stay cached between runs. There is no systemd on
# the machines this targets, so the script starts dockerd itself. It listens on a unix
# socket only. Stop it with: kill "$(cat STATE_DIR/dockerd.pid)".
set -eu

STATE=${1:-${DORYLUS_DOCKER_STATE:-/var/tmp/dorylus-docker}}
SOCK="$STATE/docker.sock"

answers() {  # does an engine answer at unix socket $1?
    [ -S "$1" ] && curl -fsS --max-time 5 --unix-socket "$1" http://localhost/_ping >/dev/null 2>&1
}

for candidate in "${DOCKER_HOST:-}" unix:///var/run/docker.sock "unix://$SOCK"; do
    case "$candidate" in
        unix://*) if answers "${candidate#unix://}"; then echo "DOCKER_HOST=$candidate"; exit 0; fi ;;
    esac
done

if ! command -v dockerd >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
    echo "installing docker.io and debootstrap" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends docker.io debootstrap curl >&2
fi

mkdir -p "$STATE"
# a dockerd left over from a killed run holds the pidfile; dockerd refuses to start then
if [ -f "$STATE/dockerd.pid" ] && ! kill -0 "$(cat "$STATE/dockerd.pid")" 2>/dev/null; then
    rm -f "$STATE/dockerd.pid"
fi
if [ ! -f "$STATE/dockerd.pid" ]; then
    rm -f "$SOCK"
    # setsid: the engine outlives the shell that started it and ignores its signals
    setsid dockerd \
        --data-root "$STATE/data" \
        --exec-root "$STATE/exec" \
        --pidfile "$STATE/dockerd.pid" \
        -H "unix://$SOCK" \
        >>"$STATE/dockerd.log" 2>&1 </dev/null &
fi

i=0
until answers "$SOCK"; do
    i=$((i + 1))
    if [ "$i" -gt 120 ]; then
        echo "dockerd did not answer at $SOCK within 60 s; see $STATE/dockerd.log:" >&2
        tail -n 20 "$STATE/dockerd.log" >&2
        exit 1
    fi
    sleep 0.5
done
echo "DOCKER_HOST=unix://$SOCK"

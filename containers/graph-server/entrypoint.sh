#!/bin/sh
# Entry point of the graph-server image.
#
#   worker SCHEDULER [dask worker options]   a Dask worker that hosts graph/parameter servers
#   scheduler [dask scheduler options]       the Dask scheduler (the driver connects to it)
#   COMMAND [ARGS]                           anything else, e.g. `python -c ...` or `dorylus ...`
#
# Workers use fixed ports so security groups can name them: 8788 worker, 8789 nanny.
# DORYLUS_WORKER_NAME names the worker (default: the host name), so the driver can place
# graph server i on a known machine.
set -eu

case "${1:---help}" in
    worker)
        shift
        [ $# -ge 1 ] || { echo "usage: worker SCHEDULER_ADDRESS [dask worker options]" >&2; exit 2; }
        scheduler=$1
        shift
        exec dask worker "$scheduler" \
            --name "${DORYLUS_WORKER_NAME:-$(hostname)}" \
            --worker-port "${DORYLUS_WORKER_PORT:-8788}" \
            --nanny-port "${DORYLUS_NANNY_PORT:-8789}" \
            --nworkers 1 \
            --local-directory "${DORYLUS_LOCAL_DIR:-/tmp/dask}" \
            "$@"
        ;;
    scheduler)
        shift
        exec dask scheduler --port "${DORYLUS_SCHEDULER_PORT:-8786}" --dashboard-address ":${DORYLUS_DASHBOARD_PORT:-8787}" "$@"
        ;;
    -h|--help)
        sed -n '2,12p' "$0"
        ;;
    *)
        exec "$@"
        ;;
esac

"""``dorylus serve [CONFIG] [--cron EXPR]``: run the end-to-end flow on a schedule.

Needs a Prefect server: set ``PREFECT_API_URL`` (e.g. ``http://127.0.0.1:4200/api`` after
``PREFECT_HOME=.dorylus/prefect prefect server start --host 127.0.0.1``), or pass
``--start-server`` to start one on 127.0.0.1 for as long as this command runs.
"""

from __future__ import annotations

import os


def add_parser(sub) -> None:
    from flows.commands.run import add_config

    p = sub.add_parser("serve", help="serve the end-to-end flow as a scheduled Prefect deployment", description=__doc__)
    add_config(p)
    p.add_argument("--cron", default="0 3 * * *", help="cron schedule in UTC (default: nightly at 03:00)")
    p.add_argument("--store", metavar="URI", help="artifact store the scheduled runs use")
    p.add_argument("--start-server", action="store_true", help="start a local Prefect server on 127.0.0.1 for the duration")
    p.add_argument("--port", type=int, default=4200, help="port for --start-server (default 4200)")
    p.set_defaults(handler=run)


def run(args) -> dict:
    from flows.config import load_config
    from stages.errors import DorylusError

    config = load_config(args.config, args.set)
    _check_cron(args.cron)
    server = None
    if args.start_server:
        from flows.server import PrefectServer

        server = PrefectServer(port=args.port).start()
        os.environ["PREFECT_API_URL"] = server.api_url  # before prefect is imported
    elif not os.environ.get("PREFECT_API_URL"):
        raise DorylusError(
            "schedules need a Prefect server: start one with `PREFECT_HOME=.dorylus/prefect prefect server start --host 127.0.0.1` "
            "and set PREFECT_API_URL=http://127.0.0.1:4200/api, or pass --start-server"
        )
    try:
        from flows.deployments import serve

        serve(config, args.cron, args.store)
    finally:
        if server is not None:
            server.stop()
    return {"stage": "serve", "uri": os.environ.get("PREFECT_API_URL", ""), "stopped": True}


def _check_cron(expr: str) -> None:
    from stages.errors import DorylusError

    fields = expr.split()
    if len(fields) != 5:
        raise DorylusError(f"--cron {expr!r}: write five fields (minute hour day month weekday), e.g. '0 3 * * *'")

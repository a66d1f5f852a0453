"""Scheduled deployments of the end-to-end flow, and serving them.

Cron schedules need a real Prefect server (the temporary one started for a plain run
does not schedule). Start one locally with::

    PREFECT_HOME=.dorylus/prefect .venv/bin/prefect server start --host 127.0.0.1 --port 4200

then, in another shell, ``PREFECT_API_URL=http://127.0.0.1:4200/api dorylus serve``
(or ``dorylus serve --start-server`` to do both in one process). ``dorylus serve`` keeps
running: it registers the deployment with its schedule and runs each scheduled or
triggered flow run in a subprocess. Trigger a run by hand with
``prefect deployment run 'end-to-end/scheduled'``.
"""

from __future__ import annotations

from flows import settings

settings.configure()

from flows.pipeline import end_to_end  # noqa: E402

DEPLOYMENT = "scheduled"
DEFAULT_CRON = "0 3 * * *"  # nightly at 03:00 UTC


def deployment(config: dict, cron: str = DEFAULT_CRON, store: str | None = None, name: str = DEPLOYMENT):
    """The end-to-end flow with a cron schedule and the run configuration as parameters."""
    from prefect.schedules import Cron

    return end_to_end.to_deployment(
        name=name,
        schedules=[Cron(cron, timezone="UTC")],
        parameters={"config": config, "store": store, "force": []},
        description="The dorylus end-to-end flow (ingest, partition, train, evaluate) on a schedule; reused stages come from the store.",
        tags=["dorylus"],
    )


def serve(config: dict, cron: str = DEFAULT_CRON, store: str | None = None) -> None:
    """Register the deployment and run its flow runs until interrupted."""
    from prefect import serve as prefect_serve

    prefect_serve(deployment(config, cron, store), print_starting_message=True)

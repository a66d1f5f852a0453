"""Prefect's settings for this project: offline, quiet, state in the project's folder.

Prefect reads its settings when it is first imported, so every module of ``flows`` that
imports prefect imports this module first and calls :func:`configure` before it. Values
already in the environment win, so a user can still point at a real server with
``PREFECT_API_URL``.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from stages.config import state_dir


def prefect_home() -> Path:
    return state_dir() / "prefect"


def defaults() -> dict[str, str]:
    home = prefect_home()
    return {
        "PREFECT_HOME": str(home),
        # task results are stage manifests (JSON); they live beside Prefect's database
        "PREFECT_LOCAL_STORAGE_PATH": str(home / "results"),
        "PREFECT_RESULTS_LOCAL_STORAGE_PATH": str(home / "results"),
        # offline: no telemetry (it would fail on every start and log an error)
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "DO_NOT_TRACK": "1",
        # the temporary server takes 10-20 s to start on 2 cores (default limit 20 s)
        "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "120",
        "PREFECT_API_REQUEST_TIMEOUT": "120",
        # quiet terminal: stage progress is printed by the flows themselves
        "PREFECT_LOGGING_LEVEL": os.environ.get("PREFECT_LOGGING_LEVEL", "WARNING"),
        "PREFECT_SERVER_LOGGING_LEVEL": "WARNING",
    }


def configure() -> Path:
    """Put the defaults into the environment (where not set already); returns PREFECT_HOME."""
    for name, value in defaults().items():
        os.environ.setdefault(name, value)
    # the Prefect client logs every API request at INFO through httpx
    logging.getLogger("httpx").setLevel(logging.WARNING)
    home = Path(os.environ["PREFECT_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    return home

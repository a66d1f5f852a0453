"""Prefect for the flow tests: offline settings in the session's private state folder.

Prefect reads its settings when first imported, so they are put in place here, after the
session's DORYLUS_HOME exists and before any test imports prefect.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def prefect_settings(dorylus_home):
    import sys

    assert "prefect" not in sys.modules, "prefect was imported before its settings were in place"
    from flows import settings

    return settings.configure()

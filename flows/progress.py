"""Terminal progress for flows: one bar per stage, on stderr (stdout stays for ``--json``).

Flows report through :func:`step`; the CLI turns the display on with :func:`shown`. Without
a terminal (tests, pipes, deployments) nothing is drawn.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from typing import Iterator

_progress = None
_ids: dict[str, int] = {}


@contextmanager
def shown(names: list[str]) -> Iterator[None]:
    global _progress
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    if not console.is_terminal:
        yield
        return
    with Progress(SpinnerColumn(), TextColumn("{task.description:<28}"), BarColumn(), TimeElapsedColumn(), console=console) as p:
        _progress = p
        _ids.clear()
        for name in names:
            _ids[name] = p.add_task(name, total=1, start=False)
        try:
            yield
        finally:
            _progress = None


@contextmanager
def _step(name: str, outcome: dict) -> Iterator[dict]:
    p = _progress
    if name not in _ids:
        _ids[name] = p.add_task(name, total=1, start=False)
    p.start_task(_ids[name])
    yield outcome
    p.update(_ids[name], completed=1, description=f"{name} ({outcome.get('state', 'done')})")


def step(name: str):
    """``with step("train") as outcome: ...; outcome["state"] = "cached"``."""
    return _step(name, {}) if _progress is not None else nullcontext({})

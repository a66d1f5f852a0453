"""Progress of long stage work, for whoever shows it.

Stages report with :func:`update` and know nothing of terminals or Prefect; the flows
install a sink with :func:`reporting` that draws a bar on a terminal or prints plain
lines. Without a sink an update costs one attribute read.

    progress.update(3, 200, "epochs", loss=0.52, val_acc=0.71)
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Callable, Iterator

# done, total (None when unknown), unit, figures to show beside the count
Sink = Callable[[int, "int | None", str, dict], None]

_sink: Sink | None = None
_lock = threading.Lock()


@contextmanager
def reporting(sink: Sink) -> Iterator[None]:
    """Send every :func:`update` made while this is open (from any thread) to ``sink``."""
    global _sink
    with _lock:
        previous, _sink = _sink, sink
    try:
        yield
    finally:
        with _lock:
            _sink = previous


def update(done: int, total: int | None, unit: str, **figures) -> None:
    """Say that ``done`` of ``total`` ``unit`` are finished (``figures``: e.g. loss=0.5)."""
    sink = _sink
    if sink is not None:
        sink(done, total, unit, figures)

"""Autotuning the number of concurrent tensor tasks (the paper's "number of Lambdas").

Dorylus starts with min(#intervals, 100) Lambdas per graph server and adjusts the number
by watching the graph server's CPU task queue: if the queue keeps growing, tensor results
arrive faster than the CPU can Gather and Scatter them, so it scales down (fewer Lambdas,
less cost); if the queue quickly shrinks while tensor tasks wait for a slot, the CPU is
starved, so it scales up. The goal is a stable queue.

Here the CPU task queue is ``TaskQueue``: the graph server's slot for graph tasks, which
counts the tasks waiting for it. ``Autotuner.observe`` is the decision rule, fed one
sample of that queue per tick by the invoker's monitor thread.
"""

from __future__ import annotations

import threading
from collections import deque

PAPER_START = 100  # the paper's cap on the initial number of Lambdas per graph server


class TaskQueue:
    """A semaphore for graph tasks that knows how many tasks wait for it."""

    def __init__(self, slots: int):
        self._sem = threading.Semaphore(slots)
        self._lock = threading.Lock()
        self.waiting = 0

    def __enter__(self):
        with self._lock:
            self.waiting += 1
        try:
            self._sem.acquire()
        finally:
            with self._lock:
                self.waiting -= 1
        return self

    def __exit__(self, *exc):
        self._sem.release()
        return False


class Autotuner:
    """The concurrency limit of one graph server's tensor tasks.

    Every ``window`` samples of the queue length it decides once:

    - the queue grew at every sample and ends longer than it started: scale down;
    - it shrank by at least half of where it started (or stayed empty) while tensor
      tasks were waiting for a slot at every sample: scale up;
    - otherwise keep the limit (the queue is stable, or the limit is not what binds).

    A step is a quarter of the limit (at least 1), and the limit stays in [1, maximum].
    """

    def __init__(self, intervals: int, maximum: int, window: int = 5):
        self.maximum = max(1, maximum)
        self.limit = max(1, min(intervals, PAPER_START, self.maximum))
        self.window = window
        self.samples: deque = deque(maxlen=window)
        self.starved: deque = deque(maxlen=window)
        self.changes = 0

    def observe(self, queue_length: int, waiting_tensor_tasks: int) -> int:
        """Record one sample; returns the (possibly new) limit."""
        self.samples.append(queue_length)
        self.starved.append(waiting_tensor_tasks > 0)
        if len(self.samples) < self.window:
            return self.limit
        q = list(self.samples)
        step = max(1, self.limit // 4)
        grows = all(b >= a for a, b in zip(q, q[1:])) and q[-1] > q[0]
        shrinks = q[-1] <= q[0] // 2 and (q[0] > 0 or max(q) == 0)
        new = self.limit
        if grows:
            new = max(1, self.limit - step)
        elif shrinks and all(self.starved):
            new = min(self.maximum, self.limit + step)
        if new != self.limit:
            self.limit = new
            self.changes += 1
        self.samples.clear()
        self.starved.clear()
        return self.limit

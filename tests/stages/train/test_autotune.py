"""The autotuner's decision rule and the graph task queue it watches."""

from __future__ import annotations

import threading
import time

from stages.train.autotune import PAPER_START, Autotuner, TaskQueue


def feed(tuner: Autotuner, queue: list[int], waiting: int) -> int:
    for q in queue:
        limit = tuner.observe(q, waiting)
    return limit


def test_starts_at_min_of_intervals_and_100_within_the_maximum():
    assert Autotuner(intervals=8, maximum=8).limit == 8
    assert Autotuner(intervals=500, maximum=1000).limit == PAPER_START == 100
    assert Autotuner(intervals=8, maximum=2).limit == 2  # a local pool of 2 workers


def test_a_growing_queue_scales_down_until_one():
    tuner = Autotuner(intervals=40, maximum=40, window=5)
    assert feed(tuner, [0, 1, 1, 2, 3], waiting=0) == 30  # a quarter less
    assert feed(tuner, [3, 4, 5, 6, 7], waiting=0) == 23
    for _ in range(40):
        feed(tuner, [1, 2, 3, 4, 5], waiting=0)
    assert tuner.limit == 1


def test_a_shrinking_queue_scales_up_only_when_tensor_tasks_wait_for_a_slot():
    tuner = Autotuner(intervals=40, maximum=40, window=5)
    feed(tuner, [0, 1, 2, 3, 4], waiting=0)
    feed(tuner, [4, 5, 6, 7, 8], waiting=0)
    assert tuner.limit == 23
    assert feed(tuner, [8, 6, 4, 2, 1], waiting=0) == 23  # nothing waits: the limit is not what binds
    assert feed(tuner, [8, 6, 4, 2, 1], waiting=3) == 28  # the CPU drains and tasks wait: more workers
    for _ in range(20):
        feed(tuner, [0, 0, 0, 0, 0], waiting=5)  # an idle CPU while tasks wait
    assert tuner.limit == 40  # never above the maximum


def test_a_stable_or_fluctuating_queue_keeps_the_limit():
    tuner = Autotuner(intervals=16, maximum=16, window=5)
    assert feed(tuner, [3, 3, 3, 3, 3], waiting=2) == 16
    assert feed(tuner, [3, 5, 2, 4, 3], waiting=2) == 16
    assert feed(tuner, [0, 2, 0, 1, 0], waiting=2) == 16
    assert tuner.changes == 0


def test_task_queue_counts_the_tasks_waiting_for_a_slot():
    q = TaskQueue(1)
    release = threading.Event()

    def hold():
        with q:
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    waiters = [threading.Thread(target=lambda: q.__enter__() and q.__exit__()) for _ in range(3)]
    while q.waiting != 0 or not holder.is_alive():
        time.sleep(0.01)
    for t in waiters:
        t.start()
    deadline = time.monotonic() + 10
    while q.waiting < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert q.waiting == 3
    release.set()
    for t in [holder, *waiters]:
        t.join(10)
    assert q.waiting == 0

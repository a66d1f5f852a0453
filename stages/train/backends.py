"""Who runs the tensor tasks of a graph server: the ``Invoker`` interface and its backends.

- ``CpuInvoker``: the graph server's own threads run ``worker.run_task`` on its arrays.
- ``LocalInvoker``: a pool of separate worker processes, each running the Lambda handler
  on the same event AWS would deliver; inputs and results travel over the data plane.
- ``LambdaInvoker`` (``lambda_backend.py``): the same handler as an AWS Lambda function.

The last two share ``RemoteInvoker``: the table of tasks in flight (the handler FETCHes
a task's inputs from it and sends its RESULT back to it), straggler relaunch and the
autotuned number of concurrent tasks. A task running longer than
``max(relaunch_min_s, relaunch_ratio x the moving average of its task type)`` is
launched again; the first result wins and a late duplicate is dropped and counted.
"""

from __future__ import annotations

import itertools
import logging
import os
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from stages.errors import DorylusError
from stages.train import protocol as P
from stages.train.autotune import Autotuner
from stages.train.worker import KEY_ENV, run_task

log = logging.getLogger("dorylus.train.backends")

TICK_S = 0.1  # how often the monitor looks for stragglers
TUNE_EVERY = 5  # ticks between two samples of the graph server's task queue


class TensorTaskFailed(DorylusError):
    """A tensor task failed for good (its retries are used up): the run stops."""


class Invoker:
    """Runs one tensor task for an interval thread and returns (info, result arrays)."""

    def start(self) -> None:
        pass

    def invoke(self, event: dict, inputs: list[np.ndarray]) -> tuple[dict, list[np.ndarray]] | None:
        raise NotImplementedError

    def dispatch(self, send) -> None:
        """Called by the graph server's io thread after each burst of messages."""

    def status(self) -> dict:
        return {"relaunched": 0, "duplicates": 0}

    def stop(self) -> None:
        pass


class CpuInvoker(Invoker):
    def __init__(self, server):
        self.server = server

    def invoke(self, event, inputs):
        ps = self.server.ps_client()
        before = ps.bytes
        with self.server.cpu_slot:
            info, arrays = run_task(event, inputs, ps)
        info["bytes"] = ps.bytes - before
        return info, arrays


@dataclass
class Inflight:
    event: dict
    inputs: list
    started: float
    done: threading.Event = field(default_factory=threading.Event)
    result: tuple | None = None
    error: str | None = None  # set when the task failed for good
    attempts: int = 1
    failures: int = 0
    worker: object = None  # who runs the latest attempt (local: the process identity)


class RemoteInvoker(Invoker):
    """Tensor tasks that run outside the graph server and talk to it over the data plane.

    Subclasses say how to launch an attempt (``_can_launch``, ``_launch``), how many
    attempts are running (``running``) and what to do with a straggler (``_relaunching``).
    """

    def __init__(self, server, relaunch_ratio: float, relaunch_min_s: float, max_concurrency: int):
        self.server = server
        self.ratio, self.min_s = relaunch_ratio, relaunch_min_s
        self.lock = threading.Lock()
        self.inflight: dict[int, Inflight] = {}
        self.pending: deque = deque()  # task ids to launch
        self.avg: dict[str, float] = {}
        self.relaunched = 0
        self.duplicates = 0
        self.tuner = Autotuner(len(server.intervals), max_concurrency)
        self._ids = itertools.count(1)
        self._stop = threading.Event()

    # --- subclass hooks ----------------------------------------------------------------------
    def running(self) -> int:
        raise NotImplementedError

    def _can_launch(self) -> bool:
        return True

    def _launch(self, task_id: int, fl: Inflight, send) -> None:
        raise NotImplementedError

    def _attempting(self, task_id: int) -> bool:
        """Is an attempt of this task still running? (Its relaunch then takes no new slot.)"""
        return False

    def _relaunching(self, task_id: int, fl: Inflight) -> None:
        """Called under the lock before a straggler's next attempt is queued."""

    def _check(self) -> None:
        """Called under the lock on every monitor tick."""

    # --- called by interval threads ---------------------------------------------------------
    def start(self) -> None:
        self.monitor = threading.Thread(target=self._monitor, name="relaunch-monitor", daemon=True)
        self.monitor.start()

    def stop(self) -> None:
        self._stop.set()

    def invoke(self, event, inputs):
        task_id = next(self._ids)
        event = dict(event, task_id=task_id, attempt=0)
        fl = Inflight(event, inputs, time.monotonic())
        with self.lock:
            self.inflight[task_id] = fl
            self.pending.append(task_id)
        self.server.wake()
        while not fl.done.wait(0.2):
            if self.server.stopping():
                break
        with self.lock:
            del self.inflight[task_id]
        if fl.error is not None:
            raise TensorTaskFailed(fl.error)
        return fl.result

    def status(self) -> dict:
        return {"relaunched": self.relaunched, "duplicates": self.duplicates, "concurrency": self.tuner.limit,
                "concurrency_changes": self.tuner.changes}

    # --- called by the graph server's io thread ----------------------------------------------
    def dispatch(self, send) -> None:
        """Launch pending tasks while the autotuned limit and the backend allow."""
        while True:
            with self.lock:
                if not self.pending or not self._can_launch():
                    return
                task_id = self.pending[0]
                fl = self.inflight.get(task_id)
                if fl is not None and not fl.done.is_set():
                    if self.running() >= self.tuner.limit and not self._attempting(task_id):
                        return  # a straggler's relaunch goes ahead: its task holds a slot already
                    self._launch(task_id, fl, send)
                self.pending.popleft()

    def inputs(self, task_id: int) -> list | None:
        with self.lock:
            fl = self.inflight.get(task_id)
            return None if fl is None else fl.inputs

    def complete(self, task_id: int, info: dict, arrays: list) -> None:
        with self.lock:
            fl = self.inflight.get(task_id)
            if fl is None or fl.done.is_set():
                self.duplicates += 1
                return  # first result wins
            kind = fl.event["type"]
            took = time.monotonic() - fl.started
            self.avg[kind] = took if kind not in self.avg else 0.95 * self.avg[kind] + 0.05 * took
            fl.result = (info, [np.array(a) for a in arrays])  # own the data: frames are reused
            fl.done.set()

    def _fail_attempt(self, task_id: int, error: str, max_failures: int, what: str) -> None:
        """An attempt failed: retry the task, or after ``max_failures`` fail it for good."""
        with self.lock:
            fl = self.inflight.get(task_id)
            if fl is None or fl.done.is_set():
                return  # another attempt already delivered: nothing is lost
            fl.failures += 1
            if fl.failures >= max_failures:
                ev = fl.event
                fl.error = (f"{what} failed {fl.failures} times on tensor task {ev['type']} (epoch {ev['epoch']}, "
                            f"layer {ev['layer']}, interval {ev['interval']}); last error: {error}")
                fl.done.set()
                return
            log.warning("%s failed on tensor task %s (%s); retrying: %s", what, task_id, fl.event["type"], error)
            fl.event = dict(fl.event, attempt=fl.attempts)
            fl.attempts += 1
            self.pending.appendleft(task_id)  # ahead of new tasks: it is the oldest work
        self.server.wake()

    # --- relaunch of slow, hung or lost tasks, and autotuning -----------------------------------
    def _monitor(self) -> None:
        for tick in itertools.count(1):
            if self._stop.wait(TICK_S):
                return
            now = time.monotonic()
            with self.lock:
                self._check()
                for task_id, fl in self.inflight.items():
                    if fl.done.is_set():
                        continue
                    limit = max(self.min_s, self.ratio * self.avg.get(fl.event["type"], self.min_s)) * fl.attempts
                    if now - fl.started > limit:
                        log.warning("relaunching tensor task %s (%s, attempt %d)", task_id, fl.event["type"], fl.attempts)
                        self._relaunching(task_id, fl)
                        fl.event = dict(fl.event, attempt=fl.attempts)
                        fl.attempts += 1
                        self.relaunched += 1
                        self.pending.appendleft(task_id)
                if tick % TUNE_EVERY == 0:
                    waiting = sum(1 for t in self.pending if t in self.inflight and not self.inflight[t].done.is_set())
                    before = self.tuner.limit
                    if self.tuner.observe(self.server.cpu_slot.waiting, waiting) != before:
                        log.info("graph server %d: %d concurrent tensor tasks (was %d)", self.server.index,
                                 self.tuner.limit, before)
            if self.pending:
                self.server.wake()


class LocalInvoker(RemoteInvoker):
    """A pool of worker processes fed through the graph server's ROUTER socket."""

    def __init__(self, server, num_workers: int, relaunch_ratio: float, relaunch_min_s: float):
        super().__init__(server, relaunch_ratio, relaunch_min_s, max_concurrency=num_workers)
        self.num_workers = num_workers
        self.idle: deque = deque()  # worker identities waiting for an event
        self.busy: dict[bytes, int] = {}  # worker -> task id
        self.procs: dict[bytes, subprocess.Popen] = {}

    def start(self) -> None:
        for i in range(self.num_workers):
            self._spawn(f"p{self.server.index}w{i}".encode())
        super().start()

    def _spawn(self, identity: bytes) -> None:
        env = dict(os.environ, **{KEY_ENV: self.server.key.hex(), "OMP_NUM_THREADS": "1"})
        self.procs[identity] = subprocess.Popen(
            [sys.executable, "-m", "stages.train.worker", self.server.address, identity.decode()], env=env
        )

    def stop(self) -> None:
        super().stop()
        for proc in self.procs.values():
            proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def worker_ready(self, identity: bytes) -> None:
        with self.lock:
            self.busy.pop(identity, None)
            if identity not in self.idle:
                self.idle.append(identity)

    def running(self) -> int:
        return len(self.busy)

    def _can_launch(self) -> bool:
        return bool(self.idle)

    def _launch(self, task_id, fl, send) -> None:
        identity = self.idle.popleft()
        self.busy[identity] = task_id
        fl.worker = identity
        send(identity, P.Message(P.EVENT, info=fl.event))

    def _relaunching(self, task_id, fl) -> None:
        stuck = fl.worker
        if stuck is not None and self.busy.get(stuck) == task_id and stuck in self.procs:
            self.procs[stuck].kill()  # like a Lambda timeout: the stuck run ends

    def _check(self) -> None:
        for identity, proc in list(self.procs.items()):
            if proc.poll() is not None and not self._stop.is_set():  # a worker died
                log.warning("tensor worker %s exited with %s; starting a new one", identity, proc.returncode)
                self.busy.pop(identity, None)
                if identity in self.idle:
                    self.idle.remove(identity)
                self._spawn(identity)


def make_invoker(server, cfg: dict) -> Invoker:
    """The invoker of ``cfg["backend"]`` for one graph server."""
    if cfg["backend"] == "local":
        return LocalInvoker(server, cfg["num_workers"], cfg["relaunch_ratio"], cfg["relaunch_min_s"])
    if cfg["backend"] == "lambda":
        from stages.train.lambda_backend import LambdaInvoker  # boto3 only where it is used

        return LambdaInvoker(server, cfg["lambda"], cfg["relaunch_ratio"], cfg["relaunch_min_s"])
    return CpuInvoker(server)

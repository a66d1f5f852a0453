"""Who runs the tensor tasks of a graph server: the ``Invoker`` interface and its backends.

- ``CpuInvoker``: the graph server's own threads run ``worker.run_task`` on its arrays.
- ``LocalInvoker``: a pool of separate worker processes, each running the Lambda handler
  on the same event AWS would deliver; inputs and results travel over the data plane.
  Tasks running longer than ``max(relaunch_min_s, relaunch_ratio x average)`` are
  relaunched (and the stuck process replaced, as a Lambda timeout would); the first
  result wins and a late duplicate is dropped.

A ``lambda`` backend implements ``Invoker.invoke`` with boto3's asynchronous invoke and
needs nothing else changed: the handler already talks to the servers by itself.
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

from stages.train import protocol as P
from stages.train.worker import KEY_ENV, run_task

log = logging.getLogger("dorylus.train.backends")


class Invoker:
    """Runs one tensor task for an interval thread and returns (info, result arrays)."""

    def start(self) -> None:
        pass

    def invoke(self, event: dict, inputs: list[np.ndarray]) -> tuple[dict, list[np.ndarray]] | None:
        raise NotImplementedError

    def dispatch(self, send) -> None:
        """Called by the graph server's io thread after each burst of messages."""

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
    attempts: int = 1
    worker: bytes | None = None


class LocalInvoker(Invoker):
    """A pool of worker processes fed through the graph server's ROUTER socket."""

    def __init__(self, server, num_workers: int, relaunch_ratio: float, relaunch_min_s: float):
        self.server = server
        self.num_workers = num_workers
        self.ratio, self.min_s = relaunch_ratio, relaunch_min_s
        self.lock = threading.Lock()
        self.inflight: dict[int, Inflight] = {}
        self.pending: deque = deque()  # task ids to send
        self.idle: deque = deque()  # worker identities waiting for an event
        self.busy: dict[bytes, int] = {}  # worker -> task id
        self.procs: dict[bytes, subprocess.Popen] = {}
        self.avg: dict[str, float] = {}
        self.relaunched = 0
        self.duplicates = 0
        self._ids = itertools.count(1)
        self._stop = threading.Event()

    # --- pool --------------------------------------------------------------------------------
    def start(self) -> None:
        for i in range(self.num_workers):
            self._spawn(f"p{self.server.index}w{i}".encode())
        self.monitor = threading.Thread(target=self._monitor, name="relaunch-monitor", daemon=True)
        self.monitor.start()

    def _spawn(self, identity: bytes) -> None:
        env = dict(os.environ, **{KEY_ENV: self.server.key.hex(), "OMP_NUM_THREADS": "1"})
        self.procs[identity] = subprocess.Popen(
            [sys.executable, "-m", "stages.train.worker", self.server.address, identity.decode()], env=env
        )

    def stop(self) -> None:
        self._stop.set()
        for proc in self.procs.values():
            proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    # --- called by interval threads ---------------------------------------------------------
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
                return None
        with self.lock:
            del self.inflight[task_id]
        return fl.result

    # --- called by the graph server's io thread ----------------------------------------------
    def worker_ready(self, identity: bytes) -> None:
        with self.lock:
            self.busy.pop(identity, None)
            if identity not in self.idle:
                self.idle.append(identity)

    def dispatch(self, send) -> None:
        """Send pending events to idle workers (``send(identity, Message)``)."""
        while True:
            with self.lock:
                if not self.pending or not self.idle:
                    return
                task_id = self.pending.popleft()
                fl = self.inflight.get(task_id)
                if fl is None or fl.done.is_set():
                    continue
                identity = self.idle.popleft()
                self.busy[identity] = task_id
                fl.worker = identity
                event = fl.event
            send(identity, P.Message(P.EVENT, info=event))

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

    # --- relaunch of slow, hung or lost tasks --------------------------------------------------
    def _monitor(self) -> None:
        while not self._stop.wait(0.1):
            now = time.monotonic()
            with self.lock:
                for identity, proc in list(self.procs.items()):
                    if proc.poll() is not None and not self._stop.is_set():  # a worker died
                        log.warning("tensor worker %s exited with %s; starting a new one", identity, proc.returncode)
                        self.busy.pop(identity, None)
                        if identity in self.idle:
                            self.idle.remove(identity)
                        self._spawn(identity)
                for task_id, fl in self.inflight.items():
                    if fl.done.is_set():
                        continue
                    limit = max(self.min_s, self.ratio * self.avg.get(fl.event["type"], self.min_s)) * fl.attempts
                    if now - fl.started > limit:
                        log.warning("relaunching tensor task %s (%s, attempt %d)", task_id, fl.event["type"], fl.attempts)
                        stuck = fl.worker
                        if stuck is not None and self.busy.get(stuck) == task_id and stuck in self.procs:
                            self.procs[stuck].kill()  # like a Lambda timeout: the stuck run ends
                        fl.event = dict(fl.event, attempt=fl.attempts)
                        fl.attempts += 1
                        self.relaunched += 1
                        self.pending.append(task_id)
            if self.pending:
                self.server.wake()


def make_invoker(server, cfg: dict) -> Invoker:
    """The invoker of ``cfg["backend"]`` for one graph server."""
    if cfg["backend"] == "local":
        return LocalInvoker(server, cfg["num_workers"], cfg["relaunch_ratio"], cfg["relaunch_min_s"])
    return CpuInvoker(server)

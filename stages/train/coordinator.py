"""Coordinator: the epoch progress of every graph server, the staleness bound, the stop
conditions and the per-epoch metrics. It runs in the driver.

Each graph server reports once all its intervals have finished an epoch (loss, correct
counts, task times, bytes, stalls). The coordinator broadcasts the epoch every interval
has finished (``min_done``; an interval may start epoch e only while
e <= min_done + 1 + S), the stop epoch, the async-to-sync switch, and which epoch's
predictions to keep (the best validation epoch).
"""

from __future__ import annotations

import logging
import time

import zmq

from stages.train import protocol as P
from stages.train.graph_server import TASKS

log = logging.getLogger("dorylus.train.coordinator")


class TrainingFailed(RuntimeError):
    pass


class Coordinator:
    def __init__(self, key: bytes, num_parts: int, config, split_counts: dict[int, int], host: str = "127.0.0.1"):
        self.key, self.num_parts, self.cfg = key, num_parts, config
        self.counts = split_counts
        self.ctx = zmq.Context.instance()
        self.sock = self.ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        port = self.sock.bind_to_random_port(f"tcp://{host}")
        self.address = f"tcp://{host}:{port}"
        self.metrics: list[dict] = []
        self.best_epoch, self.best_val = 0, -1.0
        self.stop_after: int | None = None
        self.stopped_because: str | None = None
        self.sync = False
        self.time_to_target: float | None = None
        self.epochs_to_target: int | None = None

    def connect(self, graph_servers: list[str]) -> None:
        self.gs = []
        for address in graph_servers:
            s = self.ctx.socket(zmq.DEALER)
            s.setsockopt(zmq.LINGER, 1000)
            s.connect(address)
            self.gs.append(s)

    def close(self) -> None:
        for s in getattr(self, "gs", []):
            s.close(0)
        self.sock.close(0)

    def run(self, started: float, silence_timeout_s: float = 600.0, alive=lambda: None) -> None:
        """Follow the run until a stop condition holds; fills ``metrics``."""
        done: list[set[int]] = [set() for _ in range(self.num_parts)]
        reports: dict[int, dict[int, dict]] = {}
        last_heard = time.monotonic()
        while self.stopped_because is None:
            if not self.sock.poll(500):
                alive()  # raises if a server's process is gone
                if time.monotonic() - last_heard > silence_timeout_s:
                    raise TrainingFailed(f"no graph server reported progress for {silence_timeout_s:.0f} s")
                continue
            _, msg = P.recv(self.sock, self.key, routed=True)
            if msg is None or msg.kind != P.PROGRESS:
                continue
            last_heard = time.monotonic()
            if "error" in msg.info:
                raise TrainingFailed(f"graph server {msg.part} failed: {msg.info['error']}")
            done[msg.part].add(msg.epoch)
            reports.setdefault(msg.epoch, {})[msg.part] = msg.info
            e = len(self.metrics) + 1
            while len(reports.get(e, {})) == self.num_parts and self.stopped_because is None:
                self._finish_epoch(e, reports.pop(e), started)
                e += 1
            self._broadcast(min(_contiguous(d) for d in done))

    def _finish_epoch(self, e: int, parts: dict[int, dict], started: float) -> None:
        now = time.perf_counter() - started
        merged = {"task_time": {t: 0.0 for t in TASKS}, "task_count": {t: 0 for t in TASKS}}
        loss, correct, ss, sw, stalls, stall_time = 0.0, [0, 0, 0], 0, 0, 0, 0.0
        for info in parts.values():
            for t, v in info["task_time"].items():
                merged["task_time"][t] += v
            for t, v in info["task_count"].items():
                merged["task_count"][t] += v
            loss += info["loss_sum"]
            correct = [x + y for x, y in zip(correct, info["correct"])]
            ss, sw = ss + info["bytes_ss"], sw + info["bytes_sw"]
            stalls, stall_time = stalls + info["stalls"], stall_time + info["stall_time"]
        acc = [c / self.counts[code] if self.counts[code] else 0.0 for c, code in zip(correct, (1, 2, 3))]
        prev = self.metrics[-1]["time"] if self.metrics else 0.0
        row = {
            "epoch": e, "time": now, "epoch_time": now - prev,
            "loss": loss / max(self.counts[1], 1),
            "train_acc": acc[0], "val_acc": acc[1], "test_acc": acc[2],
            **merged,
            "bytes": {"server_server": ss, "server_worker": sw},
            "stalls": stalls, "stall_time": stall_time,
            "staleness_mode": "sync" if self.sync or self.cfg.staleness == "sync" else self.cfg.staleness,
        }
        self.metrics.append(row)
        log.info("epoch %d: loss %.4f train %.3f val %.3f test %.3f (%.3f s)", e, row["loss"], *acc, row["epoch_time"])
        if acc[1] > self.best_val:
            self.best_val, self.best_epoch = acc[1], e
        target = self.cfg.target_accuracy
        if target is not None and self.time_to_target is None and acc[1] >= target:
            self.time_to_target, self.epochs_to_target = now, e
        if target is not None and self.cfg.switch_to_sync is not None and acc[1] >= target - self.cfg.switch_to_sync:
            self.sync = True
        if target is not None and acc[1] >= target:
            self.stopped_because = "target"
        elif self.cfg.patience is not None and e - self.best_epoch >= self.cfg.patience:
            self.stopped_because = "patience"
        elif e >= self.cfg.epochs:
            self.stopped_because = "epochs"
        if self.stopped_because:
            self.stop_after = e

    def _broadcast(self, min_done: int) -> None:
        info = {"min_done": min_done, "stop_after": self.stop_after, "sync": self.sync, "keep": [self.best_epoch] + ([self.stop_after] if self.stop_after else [])}
        for s in self.gs:
            P.send(s, self.key, P.Message(P.CONTROL, info=info))


def _contiguous(epochs: set[int]) -> int:
    e = 0
    while e + 1 in epochs:
        e += 1
    return e

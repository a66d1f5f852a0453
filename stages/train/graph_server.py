"""GraphServer: one partition's Gather and Scatter, forward and backward, and its pipeline.

The server cuts its local vertices into ``VertexInterval``s. Each interval runs in its own
thread through the epoch's task sequence::

    forward   GA(l) -> AV(l) -> SC(l+1) ... -> fused last layer (AV + loss + backward AV)
    backward  SC_b(l) -> GA_b(l) -> AV_b(l-1) ... -> AV_b(0)

With one or more hidden layers the last layer is narrowed: the AV below it also applies
the last weight, so the last Gather moves num_classes columns instead of the hidden width
(Â (H W) = (Â H) W), the loss task gets gathered logits, and the backward AV below it
computes both layers' weight gradients. It is the costliest Gather made ~hidden/classes
times cheaper, forward and backward.

so several intervals are in flight at different tasks at once (pipelining, in every mode).
Graph tasks (GA, SC) run here; tensor tasks go to the ``Invoker`` of the backend.

GAT runs its own sequence (AV, SC, AE, GA per layer, the loss task, then GA_b, AE_b,
SC_b, AV_b per layer; see the GAT section below for its buffers and its staleness rules).

Staleness: in ``sync`` mode a Gather waits for every Scatter of its layer and epoch, here
and on all peers (the barrier after each scatter). With a bound S an interval starts epoch
e only while e <= (the slowest interval's epoch) + S, and its Gathers read whatever
ghost values have arrived. The first epoch is always synchronous (ghost buffers are empty
before it). The layer-0 Gather of the constant features runs once.

Buffers (rows: local vertices, then ghosts): ``H[l]`` the input activations of layer l
(``H[0]`` the features), ``A[l]`` the gathered inputs of local vertices, ``dA[l]`` their
gradients (rows: local vertices, then out-ghosts). With dropout, activations carry two
streams side by side, the training one (with dropout) and the evaluation one (without),
so one Gather serves both and accuracies are measured without dropout.
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from collections import defaultdict
from contextlib import contextmanager

import numpy as np
import torch
import zmq

from stages.partition.layout import PartitionSet
from stages.train import kernels
from stages.train import protocol as P
from stages.train.autotune import TaskQueue
from stages.train.backends import make_invoker
from stages.train.parameter_server import PSClient

log = logging.getLogger("dorylus.train.gs")
# torch flags sparse CSR as beta and skips invariant checks (ours are built correct)
warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
warnings.filterwarnings("ignore", message="Sparse invariant checks are implicitly disabled")
TASKS = ("GA", "AV", "SC", "AE", "GA_b", "AV_b", "SC_b", "AE_b", "WU")


def _csr_rows(indptr, indices, weights, a: int, b: int, ncols: int) -> torch.Tensor:
    """Rows [a, b) of a CSR as a torch sparse CSR tensor (SpMM runs multi-threaded)."""
    lo, hi = int(indptr[a]), int(indptr[b])
    crow = np.asarray(indptr[a : b + 1], dtype=np.int64) - lo
    col = np.asarray(indices[lo:hi])
    idx_type = np.int32 if hi - lo < 2**31 and ncols < 2**31 else np.int64
    return torch.sparse_csr_tensor(
        torch.from_numpy(crow.astype(idx_type)),
        torch.from_numpy(col.astype(idx_type, copy=False)),
        torch.from_numpy(np.asarray(weights[lo:hi], dtype=np.float32)),
        size=(b - a, ncols),
    )


class VertexInterval:
    """A contiguous range of local vertices and what its Gathers and Scatters need."""

    def __init__(self, index: int, uid: int, a: int, b: int):
        self.index, self.uid, self.a, self.b = index, uid, a, b
        self.adj_in: torch.Tensor | None = None  # rows of Â (columns: local, then ghosts)
        self.adj_out: torch.Tensor | None = None  # rows of Â^T (columns: local, then out-ghosts)
        self.send_fwd: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # peer -> (positions in its list, local rows)
        self.send_bwd: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._grad: dict[int, np.ndarray] = {}

    def grad_buffer(self, layer: int, width: int) -> np.ndarray:
        """The interval's reused buffer for the backward Gather of ``layer``."""
        if layer not in self._grad:
            self._grad[layer] = np.empty((self.b - self.a, width), np.float32)
        return self._grad[layer]


class EpochStats:
    def __init__(self):
        self.task_time = defaultdict(float)
        self.task_count = defaultdict(int)
        self.bytes_ss = 0
        self.bytes_sw = 0
        self.stalls = 0
        self.stall_time = 0.0
        self.loss_sum = 0.0
        self.correct = [0, 0, 0]
        self.done = 0

    def report(self) -> dict:
        return {"task_time": dict(self.task_time), "task_count": dict(self.task_count), "bytes_ss": self.bytes_ss,
                "bytes_sw": self.bytes_sw, "stalls": self.stalls, "stall_time": self.stall_time,
                "loss_sum": self.loss_sum, "correct": self.correct}


class GraphServer:
    def __init__(self, spec: dict):
        self.spec = spec
        self.index = int(spec["index"])
        self.key = bytes.fromhex(spec["key"])
        self.cfg = spec["config"]
        self.model = spec["model"]
        self.host = spec.get("host", "127.0.0.1")

    # --- set-up ----------------------------------------------------------------------------
    def start(self) -> str:
        """Load the partition, build the intervals, bind the data plane; returns its address."""
        if self.spec.get("torch_threads"):
            torch.set_num_threads(int(self.spec["torch_threads"]))
        part = PartitionSet(self.spec["partitions"]).part(self.index)
        self.part = part
        self.n, self.g, self.h = part.num_local, part.num_ghosts, part.num_out_ghosts
        self.vertices = np.asarray(part.vertices, dtype=np.int64)
        self.labels = np.asarray(part.labels, dtype=np.int32)
        self.split = np.asarray(part.splits[self.cfg["split"]], dtype=np.int8)
        sizes, streams = self.model["sizes"], self.model["streams"]
        self.L = len(sizes) - 1
        feats = np.array(part.features, dtype=np.float32)
        if self.model.get("normalize_features", True):
            sums = feats.sum(1, keepdims=True)
            np.divide(feats, sums, out=feats, where=sums != 0)
        self.is_gat = self.model["kind"] == "gat"
        self.narrow = not self.is_gat and self.model.get("narrow_last", False) and self.L >= 2
        if self.is_gat:
            self._gat_buffers(feats)
        else:
            self.H = [np.zeros((self.n + self.g, sizes[0]), dtype=np.float32)]
            self.H[0][: self.n] = feats
            # With 2+ layers the last layer gathers H W (num_classes wide) instead of H: its
            # "activation" buffers then hold H W, and the local H rows are kept for the backward.
            width = [sizes[l] for l in range(self.L)]
            if self.narrow:
                width[self.L - 1] = sizes[-1]
                self.H_last = np.zeros((self.n, sizes[self.L - 1]), np.float32)
            self.H += [np.zeros((self.n + self.g, width[l] * streams), np.float32) for l in range(1, self.L)]
            self.A = [np.zeros((self.n, sizes[0]), np.float32)]
            self.A += [np.zeros((self.n, width[l] * streams), np.float32) for l in range(1, self.L)]
            self.dA = [None] + [np.zeros((self.n + self.h, width[l]), np.float32) for l in range(1, self.L)]
        self.preds: dict[int, np.ndarray] = {}

        counts = self.spec["intervals_per_part"]
        k = counts[self.index]
        bounds = np.linspace(0, self.n, k + 1).astype(np.int64)
        offset = sum(counts[: self.index])
        self.intervals = [VertexInterval(i, offset + i, int(bounds[i]), int(bounds[i + 1])) for i in range(k)]
        peers = [j for j in range(self.spec["num_parts"]) if j != self.index]
        self.recv_fwd = {j: np.asarray(part.recv_fwd(j), dtype=np.int64) for j in peers}
        self.recv_bwd = {j: np.asarray(part.recv_bwd(j), dtype=np.int64) for j in peers}
        send_fwd = {j: np.asarray(part.send_fwd(j), dtype=np.int64) for j in peers}
        send_bwd = {j: np.asarray(part.send_bwd(j), dtype=np.int64) for j in peers}
        self.send_fwd = send_fwd
        for iv in self.intervals:
            if self.is_gat:
                self._gat_interval(iv)
            else:
                iv.adj_in = _csr_rows(part.in_indptr, part.in_indices, part.in_weights, iv.a, iv.b, self.n + self.g)
                iv.adj_out = _csr_rows(part.out_indptr, part.out_indices, part.out_weights, iv.a, iv.b, self.n + self.h)
            for j in peers:
                for lists, out in ((send_fwd, iv.send_fwd), (send_bwd, iv.send_bwd)):
                    if len(lists[j]):
                        pos = np.nonzero((lists[j] >= iv.a) & (lists[j] < iv.b))[0]
                        out[j] = (pos.astype(np.int32), lists[j][pos])
        # messages a sync Gather waits for: one per peer interval, from every peer that sends
        self.expect_fwd = sum(counts[j] for j in peers if len(self.recv_fwd[j]))
        self.expect_bwd = sum(counts[j] for j in peers if len(self.recv_bwd[j]))
        self.sent_fwd_peers = [j for j in peers if len(send_fwd[j])]
        self.sent_bwd_peers = [j for j in peers if len(send_bwd[j])]
        # GAT: a peer holding some of our vertices as ghosts sends their gradient contributions
        self.expect_grad = len(self.sent_fwd_peers)
        self.grad_peers = [j for j in peers if len(self.recv_fwd[j])]

        self.cond = threading.Condition()
        self.fwd_local, self.fwd_ghost = defaultdict(int), defaultdict(int)
        self.bwd_local, self.bwd_ghost = defaultdict(int), defaultdict(int)
        self.grad_local, self.grad_recv = defaultdict(int), defaultdict(int)  # GAT gradient sums
        self.stats: dict[int, EpochStats] = defaultdict(EpochStats)
        self.min_done = 0
        self.stop_after: int | None = None
        self.force_sync = False
        self.keep: set[int] = set()
        self.errors: list[str] = []
        self.dropped = 0
        self._stop = threading.Event()
        self._local = threading.local()
        self.cpu_slot = TaskQueue(int(self.cfg["graph_threads"]))  # the autotuner watches its queue

        self.ctx = zmq.Context.instance()
        self.sock = self.ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        port = self.sock.bind_to_random_port(f"tcp://{self.host}")
        self.address = f"tcp://{self.host}:{port}"
        self.wake_addr = f"inproc://gs-wake-{id(self)}"
        self.wake_sock = self.ctx.socket(zmq.PULL)
        self.wake_sock.bind(self.wake_addr)
        self.invoker = make_invoker(self, self.cfg)
        self.io = threading.Thread(target=self._serve, name=f"gs{self.index}-io", daemon=True)
        self.io.start()
        self.invoker.start()
        return self.address

    def run(self, peers: list[str], parameter_servers: list[str], coordinator: str) -> None:
        """Exchange the features of boundary vertices, then start every interval's thread."""
        self.peer_addresses, self.ps_addresses, self.coordinator = peers, parameter_servers, coordinator
        self.threads = [threading.Thread(target=self._interval_main, args=(iv,), name=f"gs{self.index}-iv{iv.index}", daemon=True)
                        for iv in self.intervals]
        for t in self.threads:
            t.start()

    # --- small helpers -----------------------------------------------------------------------
    def stopping(self) -> bool:
        return self._stop.is_set()

    def _peer_sock(self, j: int):
        socks = self._local.__dict__.setdefault("peers", {})
        if j not in socks:
            s = self.ctx.socket(zmq.DEALER)
            s.setsockopt(zmq.LINGER, 1000)
            s.connect(self.peer_addresses[j])
            socks[j] = s
        return socks[j]

    def _coord_sock(self):
        if not hasattr(self._local, "coord"):
            s = self.ctx.socket(zmq.DEALER)
            s.setsockopt(zmq.LINGER, 1000)
            s.connect(self.coordinator)
            self._local.coord = s
        return self._local.coord

    def ps_client(self) -> PSClient:
        if not hasattr(self._local, "ps"):
            self._local.ps = PSClient(self.ps_addresses, self.key, self.ctx, should_stop=self.stopping)
        return self._local.ps

    def wake(self) -> None:
        if not hasattr(self._local, "wake"):
            s = self.ctx.socket(zmq.PUSH)
            s.connect(self.wake_addr)
            self._local.wake = s
        self._local.wake.send(b"")

    @contextmanager
    def _task(self, name: str, epoch: int, count: bool = True):
        t0 = time.perf_counter()
        try:
            yield
        finally:
            with self.cond:
                st = self.stats[epoch]
                st.task_time[name] += time.perf_counter() - t0
                st.task_count[name] += int(count)

    def _wait(self, ready) -> bool:
        """Block until ``ready()`` (checked under the lock) or stop; returns False on stop."""
        with self.cond:
            while not ready():
                if self._stop.is_set():
                    return False
                self.cond.wait(0.5)
        return not self._stop.is_set()

    # --- the data plane ------------------------------------------------------------------------
    def _serve(self) -> None:
        poller = zmq.Poller()
        poller.register(self.sock, zmq.POLLIN)
        poller.register(self.wake_sock, zmq.POLLIN)
        send = lambda identity, msg: P.send(self.sock, self.key, msg, [identity])
        while not self._stop.is_set():
            events = dict(poller.poll(200))
            if self.wake_sock in events:
                while self.wake_sock.poll(0):
                    self.wake_sock.recv()
            if self.sock in events:
                for _ in range(64):  # drain a burst before dispatching
                    if not self.sock.poll(0):
                        break
                    route, msg = P.recv(self.sock, self.key, routed=True)
                    if msg is None:
                        self.dropped += 1
                        continue
                    try:
                        self._handle(route[0].bytes, msg, send)
                    except Exception:
                        log.exception("graph server %d: bad message of kind %s dropped", self.index, msg.kind)
            self.invoker.dispatch(send)
        self.sock.close(0)
        self.wake_sock.close(0)

    def _handle(self, identity: bytes, msg: P.Message, send) -> None:
        if msg.kind in (P.GHOST_FWD, P.GHOST_BWD):
            fwd = msg.kind == P.GHOST_FWD
            j, l = msg.part, msg.layer
            positions = (self.recv_fwd if fwd else self.recv_bwd)[j][msg.arrays[0]]
            target = self.H[l] if fwd else self.dA[l]
            target[self.n + positions] = msg.arrays[1]
            with self.cond:
                (self.fwd_ghost if fwd else self.bwd_ghost)[(l, msg.epoch)] += 1
                self.cond.notify_all()
        elif msg.kind == P.GHOST_GRAD:
            self._receive_ghost_grad(msg)
        elif msg.kind == P.CONTROL:
            with self.cond:
                self.min_done = max(self.min_done, int(msg.info.get("min_done", 0)))
                if msg.info.get("stop_after") is not None:
                    self.stop_after = int(msg.info["stop_after"])
                self.force_sync = self.force_sync or bool(msg.info.get("sync"))
                self.keep = set(msg.info.get("keep", []))
                for e in [e for e in self.preds if e < self.min_done and e not in self.keep]:
                    del self.preds[e]
                self.cond.notify_all()
        elif msg.kind == P.READY:
            self.invoker.worker_ready(identity)
        elif msg.kind == P.FETCH:
            inputs = self.invoker.inputs(msg.a)
            # a late copy of a finished task is told so, instead of waiting out its fetch timeout
            reply = P.Message(P.REPLY, a=msg.a, arrays=inputs) if inputs is not None else P.Message(P.REPLY, a=msg.a, info={"gone": True})
            send(identity, reply)
        elif msg.kind == P.RESULT:
            self.invoker.complete(msg.a, msg.info, msg.arrays)
            send(identity, P.Message(P.ACK, a=msg.a))
        else:
            log.warning("graph server %d: unexpected message kind %s", self.index, msg.kind)

    def _scatter(self, kind: int, iv: VertexInterval, layer: int, epoch: int, rows_of) -> int:
        """Send the interval's boundary rows of a layer to the peers that hold them as ghosts."""
        sent = 0
        lists = iv.send_fwd if kind == P.GHOST_FWD else iv.send_bwd
        for j in self.sent_fwd_peers if kind == P.GHOST_FWD else self.sent_bwd_peers:
            pos, rows = lists.get(j, (np.zeros(0, np.int32), np.zeros(0, np.int64)))
            msg = P.Message(kind, epoch=epoch, layer=layer, part=self.index, arrays=[pos, rows_of(rows)])
            sent += P.send(self._peer_sock(j), self.key, msg)  # even if empty: a sync Gather counts it
        return sent

    # --- the pipeline --------------------------------------------------------------------------
    def _sync(self, epoch: int) -> bool:
        return self.cfg["staleness_bound"] is None or epoch == 1 or self.force_sync

    def _interval_main(self, iv: VertexInterval) -> None:
        try:
            if iv.index == 0 and not self.is_gat:  # GAT's layer 0 starts from the features
                self._layer0_gather_all()
            if not self._wait(lambda: self.layer0_ready):
                return
            epoch = 1
            step = self._gat_forward_backward if self.is_gat else self._forward_backward
            while self._gate(iv, epoch):
                step(iv, epoch)
                self._interval_done(epoch)
                epoch += 1
        except _Stopped:
            return
        except Exception as exc:  # report, so the run fails instead of hanging
            log.exception("graph server %d interval %d failed", self.index, iv.index)
            self.errors.append(f"{type(exc).__name__}: {exc}")
            self._send_progress({"error": self.errors[-1]}, 0)

    layer0_ready = False

    def _layer0_gather_all(self) -> None:
        """A^0 = Â X for all local vertices, once: the features never change."""
        t0 = time.perf_counter()
        sent = sum(self._scatter(P.GHOST_FWD, iv, 0, 0, lambda r: self.H[0][r]) for iv in self.intervals)
        ok = self._wait(lambda: self.fwd_ghost[(0, 0)] >= self.expect_fwd)
        if not ok:
            return
        t1 = time.perf_counter()
        x = torch.from_numpy(self.H[0])
        for iv in self.intervals:
            self.A[0][iv.a : iv.b] = (iv.adj_in @ x).numpy()
        with self.cond:
            st = self.stats[1]
            st.task_time["SC"] += t1 - t0
            st.task_time["GA"] += time.perf_counter() - t1
            st.task_count["GA"] += len(self.intervals)
            st.task_count["SC"] += len(self.intervals)
            st.bytes_ss += sent
            self.layer0_ready = True
            self.cond.notify_all()

    def _gate(self, iv: VertexInterval, epoch: int) -> bool:
        """May this interval start ``epoch``? Waits while the staleness bound forbids it."""
        with self.cond:
            if epoch > self.cfg["epochs"] or (self.stop_after is not None and epoch > self.stop_after):
                return False
            bound = 0 if self.cfg["staleness_bound"] is None or self.force_sync else self.cfg["staleness_bound"]
            t0, stalled = time.perf_counter(), False
            while epoch > self.min_done + 1 + bound:
                if self._stop.is_set() or (self.stop_after is not None and epoch > self.stop_after):
                    return False
                stalled = True
                self.cond.wait(0.5)
                bound = 0 if self.cfg["staleness_bound"] is None or self.force_sync else self.cfg["staleness_bound"]
            if stalled and self.cfg["staleness_bound"] is not None:
                self.stats[epoch].stalls += 1
                self.stats[epoch].stall_time += time.perf_counter() - t0
        return not self._stop.is_set()

    def _event(self, kind: str, iv: VertexInterval, layer: int, epoch: int, version: int, version_next: int) -> dict:
        return {
            "type": kind, "epoch": epoch, "layer": layer, "interval": iv.index, "part": self.index, "uid": iv.uid,
            "version": version, "version_next": version_next, "graph_server": self.address, "parameter_servers": self.ps_addresses,
            "key": self.key.hex(),
            "model": self.model, "latency_ms": self.cfg["latency_ms"], "bandwidth_mbps": self.cfg["bandwidth_mbps"],
            "faults": self.cfg["faults"],
        }

    def _tensor(self, kind: str, iv: VertexInterval, layer: int, epoch: int, version: int, inputs, version_next: int = -1):
        result = self.invoker.invoke(self._event(kind, iv, layer, epoch, version, version_next), inputs)
        if result is None or result[0].get("aborted"):
            raise _Stopped()
        info, arrays = result
        with self.cond:
            st = self.stats[epoch]
            name = "AV" if kind in ("FUSED", "LOSS") else kind
            st.task_time[name] += info.get("duration", 0.0)
            st.task_count[name] += 1
            st.bytes_sw += int(info.get("bytes", 0))
        return info, arrays

    def _forward_backward(self, iv: VertexInterval, epoch: int) -> None:
        a, b, L = iv.a, iv.b, self.L
        sync = self._sync(epoch)
        gids = self.vertices[a:b]
        versions = {}
        for l in range(L):
            if l > 0:
                with self._task("GA", epoch), self.cpu_slot:
                    # into the buffer: a fresh 100 MB result costs page faults as much as the SpMM
                    torch.mm(iv.adj_in, torch.from_numpy(self.H[l]), out=torch.from_numpy(self.A[l][a:b]))
            version = (epoch - 1) if sync and self.cfg["staleness_bound"] is None else -1
            if l < L - 1:
                info, arrays = self._tensor("AV", iv, l, epoch, version, [self.A[l][a:b], gids])
                versions[l] = info["version"]
                h = arrays[-1]
                if self.narrow and l == L - 2:
                    versions[L - 1] = info["version_next"]
                    self.H_last[a:b] = arrays[0]
                self._scatter_step(P.GHOST_FWD, iv, l + 1, epoch, self.H[l + 1], h, sync)
            else:
                info, (da, pred) = self._tensor("LOSS" if self.narrow else "FUSED", iv, l, epoch, version,
                                                [self.A[l][a:b], gids, self.labels[a:b], self.split[a:b]])
                self._record_loss(iv, epoch, info, pred)
                if L > 1:
                    self.dA[l][a:b] = da
        for l in range(L - 1, 0, -1):
            self._scatter_step(P.GHOST_BWD, iv, l, epoch, self.dA[l], None, sync)
            with self._task("GA_b", epoch), self.cpu_slot:
                dh = iv.grad_buffer(l, self.dA[l].shape[1])
                torch.mm(iv.adj_out, torch.from_numpy(self.dA[l]), out=torch.from_numpy(dh))
            inputs = [self.A[l - 1][a:b], gids, dh]
            if self.narrow and l == L - 1:
                inputs.append(self.H_last[a:b])
            elif self.model.get("reuse_output"):
                inputs.append(self.H[l][a:b, : self.model["sizes"][l]])  # the training stream's rows
            info, arrays = self._tensor("AV_b", iv, l - 1, epoch, versions[l - 1], inputs, versions.get(L - 1, -1))
            if l - 1 > 0:
                self.dA[l - 1][a:b] = arrays[0]

    def _scatter_step(self, kind: int, iv: VertexInterval, layer: int, epoch: int, buffer: np.ndarray, rows, sync: bool) -> None:
        """SC (or SC_b): store the interval's ``rows`` of ``buffer`` (when given), send its
        boundary rows to the peers, count it; in sync mode then the barrier: wait until every
        local interval and every sending peer has scattered this layer of this epoch."""
        fwd = kind == P.GHOST_FWD
        local, ghost, expect = (self.fwd_local, self.fwd_ghost, self.expect_fwd) if fwd else (self.bwd_local, self.bwd_ghost, self.expect_bwd)
        with self._task("SC" if fwd else "SC_b", epoch):
            if rows is not None:
                buffer[iv.a : iv.b] = rows
            sent = self._scatter(kind, iv, layer, epoch, lambda r: buffer[r])
        key = (layer, epoch)
        with self.cond:
            self.stats[epoch].bytes_ss += sent
            local[key] += 1
            self.cond.notify_all()
        if sync and not self._wait(lambda: local[key] >= len(self.intervals) and ghost[key] >= expect):
            raise _Stopped()

    def _record_loss(self, iv: VertexInterval, epoch: int, info: dict, pred: np.ndarray) -> None:
        with self.cond:
            st = self.stats[epoch]
            st.loss_sum += info["loss_sum"]
            st.correct = [x + y for x, y in zip(st.correct, info["correct"])]
            self.preds.setdefault(epoch, np.full(self.n, -1, np.int32))[iv.a : iv.b] = pred

    def _interval_done(self, epoch: int) -> None:
        with self.cond:
            st = self.stats[epoch]
            st.done += 1
            if st.done < len(self.intervals):
                return
            report = st.report()
            del self.stats[epoch]
            for d in (self.fwd_local, self.fwd_ghost, self.bwd_local, self.bwd_ghost, self.grad_local, self.grad_recv):
                for key in [k for k in d if k[1] < epoch - 1]:
                    del d[key]
        self._send_progress(report, epoch)

    def _send_progress(self, info: dict, epoch: int) -> None:
        P.send(self._coord_sock(), self.key, P.Message(P.PROGRESS, epoch=epoch, part=self.index, info=info))

    # --- GAT ----------------------------------------------------------------------------------
    # Per layer l (heads h, width d; the streams side by side as extra heads, training first):
    #   AV(l)   Z, s_src, s_dst of the interval's rows         -> H[l] rows [Z | s_src], s_dst
    #   SC(l)   boundary rows of [Z | s_src] to the peers that hold them as ghosts
    #   AE(l)   alpha of the interval's in-edges (self loops included), attention dropout
    #   GA(l)   A[l] = sum_u alpha_uv Z_u per head (local and ghost sources)
    # then the loss task on the last layer's A, and backward per layer:
    #   GA_b(l) d_alpha per edge; alpha dOut added into the sources' rows of grad[(l, epoch)]
    #   AE_b(l) ds_src per edge (added into the sources' rows), ds_dst per row
    #   SC_b(l) once every local interval has added its part: the ghost rows to their owners
    #           (GHOST_GRAD), which add them to their own sums
    #   AV_b(l) the gradients of W, a_src, a_dst to the parameter server, dA of layer l-1
    # A source's gradient is a sum over all its out-edges, so AV_b always waits for every
    # local interval (partial sums are no stale value). Sync mode also waits for every
    # peer's contributions of the epoch; with a staleness bound AV_b takes each peer's
    # latest contributions that have arrived (the epoch's, or an earlier one), as the
    # forward Gathers take whatever ghost rows have arrived; its GA_b reads the Z rows
    # present then (with S >= 1 a faster interval may already have moved them on, as the
    # GCN's backward Gather reads whatever dA rows are there).
    def _gat_buffers(self, feats: np.ndarray) -> None:
        streams, sizes = self.model["streams"], self.model["sizes"]
        self.gat_layers = [kernels.gat_layer(sizes, self.model["heads"], l) for l in range(self.L)]
        self.X = feats
        self.H = [np.zeros((self.n + self.g, streams * h * (d + 1)), np.float32) for h, d, _ in self.gat_layers]
        self.A = [np.zeros((self.n, streams * h * d), np.float32) for h, d, _ in self.gat_layers]
        self.grad: dict[tuple[int, int], np.ndarray] = {}  # (layer, epoch) -> [dZ | ds_src] rows, local then ghosts
        self.grad_read = defaultdict(int)
        self.grad_remote: dict[tuple[int, int], dict[int, np.ndarray]] = defaultdict(dict)  # (layer, peer) -> {epoch: rows}
        self.grad_lock = threading.Lock()
        self.layer0_ready = True
        cols = np.concatenate([self.vertices, np.asarray(self.part.ghosts, np.int64)])
        self.column_ids = cols  # global id of every CSR column

    def _gat_interval(self, iv: VertexInterval) -> None:
        part = self.part
        lo, hi = int(part.in_indptr[iv.a]), int(part.in_indptr[iv.b])
        iv.indptr = np.asarray(part.in_indptr[iv.a : iv.b + 1], np.int64) - lo
        iv.indices = np.asarray(part.in_indices[lo:hi], np.int64)
        iv.source_ids = self.column_ids[iv.indices]
        iv.saved = {}  # layer -> (alpha, s_src per edge, s_dst) of the training heads, for the backward

    def _receive_ghost_grad(self, msg: P.Message) -> None:
        j, rows = msg.part, msg.arrays[0]
        if j not in self.send_fwd or rows.shape[0] != len(self.send_fwd[j]) or rows.ndim != 2 \
                or not 0 <= msg.layer < self.L or rows.shape[1] != self._grad_width(msg.layer):
            log.warning("graph server %d: GHOST_GRAD of a wrong shape from part %s dropped", self.index, j)
            return
        with self.cond:
            slots = self.grad_remote[(msg.layer, j)]
            slots[msg.epoch] = np.array(rows)  # own the data: zmq reuses the frame
            older = [e for e in slots if e <= self.min_done]
            for e in sorted(older)[:-1]:  # the newest finished epoch stays as a fallback
                del slots[e]
            self.grad_recv[(msg.layer, msg.epoch)] += 1
            self.cond.notify_all()

    def _grad_width(self, layer: int) -> int:
        h, d, _ = self.gat_layers[layer]
        return h * (d + 1)

    def _gat_forward_backward(self, iv: VertexInterval, epoch: int) -> None:
        a, b, L = iv.a, iv.b, self.L
        sync = self._sync(epoch)
        gids = self.vertices[a:b]
        streams = self.model["streams"]
        version = (epoch - 1) if sync and self.cfg["staleness_bound"] is None else -1
        versions = {}
        indptr, indices = torch.from_numpy(iv.indptr), torch.from_numpy(iv.indices)
        for l in range(L):
            h, d, _ = self.gat_layers[l]
            x = self.X[a:b] if l == 0 else self.A[l - 1][a:b]
            info, (zs, s_dst) = self._tensor("AV", iv, l, epoch, version, [x, gids])
            versions[l] = info["version"]
            self._scatter_step(P.GHOST_FWD, iv, l, epoch, self.H[l], zs, sync)
            zw = streams * h * d
            s_src_e = self.H[l][iv.indices, zw:]
            _, (alpha,) = self._tensor("AE", iv, l, epoch, -1, [iv.indptr, s_src_e, s_dst, iv.source_ids, gids])
            with self._task("GA", epoch), self.cpu_slot:
                z = torch.from_numpy(self.H[l])[:, :zw]
                self.A[l][a:b] = kernels.attention_gather(indptr, indices, torch.from_numpy(alpha), z, streams * h).numpy()
            iv.saved[l] = (np.ascontiguousarray(alpha[:, :h]), np.ascontiguousarray(s_src_e[:, :h]),
                           np.ascontiguousarray(s_dst[:, :h]))
        info, (dout, pred) = self._tensor("LOSS", iv, L - 1, epoch, -1,
                                          [self.A[L - 1][a:b], gids, self.labels[a:b], self.split[a:b]])
        self._record_loss(iv, epoch, info, pred)
        for l in range(L - 1, -1, -1):
            h, d, width = self.gat_layers[l]
            alpha, s_src_e, s_dst = iv.saved.pop(l)
            key = (l, epoch)
            with self._task("GA_b", epoch), self.cpu_slot:
                z = torch.from_numpy(self.H[l])[:, : h * d]  # the training stream's Z
                d_alpha, dz_e = kernels.attention_gather_backward_edges(indptr, indices, torch.from_numpy(alpha), z, h,
                                                                        torch.from_numpy(dout))
            _, (ds_src_e, ds_dst) = self._tensor("AE_b", iv, l, epoch, -1,
                                                 [iv.indptr, s_src_e, s_dst, d_alpha.numpy(), iv.source_ids, gids])
            with self._task("GA_b", epoch, count=False), self.grad_lock:  # add into the sources' sums (shared by the intervals)
                if key not in self.grad:
                    self.grad[key] = np.zeros((self.n + self.g, self._grad_width(l)), np.float32)
                g = torch.from_numpy(self.grad[key])
                g[:, : h * d].index_add_(0, indices, dz_e)
                g[:, h * d :].index_add_(0, indices, torch.from_numpy(ds_src_e))
            with self.cond:
                self.grad_local[key] += 1
                complete = self.grad_local[key] == len(self.intervals)
                self.cond.notify_all()
            if complete:  # the last local interval sends the ghosts' sums to their owners
                with self._task("SC_b", epoch):
                    sent = 0
                    for j in self.grad_peers:
                        rows = self.grad[key][self.n + self.recv_fwd[j]]
                        msg = P.Message(P.GHOST_GRAD, epoch=epoch, layer=l, part=self.index, arrays=[rows])
                        sent += P.send(self._peer_sock(j), self.key, msg)
                with self.cond:
                    self.stats[epoch].bytes_ss += sent
            if not self._wait(lambda: self.grad_local[key] >= len(self.intervals)
                              and (not sync or self.grad_recv[key] >= self.expect_grad)):
                raise _Stopped()
            x = self.X[a:b] if l == 0 else self.A[l - 1][a:b, :width]
            inputs = [x, gids, self._gat_grad_rows(iv, l, epoch), ds_dst]
            if self.model.get("reuse_output"):
                inputs.append(self.H[l][a:b, : h * d])  # the training stream's Z rows
            info, arrays = self._tensor("AV_b", iv, l, epoch, versions[l], inputs)
            dout = arrays[0] if l > 0 else None

    def _gat_grad_rows(self, iv: VertexInterval, layer: int, epoch: int) -> np.ndarray:
        """The interval's summed [dZ | ds_src] rows: local contributions and the peers'."""
        key = (layer, epoch)
        rows = self.grad[key][iv.a : iv.b].copy()
        with self.cond:
            for j, (pos, local) in iv.send_fwd.items():
                slots = self.grad_remote.get((layer, j), {})
                have = [e for e in slots if e == epoch] or sorted(e for e in slots if e < epoch)[-1:] or sorted(slots)[:1]
                if have:
                    np.add.at(rows, local - iv.a, slots[have[0]][pos])
            self.grad_read[key] += 1
            if self.grad_read[key] == len(self.intervals):
                del self.grad_read[key]
                with self.grad_lock:
                    del self.grad[key]
        return rows

    # --- results ----------------------------------------------------------------------------------
    def predictions(self, epochs: list[int]) -> dict:
        with self.cond:
            return {"vertices": self.vertices, "labels": self.labels, "split": self.split,
                    **{f"pred_{e}": self.preds.get(e, np.full(self.n, -1, np.int32)) for e in epochs}}

    def status(self) -> dict:
        return {"errors": list(self.errors), "dropped": self.dropped, **self.invoker.status()}

    def stop(self) -> None:
        self._stop.set()
        with self.cond:
            self.cond.notify_all()
        for t in getattr(self, "threads", []):
            t.join(timeout=10)
        self.invoker.stop()
        self.io.join(timeout=10)


class _Stopped(Exception):
    """The run is stopping: an interval leaves its epoch."""

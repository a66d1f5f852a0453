"""ParameterServer: the weights of its layers, Adam, and stashed weight versions.

Version v of a layer is its weights after the updates of epochs 1..v. Every vertex
interval pushes one gradient per layer and epoch; the server sums an epoch's gradients
and applies them (WU) once every interval has pushed, in epoch order, so the result does
not depend on arrival order. A forward read of the latest version *stashes* it (counted
reference) and the interval's backward reads that same version (weight stashing); the
gradient push releases it. Layers are spread over the servers (layer l on server l mod n).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict

import numpy as np
import torch
import zmq

from stages.train import protocol as P

log = logging.getLogger("dorylus.train.ps")
KEEP_RECENT = 8  # recent versions kept for the final weights and slow readers


class ParameterServer:
    def __init__(self, spec: dict):
        """spec: key (hex), layers {layer: {name: initial array}} as nested lists of names
        and flat data, num_intervals, lr, weight_decay, eps, host."""
        self.key = bytes.fromhex(spec["key"])
        self.num_intervals = int(spec["num_intervals"])
        self.host = spec.get("host", "127.0.0.1")
        self.lock = threading.Lock()
        self.params: dict[int, list[torch.Tensor]] = {}
        self.names: dict[int, list[str]] = {}
        self.opt: dict[int, torch.optim.Optimizer] = {}
        for layer, named in spec["layers"].items():
            layer = int(layer)
            self.names[layer] = [n for n, _ in named]
            self.params[layer] = [torch.tensor(np.asarray(v, dtype=np.float32)).requires_grad_(True) for _, v in named]
            self.opt[layer] = torch.optim.Adam(self.params[layer], lr=spec["lr"], weight_decay=spec["weight_decay"], eps=spec["eps"])
        self.latest = {l: 0 for l in self.params}
        self.versions = {l: {0: self._snapshot(l)} for l in self.params}
        self.refs = {l: defaultdict(int) for l in self.params}
        self.buckets = {l: {} for l in self.params}  # epoch -> [sums, contributors]
        self.pending: list = []  # GETs waiting for a version not yet made
        self.wu_time = defaultdict(float)
        self.wu_count = defaultdict(int)
        self.dropped = 0
        self._stop = threading.Event()

    def _snapshot(self, layer: int) -> list[np.ndarray]:
        return [p.detach().numpy().copy() for p in self.params[layer]]

    # --- lifecycle (called by the driver, through Dask) ----------------------------------
    def start(self) -> str:
        self.ctx = zmq.Context.instance()
        self.sock = self.ctx.socket(zmq.ROUTER)
        self.sock.setsockopt(zmq.LINGER, 0)
        port = self.sock.bind_to_random_port(f"tcp://{self.host}")
        self.address = f"tcp://{self.host}:{port}"
        self.thread = threading.Thread(target=self._serve, name="parameter-server", daemon=True)
        self.thread.start()
        return self.address

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(timeout=10)

    def weights(self, epoch: int | None = None) -> dict[str, np.ndarray]:
        """The weights after ``epoch`` epochs of updates (default: the latest), by name."""
        out = {}
        with self.lock:
            for layer in self.params:
                v = self.latest[layer] if epoch is None else min(epoch, self.latest[layer])
                arrays = self.versions[layer].get(v)
                if arrays is None:
                    raise RuntimeError(f"weights of layer {layer} at version {v} are no longer kept")
                out.update(dict(zip(self.names[layer], arrays)))
        return out

    def stats(self) -> dict:
        with self.lock:
            return {"wu_time": dict(self.wu_time), "wu_count": dict(self.wu_count), "dropped": self.dropped,
                    "latest": dict(self.latest)}

    # --- the server loop -------------------------------------------------------------------
    def _serve(self) -> None:
        poller = zmq.Poller()
        poller.register(self.sock, zmq.POLLIN)
        while not self._stop.is_set():
            if not poller.poll(100):
                continue
            route, msg = P.recv(self.sock, self.key, routed=True)
            if msg is None:
                with self.lock:
                    self.dropped += 1
                continue
            try:
                self._handle(route, msg)
            except Exception:  # a bad request never takes the server down
                log.exception("parameter server: request failed")
        self.sock.close(0)

    def _handle(self, route, msg: P.Message) -> None:
        layer = msg.layer
        if layer not in self.params:
            log.warning("request for layer %s, which this server does not hold", layer)
            return
        if msg.kind == P.GET_WEIGHTS:
            self._get(route, layer, msg.a, bool(msg.b))
        elif msg.kind == P.PUSH_GRAD:
            self._push(layer, msg.epoch, msg.interval, int(msg.a), msg.arrays)
            P.send(self.sock, self.key, P.Message(P.ACK), route)
        else:
            log.warning("parameter server: unexpected message kind %s", msg.kind)

    def _get(self, route, layer: int, version: int, stash: bool) -> None:
        with self.lock:
            v = self.latest[layer] if version < 0 else version
            if v > self.latest[layer]:
                self.pending.append((route, layer, v, stash))  # sync mode: wait for the update
                return
            arrays = self.versions[layer].get(v)
            if arrays is not None and stash:
                self.refs[layer][v] += 1
        if arrays is None:
            log.error("version %s of layer %s was asked for but is no longer kept", v, layer)
            return
        P.send(self.sock, self.key, P.Message(P.REPLY, layer=layer, a=v, arrays=arrays), route)

    def _push(self, layer: int, epoch: int, uid: int, version: int, grads) -> None:
        with self.lock:
            if epoch <= self.latest[layer] or uid in self.buckets[layer].get(epoch, (None, ()))[1]:
                return  # a relaunched task's late duplicate changes nothing
            if version >= 0 and self.refs[layer].get(version, 0) > 0:
                self.refs[layer][version] -= 1
            bucket = self.buckets[layer].setdefault(epoch, [None, set()])
            bucket[1].add(uid)
            g = [np.array(x, dtype=np.float32) for x in grads]
            bucket[0] = g if bucket[0] is None else [s + x for s, x in zip(bucket[0], g)]
            self._apply_ready(layer)
        self._serve_pending()

    def _apply_ready(self, layer: int) -> None:
        while True:
            nxt = self.latest[layer] + 1
            bucket = self.buckets[layer].get(nxt)
            if bucket is None or len(bucket[1]) < self.num_intervals:
                return
            t0 = time.perf_counter()
            for p, g in zip(self.params[layer], bucket[0]):
                p.grad = torch.from_numpy(g)
            self.opt[layer].step()
            del self.buckets[layer][nxt]
            self.latest[layer] = nxt
            self.versions[layer][nxt] = self._snapshot(layer)
            for v in list(self.versions[layer]):
                if v < nxt - KEEP_RECENT and self.refs[layer].get(v, 0) <= 0:
                    del self.versions[layer][v]
            self.wu_time[nxt] += time.perf_counter() - t0
            self.wu_count[nxt] += 1

    def _serve_pending(self) -> None:
        with self.lock:
            ready = [p for p in self.pending if p[2] <= self.latest[p[1]]]
            self.pending = [p for p in self.pending if p[2] > self.latest[p[1]]]
        for route, layer, v, stash in ready:
            self._get(route, layer, v, stash)


class PSClient:
    """Talks to the parameter servers from one thread (a graph-server thread or a worker)."""

    def __init__(self, addresses: list[str], key: bytes, ctx=None, should_stop=lambda: False, network=None):
        self.ctx = ctx or zmq.Context.instance()
        self.key = key
        self.addresses = addresses
        self.socks = {}
        self.should_stop = should_stop
        self.network = network
        self.bytes = 0

    def _sock(self, layer: int):
        i = layer % len(self.addresses)
        if i not in self.socks:
            s = self.ctx.socket(zmq.DEALER)
            s.setsockopt(zmq.LINGER, 0)
            s.connect(self.addresses[i])
            self.socks[i] = s
        return self.socks[i]

    def _request(self, layer: int, msg: P.Message) -> P.Message | None:
        s = self._sock(layer)
        sent = P.send(s, self.key, msg)
        while not s.poll(200):
            if self.should_stop():
                return None
        reply = P.recv(s, self.key)
        nbytes = sent + (reply.nbytes if reply else 0)
        self.bytes += nbytes
        if self.network:
            self.network.delay(nbytes)
        return reply

    def get(self, layer: int, version: int = -1, stash: bool = False) -> tuple[int, list[np.ndarray]] | None:
        reply = self._request(layer, P.Message(P.GET_WEIGHTS, layer=layer, a=version, b=int(stash)))
        return None if reply is None else (int(reply.a), reply.arrays)

    def push(self, layer: int, epoch: int, uid: int, version: int, grads: list[np.ndarray]) -> bool:
        msg = P.Message(P.PUSH_GRAD, epoch=epoch, layer=layer, interval=uid, a=version, arrays=list(grads))
        return self._request(layer, msg) is not None

    def close(self) -> None:
        for s in self.socks.values():
            s.close(0)
        self.socks.clear()

"""The TensorWorker: ``handler(event, context)``, the Lambda entry point.

A tensor task (AV, the fused last layer, a backward AV, or GAT's ApplyEdge AE and its
backward AE_b, for one vertex interval) is stateless: the handler fetches its inputs from the graph server named in the event, reads
the weights from the parameter servers, computes, pushes the weight gradient to the
parameter server and sends its result rows back to the graph server, all over the
authenticated data plane. The ``local`` backend runs this same handler in a pool of
separate processes (``python -m stages.train.worker``), with the same event AWS Lambda
would get; the ``cpu`` backend runs ``run_task`` in the graph server's own threads.

The event carries the per-run data-plane key (``key``, hex; a fresh one for every run),
never AWS credentials. The local pool's processes get the same key from the environment
(``DORYLUS_DATA_KEY``) to authenticate their own messages to the graph server.
"""

from __future__ import annotations

import logging
import os
import sys
import time
import warnings

import numpy as np
import torch
import zmq

from stages.train import kernels
from stages.train import protocol as P
from stages.train.parameter_server import PSClient

log = logging.getLogger("dorylus.train.worker")
warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
KEY_ENV = "DORYLUS_DATA_KEY"
FETCH_TIMEOUT_S = 60.0


class Network:
    """A simulated link: each request pays a latency and its bytes at a bandwidth."""

    def __init__(self, latency_ms: float = 0.0, bandwidth_mbps: float = 0.0):
        self.latency = latency_ms / 1000.0
        self.bandwidth = bandwidth_mbps * 1e6 / 8 if bandwidth_mbps else 0.0

    def delay(self, nbytes: int) -> None:
        wait = self.latency + (nbytes / self.bandwidth if self.bandwidth else 0.0)
        if wait > 0:
            time.sleep(wait)


def _t(x: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.asarray(x))


def _weights(ps: PSClient, layer: int, version: int, stash: bool) -> tuple[int, list[torch.Tensor]]:
    """A layer's weights from the parameter server: (version read, arrays); _Aborted when stopping."""
    got = ps.get(layer, version, stash=stash)
    if got is None:
        raise _Aborted()
    return got[0], [_t(x) for x in got[1]]


def run_task(event: dict, inputs: list[np.ndarray], ps: PSClient) -> tuple[dict, list[np.ndarray]]:
    """Compute one tensor task; returns (info, result arrays). Pushes weight gradients.

    Inputs by task: AV [A, ids]; FUSED and LOSS [A or logits, ids, labels, split];
    AV_b [A, ids, dH(, H)]: with the model's ``reuse_output`` the layer's output H comes
    along (no rematerialization); below a narrowed last layer [A, ids, S, H] always.
    """
    t0 = time.perf_counter()
    m = event["model"]
    kind, layer, epoch = event["type"], event["layer"], event["epoch"]
    if m["kind"] == "gat" and kind != "LOSS":
        try:
            version, out = _run_gat_task(event, inputs, ps)
        except _Aborted:
            return {"aborted": True}, []
        return {"version": version, "duration": time.perf_counter() - t0}, out
    streams, p, act, sizes = m["streams"], m["dropout"], m["activation"], m["sizes"]
    last = len(sizes) - 2
    narrow = m.get("narrow_last", False) and layer == last - 1  # this layer also applies the last W
    a = _t(inputs[0])
    gids = inputs[1]
    d_in = sizes[layer] if kind != "LOSS" else sizes[-1]
    a_train = a if a.shape[1] == d_in else a[:, :d_in]
    a_eval = a if a.shape[1] == d_in else a[:, d_in:]
    mask = kernels.dropout_mask(m["seed"], epoch, layer, gids, d_in, p) if kind != "LOSS" else None
    info: dict = {}

    def weights(l: int, version: int, stash: bool):
        version, (w,) = _weights(ps, l, version, stash)
        return version, w

    try:
        if kind == "AV":
            version, w = weights(layer, event["version"], True)
            h = kernels.apply_vertex(a_train, w, act, mask)
            h_eval = kernels.apply_vertex(a_eval, w, act, None) if streams == 2 else None
            if narrow:
                # Â (drop(H) W_last) equals (Â drop(H)) W_last but gathers num_classes columns, not hidden ones
                info["version_next"], w_last = weights(last, event["version"], True)
                mask_last = kernels.dropout_mask(m["seed"], epoch, last, gids, sizes[last], p)
                z = kernels._masked(h, mask_last) @ w_last
                if streams == 2:
                    z = torch.cat([z, h_eval @ w_last], dim=1)
                out = [h.numpy(), z.numpy()]
            else:
                out = [(torch.cat([h, h_eval], dim=1) if streams == 2 else h).numpy()]
        elif kind in ("FUSED", "LOSS"):
            split = np.asarray(inputs[3])
            labels = _t(inputs[2])
            train = torch.from_numpy(split == 1)
            if kind == "FUSED":
                version, w = weights(layer, event["version"], True)
                loss_sum, dw, da, logits = kernels.fused_last_layer(a_train, w, mask, labels, train, m["num_train"])
                if streams == 2:
                    logits = a_eval @ w
                ps.push(layer, epoch, event["uid"], version, [dw.numpy()])
            else:  # the logits were gathered by the graph server: only the loss is left
                version = -1
                loss_sum, da = kernels.softmax_cross_entropy(a_train, labels, train, m["num_train"])
                logits = a_eval
            pred = logits.argmax(1).numpy().astype(np.int32)
            hit = pred == np.asarray(inputs[2])
            info["loss_sum"] = loss_sum
            info["correct"] = [int(hit[split == code].sum()) for code in (1, 2, 3)]
            out = [da.numpy(), pred]
        elif kind == "AV_b":
            version = event["version"]
            dh = _t(inputs[2])
            out_rows = _t(inputs[3]) if len(inputs) > 3 else None  # this layer's output H, if sent
            if narrow:
                v_last, w_last = weights(last, event["version_next"], False)
                mask_last = kernels.dropout_mask(m["seed"], epoch, last, gids, sizes[last], p)
                h = kernels._masked(out_rows, mask_last)
                ps.push(last, epoch, event["uid"], v_last, [(h.T @ dh).numpy()])
                dh = kernels._masked(dh @ w_last.T, mask_last)
            _, w = weights(layer, version, False)
            dw, da = kernels.apply_vertex_backward(a_train, w, act, mask, dh, need_da=layer > 0,
                                                   h=out_rows if m.get("reuse_output") else None)
            ps.push(layer, epoch, event["uid"], version, [dw.numpy()])
            out = [da.numpy()] if da is not None else []
        else:
            raise ValueError(f"unknown tensor task {kind!r}")
    except _Aborted:
        return {"aborted": True}, []
    info["version"] = version
    info["duration"] = time.perf_counter() - t0
    return info, out


def _run_gat_task(event: dict, inputs: list[np.ndarray], ps: PSClient) -> tuple[int, list[np.ndarray]]:
    """One GAT tensor task (layer l: ``heads`` heads of width d; streams side by side,
    training first). Returns (weight version read or -1, result arrays).

    AV   [A or X, ids] -> [Z | s_src] rows (streams*heads*d + streams*heads), s_dst:
         X = drop(act(A)) (layer 0: drop(features)); Z = X W, s = <Z, a_src/a_dst> per head
    AE   [indptr, s_src per edge, s_dst, source ids per edge, ids] -> alpha per edge and
         head, with the training heads' attention dropout
    AE_b [indptr, s_src per edge, s_dst, d_alpha, source ids per edge, ids] (training
         heads) -> ds_src per edge, ds_dst per row (alpha is rematerialized)
    AV_b [A or X (training stream), ids, [dZ | ds_src] rows, ds_dst(, Z rows with the
         model's ``reuse_output``, else Z is rematerialized)] -> dA (none at layer 0);
         pushes the gradients of W, a_src, a_dst
    """
    m = event["model"]
    kind, layer, epoch = event["type"], event["layer"], event["epoch"]
    heads, d, width = kernels.gat_layer(m["sizes"], m["heads"], layer)
    p, act, slope, seed = m["dropout"], m["activation"], m["negative_slope"], m["seed"]

    def weights(version: int, stash: bool):
        return _weights(ps, layer, version, stash)

    def attention_mask(indptr, src_ids, ids):
        dst_ids = np.asarray(ids)[kernels._rows_of_edges(indptr).numpy()]
        return kernels.attention_dropout_mask(seed, epoch, layer, src_ids, dst_ids, heads, p)

    if kind == "AV":
        a, ids = _t(inputs[0]), inputs[1]
        version, (w, att_src, att_dst) = weights(event["version"], True)
        xs = [a[:, :width], a[:, width:]] if a.shape[1] > width else [a] * m["streams"]
        if layer > 0:
            xs = [kernels.activate(act, x) for x in xs]
        xs[0] = kernels._masked(xs[0], kernels.dropout_mask(seed, epoch, layer, ids, width, p))
        proj = [kernels.gat_project(x, w, att_src, att_dst, heads) for x in xs]
        zs = torch.cat([z for z, _, _ in proj] + [s for _, s, _ in proj], dim=1)
        return version, [zs.numpy(), torch.cat([s for _, _, s in proj], dim=1).numpy()]
    if kind == "AE":
        indptr, s_src_e, s_dst = _t(inputs[0]), _t(inputs[1]), _t(inputs[2])
        alpha = kernels.edge_attention(indptr, s_src_e, s_dst, slope)
        mask = attention_mask(indptr, inputs[3], inputs[4])
        if mask is not None:
            alpha[:, :heads] *= mask
        return -1, [alpha.numpy()]
    if kind == "AE_b":
        indptr, s_src_e, s_dst, d_alpha = _t(inputs[0]), _t(inputs[1]), _t(inputs[2]), _t(inputs[3])
        alpha = kernels.edge_attention(indptr, s_src_e, s_dst, slope)
        d_alpha = kernels._masked(d_alpha, attention_mask(indptr, inputs[4], inputs[5]))
        ds_src_e, ds_dst = kernels.edge_attention_backward(indptr, s_src_e, s_dst, alpha, d_alpha, slope)
        return -1, [ds_src_e.numpy(), ds_dst.numpy()]
    if kind == "AV_b":
        a, ids, g, ds_dst = _t(inputs[0]), inputs[1], _t(inputs[2]), _t(inputs[3])
        version = event["version"]
        _, (w, att_src, att_dst) = weights(version, False)
        mask = kernels.dropout_mask(seed, epoch, layer, ids, width, p)
        x = kernels._masked(kernels.activate(act, a) if layer > 0 else a, mask)
        z = _t(inputs[4]) if len(inputs) > 4 else None  # Z rows, when the graph server sends them
        dw, d_src, d_dst, dx = kernels.gat_project_backward(x, w, att_src, att_dst, heads, g[:, : heads * d], g[:, heads * d :],
                                                            ds_dst, z=z, need_dx=layer > 0)
        ps.push(layer, epoch, event["uid"], version, [dw.numpy(), d_src.numpy(), d_dst.numpy()])
        return version, [kernels.activate_grad(act, a, kernels._masked(dx, mask)).numpy()] if layer > 0 else []
    raise ValueError(f"unknown GAT tensor task {kind!r}")


class _Aborted(Exception):
    """The servers are stopping: the task has nothing to return."""


# --- the Lambda-style entry point ------------------------------------------------------------
_SOCKETS: dict[str, zmq.Socket] = {}  # kept between invocations, like a warm Lambda container


def _server_socket(address: str) -> zmq.Socket:
    if address not in _SOCKETS:
        s = zmq.Context.instance().socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 1000)
        s.connect(address)
        _SOCKETS[address] = s
    return _SOCKETS[address]


def _exchange(sock, key: bytes, msg: P.Message, task_id: int, network: Network) -> tuple[P.Message, int]:
    sent = P.send(sock, key, msg)
    deadline = time.monotonic() + FETCH_TIMEOUT_S
    while time.monotonic() < deadline:
        if not sock.poll(500):
            continue
        reply = P.recv(sock, key)
        if reply is not None and reply.a == task_id:  # skip replies meant for an older task
            nbytes = sent + reply.nbytes
            network.delay(nbytes)
            return reply, nbytes
    raise TimeoutError(f"graph server did not answer task {task_id}")


def _inject_fault(event: dict) -> None:
    """Test hook: make the first attempt of a chosen task hang or die (a real fault)."""
    for f in event.get("faults", ()):
        if event.get("attempt", 0) == 0 and all(event.get(k) == f[k] for k in ("type", "epoch", "layer", "interval") if k in f):
            if f["kind"] == "hang":
                time.sleep(3600)
            if f["kind"] == "kill":
                os._exit(17)


def handler(event: dict, context=None) -> dict:
    key = bytes.fromhex(event["key"])
    network = Network(event.get("latency_ms", 0.0), event.get("bandwidth_mbps", 0.0))
    _inject_fault(event)
    task_id = int(event["task_id"])
    gs = _server_socket(event["graph_server"])
    reply, nbytes = _exchange(gs, key, P.Message(P.FETCH, a=task_id, b=event.get("attempt", 0)), task_id, network)
    if reply.info.get("gone"):  # another attempt already delivered this task's result
        return {"task_id": task_id, "duration": 0.0, "bytes": nbytes, "gone": True}
    ps = PSClient(event["parameter_servers"], key, network=network)
    try:
        info, arrays = run_task(event, reply.arrays, ps)
    finally:
        ps.close()
    info["bytes"] = nbytes + ps.bytes
    result = P.Message(P.RESULT, a=task_id, b=event.get("attempt", 0), info=info, arrays=arrays)
    _, sent = _exchange(gs, key, result, task_id, network)
    info["bytes"] += sent
    return {"task_id": task_id, "duration": info.get("duration", 0.0), "bytes": info["bytes"]}


class LocalContext:
    """The parts of the Lambda context object a handler may use."""

    def __init__(self, request_id: str):
        self.aws_request_id = request_id
        self.function_name = "dorylus-tensor-worker"
        self.memory_limit_in_mb = 3008

    def get_remaining_time_in_millis(self) -> int:
        return 900_000


def pool_main(address: str, identity: str) -> None:
    """One process of the local pool: ask the graph server for events and run the handler."""
    key = bytes.fromhex(os.environ[KEY_ENV])
    torch.set_num_threads(1)  # a Lambda has ~2 weak vCPUs; many workers share this machine
    parent = os.getppid()
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.IDENTITY, identity.encode())
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(address)
    P.send(sock, key, P.Message(P.READY))
    while os.getppid() == parent:
        if not sock.poll(1000):
            continue
        msg = P.recv(sock, key)
        if msg is None:
            continue
        if msg.kind == P.CONTROL and msg.info.get("stop"):
            break
        if msg.kind != P.EVENT:
            continue
        try:
            handler(msg.info, LocalContext(f"{identity}-{msg.info.get('task_id')}"))
        except Exception:
            log.exception("tensor task failed")  # the graph server relaunches it
        P.send(sock, key, P.Message(P.READY))
    sock.close(0)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    pool_main(sys.argv[1], sys.argv[2])

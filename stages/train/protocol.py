"""The data plane's wire format: a fixed header, a JSON frame, raw array buffers, an HMAC.

Frames of one message::

    header   struct HEADER: magic, kind, epoch, layer, interval, part, a, b
    descs    one struct DESC per array: dtype code, rows, cols
    info     UTF-8 JSON object (small: task descriptors, statistics), may be empty
    buf...   the arrays' raw bytes, sent zero-copy
    mac      HMAC-SHA256 (per-run key) over the length and bytes of every frame above

Nothing is ever unpickled. ``decode`` raises ``BadMessage`` for anything malformed or
unauthenticated; servers log it and drop the message.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import struct
from dataclasses import dataclass, field

import numpy as np

log = logging.getLogger("dorylus.train.protocol")

MAGIC = b"DRL1"
HEADER = struct.Struct("<4sBxxxiiiiqq")
DESC = struct.Struct("<Bxxxqq")
DTYPES = [np.dtype(t) for t in ("float32", "int32", "int64", "int8", "uint8", "float64", "bool")]
MAX_ARRAYS = 64

# message kinds. GHOST_GRAD carries a GAT layer's gradient contributions to ghost
# sources back to their owner, which adds them to its own (GHOST_BWD rows replace).
GHOST_FWD, GHOST_BWD, READY, EVENT, FETCH, REPLY, RESULT, GET_WEIGHTS, PUSH_GRAD, ACK, PROGRESS, CONTROL, GHOST_GRAD = range(1, 14)
KIND_NAMES = {v: k for k, v in dict(
    GHOST_FWD=GHOST_FWD, GHOST_BWD=GHOST_BWD, READY=READY, EVENT=EVENT, FETCH=FETCH, REPLY=REPLY, RESULT=RESULT,
    GET_WEIGHTS=GET_WEIGHTS, PUSH_GRAD=PUSH_GRAD, ACK=ACK, PROGRESS=PROGRESS, CONTROL=CONTROL, GHOST_GRAD=GHOST_GRAD).items()}


class BadMessage(Exception):
    """A message that fails authentication or does not parse."""


@dataclass
class Message:
    kind: int
    epoch: int = 0
    layer: int = 0
    interval: int = 0
    part: int = 0
    a: int = 0
    b: int = 0
    info: dict = field(default_factory=dict)
    arrays: list = field(default_factory=list)

    @property
    def nbytes(self) -> int:
        return sum(int(x.nbytes) for x in self.arrays)


def _mac(key: bytes, frames) -> bytes:
    h = hmac.new(key, digestmod=hashlib.sha256)
    for f in frames:
        view = memoryview(f)
        h.update(view.nbytes.to_bytes(8, "little"))
        h.update(view)
    return h.digest()


def encode(key: bytes, msg: Message) -> list:
    arrays = [np.ascontiguousarray(x) for x in msg.arrays]
    if len(arrays) > MAX_ARRAYS:
        raise ValueError("too many arrays in one message")
    descs = b"".join(
        DESC.pack(DTYPES.index(x.dtype), x.shape[0] if x.ndim else 1, x.shape[1] if x.ndim == 2 else -1) for x in arrays
    )
    head = HEADER.pack(MAGIC, msg.kind, msg.epoch, msg.layer, msg.interval, msg.part, msg.a, msg.b)
    info = json.dumps(msg.info, separators=(",", ":")).encode() if msg.info else b""
    frames = [head, descs, info, *(memoryview(x).cast("B") for x in arrays)]
    return frames + [_mac(key, frames)]


def decode(key: bytes, frames) -> Message:
    """Parse and authenticate a message (frames as bytes or zmq.Frame)."""
    bufs = [f.buffer if hasattr(f, "buffer") else memoryview(f) for f in frames]
    if len(bufs) < 4:
        raise BadMessage(f"{len(bufs)} frames; at least 4 expected")
    if not hmac.compare_digest(bytes(bufs[-1]), _mac(key, bufs[:-1])):
        raise BadMessage("HMAC does not match (wrong key or altered message)")
    head, descs, info = bufs[0], bufs[1], bufs[2]
    if head.nbytes != HEADER.size:
        raise BadMessage("bad header size")
    magic, kind, epoch, layer, interval, part, a, b = HEADER.unpack(head)
    if magic != MAGIC or kind not in KIND_NAMES:
        raise BadMessage(f"bad magic or kind {kind}")
    n = descs.nbytes // DESC.size
    if descs.nbytes % DESC.size or n != len(bufs) - 4:
        raise BadMessage("array descriptors do not match the frames")
    arrays = []
    for i in range(n):
        code, rows, cols = DESC.unpack_from(descs, i * DESC.size)
        if code >= len(DTYPES):
            raise BadMessage(f"unknown dtype code {code}")
        dtype = DTYPES[code]
        shape = (rows,) if cols < 0 else (rows, cols)
        buf = bufs[3 + i]
        if rows < 0 or int(np.prod(shape)) * dtype.itemsize != buf.nbytes:
            raise BadMessage(f"array {i}: {buf.nbytes} bytes do not make shape {shape} of {dtype}")
        arrays.append(np.frombuffer(buf, dtype=dtype).reshape(shape))
    try:
        meta = json.loads(bytes(info)) if info.nbytes else {}
    except ValueError as exc:
        raise BadMessage(f"info is not JSON: {exc}") from None
    if not isinstance(meta, dict):
        raise BadMessage("info is not a JSON object")
    return Message(kind, epoch, layer, interval, part, a, b, meta, arrays)


def send(sock, key: bytes, msg: Message, route: list | None = None) -> int:
    """Send zero-copy; returns the payload bytes sent (for the byte accounting)."""
    frames = encode(key, msg)
    sock.send_multipart([*(route or []), *frames], copy=False)
    return sum(memoryview(f).nbytes for f in frames)


def recv(sock, key: bytes, routed: bool = False):
    """(route, Message) from a ROUTER socket, or Message from any other; None if dropped."""
    frames = sock.recv_multipart(copy=False)
    route, body = (frames[:1], frames[1:]) if routed else ([], frames)
    try:
        msg = decode(key, body)
    except BadMessage as exc:
        log.warning("dropped a message: %s", exc)
        return (route, None) if routed else None
    return (route, msg) if routed else msg


def message_bytes(frames) -> int:
    return sum((f.buffer if hasattr(f, "buffer") else memoryview(f)).nbytes for f in frames)

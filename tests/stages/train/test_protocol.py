"""The data plane: round trips, zero-copy arrays, and dropping bad messages."""

from __future__ import annotations

import numpy as np
import pytest
import zmq

from stages.train import protocol as P
from stages.train.parameter_server import ParameterServer, PSClient

KEY = bytes(range(32))


def _frames(frames):
    return [bytes(memoryview(f)) for f in frames]


def test_round_trip_keeps_header_info_and_arrays():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    ids = np.array([3, 1, 2], dtype=np.int32)
    msg = P.Message(P.GHOST_FWD, epoch=7, layer=1, interval=2, part=3, a=-1, b=5, info={"k": [1, 2]}, arrays=[ids, x])
    got = P.decode(KEY, _frames(P.encode(KEY, msg)))
    assert (got.kind, got.epoch, got.layer, got.interval, got.part, got.a, got.b) == (P.GHOST_FWD, 7, 1, 2, 3, -1, 5)
    assert got.info == {"k": [1, 2]}
    assert np.array_equal(got.arrays[0], ids) and np.array_equal(got.arrays[1], x) and got.arrays[1].dtype == np.float32


@pytest.mark.parametrize("damage", ["wrong key", "flipped byte", "bad shape", "too few frames", "bad json"])
def test_bad_messages_are_rejected(damage):
    msg = P.Message(P.RESULT, arrays=[np.ones((2, 2), np.float32)], info={"a": 1})
    frames = _frames(P.encode(KEY, msg))
    key = KEY
    if damage == "wrong key":
        key = bytes(32)
    elif damage == "flipped byte":
        frames[3] = bytes([frames[3][0] ^ 1]) + frames[3][1:]
    elif damage == "bad shape":  # authentic but inconsistent: shape says 3 rows
        frames[1] = P.DESC.pack(0, 3, 2)
        frames[-1] = P._mac(KEY, frames[:-1])
    elif damage == "too few frames":
        frames = frames[:2]
    elif damage == "bad json":
        frames[2] = b"{not json"
        frames[-1] = P._mac(KEY, frames[:-1])
    with pytest.raises(P.BadMessage):
        P.decode(key, frames)


def test_parameter_server_drops_garbage_and_keeps_serving():
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    ps = ParameterServer({"key": KEY.hex(), "layers": {0: [["weights.0", w]]}, "num_intervals": 2,
                          "lr": 0.1, "weight_decay": 0.0, "eps": 1e-8})
    address = ps.start()
    try:
        raw = zmq.Context.instance().socket(zmq.DEALER)
        raw.setsockopt(zmq.LINGER, 0)
        raw.connect(address)
        raw.send_multipart([b"hello", b"not", b"a", b"message"])  # malformed
        raw.send_multipart(P.encode(bytes(32), P.Message(P.GET_WEIGHTS)))  # unauthenticated
        client = PSClient([address], KEY)
        version, (got,) = client.get(0)
        assert version == 0 and np.array_equal(got, w)
        # an update is applied once every interval has pushed its gradient, once
        g = np.ones((2, 3), np.float32)
        client.push(0, 1, 0, 0, [g])
        client.push(0, 1, 0, 0, [g])  # a relaunched task's duplicate
        assert client.get(0)[0] == 0
        client.push(0, 1, 1, 0, [g])
        version, (new,) = client.get(0)
        assert version == 1 and np.allclose(new, w - 0.1)  # Adam's first step moves each weight by lr
        assert ps.stats()["dropped"] == 2
        client.close()
        raw.close(0)
    finally:
        ps.stop()

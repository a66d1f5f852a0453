"""Tensor math of the tensor-parallel path: ApplyVertex, ApplyEdge, their backward, and
the fused last layer. Plain torch on the CPU, no autograd (gradients are written out so a
tensor worker needs nothing but its inputs).

Conventions: ``A`` is the gathered input of a layer (rows of one vertex interval), ``W``
the layer's weight, ``mask`` the interval's dropout mask (already scaled by 1/(1-p)) or
None. Dropout is applied to the gathered input of each layer, after the Gather, so the
layer-0 Gather of the constant features is computed once.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

# --- deterministic dropout --------------------------------------------------------------
_BANK = 1 << 16  # windows in one (seed, epoch, layer) bank of random keep bits


def _mix32(x: np.ndarray) -> np.ndarray:
    """murmur3's finalizer on a uint32 array (in place)."""
    with np.errstate(over="ignore"):
        x ^= x >> np.uint32(16)
        x *= np.uint32(0x85EBCA6B)
        x ^= x >> np.uint32(13)
        x *= np.uint32(0xC2B2AE35)
        x ^= x >> np.uint32(16)
    return x


def dropout_mask(seed: int, epoch: int, layer: int, global_ids: np.ndarray, dim: int, p: float) -> torch.Tensor | None:
    """The dropout mask of rows ``global_ids`` of one layer in one epoch, scaled by 1/(1-p).

    A pure function of (seed, epoch, layer, vertex, column), so any partitioning and any
    interval cut give the mask of the full-graph reference model. Hashing every element
    costs more than the layer's matmul, so each (seed, epoch, layer) draws one bank of
    ``_BANK + dim`` keep bits and a vertex's row is the window of ``dim`` bits at a hashed
    offset: a copy of n x dim values.
    """
    if p <= 0:
        return None
    key = int(_mix32(np.array([(seed * 1_000_003 + epoch * 7919 + layer * 104_729) & 0xFFFFFFFF], dtype=np.uint32))[0])
    gen = torch.Generator().manual_seed(key)
    bank = (torch.rand(_BANK + dim, generator=gen) >= p).to(torch.float32).mul_(1.0 / (1.0 - p))
    with np.errstate(over="ignore"):
        offsets = _mix32(np.asarray(global_ids).astype(np.uint32) * np.uint32(0x9E3779B1) ^ np.uint32(key)) % np.uint32(_BANK)
    return bank.unfold(0, dim, 1)[torch.from_numpy(offsets.astype(np.int64))]


# --- activations ------------------------------------------------------------------------
def activate(name: str, z: torch.Tensor) -> torch.Tensor:
    if name == "relu":
        return torch.relu(z)
    if name == "tanh":
        return torch.tanh(z)
    if name == "elu":
        return F.elu(z)
    raise ValueError(name)


def activate_grad(name: str, z: torch.Tensor, dh: torch.Tensor) -> torch.Tensor:
    """dL/dz from dL/dh for h = act(z)."""
    if name == "relu":
        return dh * (z > 0)
    if name == "tanh":
        t = torch.tanh(z)
        return dh * (1 - t * t)
    if name == "elu":
        return dh * torch.where(z > 0, torch.ones_like(z), torch.exp(z))
    raise ValueError(name)


def _masked(a: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    return a if mask is None else a * mask


# --- GCN ApplyVertex ----------------------------------------------------------------------
def apply_vertex(a: torch.Tensor, w: torch.Tensor, act: str, mask: torch.Tensor | None) -> torch.Tensor:
    """AV of a hidden layer: H' = act(drop(A) W)."""
    return activate(act, _masked(a, mask) @ w)


def apply_vertex_backward(
    a: torch.Tensor, w: torch.Tensor, act: str, mask: torch.Tensor | None, dh: torch.Tensor, need_da: bool
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The backward AV of a hidden layer, rematerializing Z = drop(A) W (cheaper than shipping it).

    Returns (dL/dW, dL/dA or None).
    """
    x = _masked(a, mask)
    dz = activate_grad(act, x @ w, dh)
    dw = x.T @ dz
    da = _masked(dz @ w.T, mask) if need_da else None
    return dw, da


def fused_last_layer(
    a: torch.Tensor, w: torch.Tensor, mask: torch.Tensor | None, labels: torch.Tensor, train: torch.Tensor, num_train: int
) -> tuple[float, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Forward, softmax cross-entropy on training rows only, and backward, in one task.

    ``train`` is a bool mask of the interval's training rows, ``num_train`` the number of
    training vertices in the whole graph (the loss is their mean).
    Returns (sum of the interval's training losses, dL/dW, dL/dA, logits).
    """
    x = _masked(a, mask)
    logits = x @ w
    logp = torch.log_softmax(logits, dim=1)
    idx = torch.nonzero(train, as_tuple=True)[0]
    y = labels[idx].long()
    loss_sum = float(-logp[idx, y].sum()) if len(idx) else 0.0
    g = torch.zeros_like(logits)
    if len(idx):
        gi = torch.exp(logp[idx])
        gi[torch.arange(len(idx)), y] -= 1.0
        g[idx] = gi / num_train
    dw = x.T @ g
    da = _masked(g @ w.T, mask)
    return loss_sum, dw, da, logits

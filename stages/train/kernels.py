"""Tensor math of the tensor-parallel path: ApplyVertex, ApplyEdge, their backward, and
the fused last layer. Plain torch on the CPU, no autograd (gradients are written out so a
tensor worker needs nothing but its inputs).

GAT's dropout (on every layer's input and on the attention coefficients) uses the same
deterministic masks, so the full-graph reference model can apply exactly the pipeline's.

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


ATTENTION_LAYER = 1 << 20  # offsets the layer of attention masks: their banks differ from the features'


def edge_ids(src_gids: np.ndarray, dst_gids: np.ndarray) -> np.ndarray:
    """One uint32 key per edge from the global ids of its ends (for ``dropout_mask``)."""
    with np.errstate(over="ignore"):
        d = _mix32(np.asarray(dst_gids).astype(np.uint32) * np.uint32(0x85EBCA77))
        return np.asarray(src_gids).astype(np.uint32) * np.uint32(0x9E3779B1) ^ d


def attention_dropout_mask(seed: int, epoch: int, layer: int, src_gids, dst_gids, heads: int, p: float):
    """GAT's dropout of attention coefficients: a (edges, heads) mask, a pure function of
    (seed, epoch, layer, global source, global destination, head), so any partitioning and
    interval cut drop the same coefficients as the full-graph reference model."""
    return dropout_mask(seed, epoch, ATTENTION_LAYER + layer, edge_ids(src_gids, dst_gids), heads, p)


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


def activate_grad_from_output(name: str, h: torch.Tensor, dh: torch.Tensor) -> torch.Tensor:
    """dL/dz from dL/dh given the output h = act(z): no need to recompute z."""
    if name == "relu":
        return dh * (h > 0)
    if name == "tanh":
        return dh * (1 - h * h)
    if name == "elu":
        return dh * torch.where(h > 0, torch.ones_like(h), h + 1)
    raise ValueError(name)


def _masked(a: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    return a if mask is None else a * mask


# --- GCN ApplyVertex ----------------------------------------------------------------------
def apply_vertex(a: torch.Tensor, w: torch.Tensor, act: str, mask: torch.Tensor | None) -> torch.Tensor:
    """AV of a hidden layer: H' = act(drop(A) W)."""
    return activate(act, _masked(a, mask) @ w)


def apply_vertex_backward(
    a: torch.Tensor, w: torch.Tensor, act: str, mask: torch.Tensor | None, dh: torch.Tensor, need_da: bool,
    h: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The backward AV of a hidden layer. Without the layer's output ``h`` it rematerializes
    Z = drop(A) W (cheaper than shipping Z to a remote worker); with ``h`` (the graph
    server's own threads have it in memory) it skips that matmul.

    Returns (dL/dW, dL/dA or None).
    """
    x = _masked(a, mask)
    dz = activate_grad(act, x @ w, dh) if h is None else activate_grad_from_output(act, h, dh)
    dw = x.T @ dz
    da = _masked(dz @ w.T, mask) if need_da else None
    return dw, da


def softmax_cross_entropy(logits: torch.Tensor, labels: torch.Tensor, train: torch.Tensor, num_train: int):
    """Sum of the training rows' cross-entropy and dL/dlogits of the mean over ``num_train``."""
    logp = torch.log_softmax(logits, dim=1)
    idx = torch.nonzero(train, as_tuple=True)[0]
    y = labels[idx].long()
    loss_sum = float(-logp[idx, y].sum()) if len(idx) else 0.0
    g = torch.zeros_like(logits)
    if len(idx):
        gi = torch.exp(logp[idx])
        gi[torch.arange(len(idx)), y] -= 1.0
        g[idx] = gi / num_train
    return loss_sum, g


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
    loss_sum, g = softmax_cross_entropy(logits, labels, train, num_train)
    return loss_sum, x.T @ g, _masked(g @ w.T, mask), logits


# --- GAT ----------------------------------------------------------------------------------
# A GAT layer in Dorylus' tasks (heads h, width d per head; edges u -> v as CSR rows v):
#   AV   Z = drop(X) W (n, h*d);  s_src = <Z_u, a_src>, s_dst = <Z_v, a_dst> per head
#   AE   e_uv = LeakyReLU(s_src[u] + s_dst[v]);  alpha = softmax of e over each v's in-edges
#   GA   out_v = sum_u alpha_uv Z_u   (per head; the graph server's SpMM with alpha as values)
# and the backward tasks in reverse. Everything below works on one CSR block of rows.
def _rows_of_edges(indptr: torch.Tensor) -> torch.Tensor:
    return torch.repeat_interleave(torch.arange(len(indptr) - 1), indptr[1:] - indptr[:-1])


def gat_project(x, w, att_src, att_dst, heads: int):
    """AV of GAT: Z and the per-head attention halves s_src, s_dst."""
    z = x @ w
    zh = z.view(len(z), heads, -1)
    return z, (zh * att_src).sum(-1), (zh * att_dst).sum(-1)


def gat_project_backward(x, w, att_src, att_dst, heads: int, dz, ds_src, ds_dst, z=None, need_dx: bool = True):
    """Backward AV of GAT: gradients of W, a_src, a_dst and of the input X (None without
    ``need_dx``). Z = X W is rematerialized unless given."""
    z = x @ w if z is None else z
    zh = z.reshape(len(z), heads, -1)
    dzh = dz.view(len(z), heads, -1) + ds_src[..., None] * att_src + ds_dst[..., None] * att_dst
    d_att_src = (ds_src[..., None] * zh).sum(0)
    d_att_dst = (ds_dst[..., None] * zh).sum(0)
    dzf = dzh.reshape(len(z), -1)
    return x.T @ dzf, d_att_src, d_att_dst, dzf @ w.T if need_dx else None


def edge_attention(indptr, s_src_e, s_dst, slope: float):
    """AE: alpha (nnz, heads) from s_src of each edge's source and s_dst of its row."""
    rows = _rows_of_edges(indptr)
    pre = s_src_e + s_dst[rows]
    e = F.leaky_relu(pre, slope)
    top = torch.full_like(s_dst, -torch.inf).scatter_reduce(0, rows[:, None].expand_as(e), e, "amax")
    ex = torch.exp(e - top[rows])
    total = torch.zeros_like(s_dst).index_add_(0, rows, ex)
    return ex / total[rows]


def edge_attention_backward(indptr, s_src_e, s_dst, alpha, d_alpha, slope: float):
    """Backward AE: gradients of s_src per edge and of s_dst per row."""
    rows = _rows_of_edges(indptr)
    pre = s_src_e + s_dst[rows]
    weighted = torch.zeros_like(s_dst).index_add_(0, rows, alpha * d_alpha)
    de = alpha * (d_alpha - weighted[rows])
    dpre = de * torch.where(pre > 0, torch.ones_like(pre), torch.full_like(pre, slope))
    return dpre, torch.zeros_like(s_dst).index_add_(0, rows, dpre)


def attention_gather(indptr, indices, alpha, z, heads: int):
    """GA of GAT: out_v = sum_u alpha_uv Z_u, per head. ``z`` may be a strided view (the
    Z columns of a graph server's [Z | s_src] buffer): only the edges' source rows are read."""
    rows = _rows_of_edges(indptr)
    zs = z[indices].view(len(indices), heads, -1)
    out = torch.zeros(len(indptr) - 1, heads, zs.shape[2], dtype=z.dtype)
    out.index_add_(0, rows, alpha[..., None] * zs)
    return out.reshape(len(indptr) - 1, -1)


def attention_gather_backward_edges(indptr, indices, alpha, z, heads: int, dout):
    """Backward GA of GAT per edge: d_alpha (edges, heads) and each edge's contribution
    alpha_uv dOut_v to its source's dZ (edges, heads*d), which the caller sums per source."""
    rows = _rows_of_edges(indptr)
    zs = z[indices].view(len(indices), heads, -1)
    douth = dout.view(len(dout), heads, -1)[rows]
    return (douth * zs).sum(-1), (alpha[..., None] * douth).reshape(len(indices), -1)


def attention_gather_backward(indptr, indices, alpha, z, heads: int, dout):
    """Backward GA of GAT: gradients of alpha (per edge) and of Z (per source row)."""
    d_alpha, contrib = attention_gather_backward_edges(indptr, indices, alpha, z, heads, dout)
    return d_alpha, torch.zeros(len(z), contrib.shape[1], dtype=z.dtype).index_add_(0, indices, contrib)


def gat_layer(sizes: list[int], heads: int, layer: int) -> tuple[int, int, int]:
    """(heads, width per head, input width) of a GAT layer: hidden layers concatenate
    ``heads`` heads, the last layer has one."""
    last = len(sizes) - 2
    h = heads if layer < last else 1
    width_in = sizes[0] if layer == 0 else heads * sizes[layer]
    return h, sizes[layer + 1], width_in

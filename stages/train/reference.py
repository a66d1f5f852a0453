"""Plain full-graph PyTorch models: what a trained ``weights.pt`` loads into, and the
reference the distributed pipeline is tested against.

    import torch
    from stages.train.reference import ReferenceGCN, normalized_adjacency
    model = ReferenceGCN([1433, 16, 7], activation="relu")
    model.load_state_dict(torch.load("weights.pt", weights_only=True))
    logits = model(normalized_adjacency(src, dst, num_nodes), features)

``weights.<l>`` is layer l's weight of shape (in, out); the models have no bias, like the
GCN paper's. GAT adds ``att_src.<l>`` and ``att_dst.<l>`` of shape (heads, out); a
``--model gat`` run's weights load the same way::

    model = ReferenceGAT([1433, 8, 7], heads=8)
    model.load_state_dict(torch.load("weights.pt", weights_only=True))
    logits = model(gat_edges(src, dst, num_nodes), features)
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from torch import nn

from stages.train import kernels

# torch flags sparse CSR as beta and skips invariant checks (ours are built correct)
warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
warnings.filterwarnings("ignore", message="Sparse invariant checks are implicitly disabled")


def glorot(fan_in: int, fan_out: int, gen: torch.Generator, shape=None) -> torch.Tensor:
    bound = (6.0 / (fan_in + fan_out)) ** 0.5
    return (torch.rand(shape or (fan_in, fan_out), generator=gen, dtype=torch.float32) * 2 - 1) * bound


def init_gcn_weights(sizes: list[int], seed: int) -> dict[str, torch.Tensor]:
    """Glorot-uniform initial weights; the same for the pipeline and the reference."""
    gen = torch.Generator().manual_seed(seed)
    return {f"weights.{l}": glorot(sizes[l], sizes[l + 1], gen) for l in range(len(sizes) - 1)}


def normalized_adjacency(src: np.ndarray, dst: np.ndarray, num_nodes: int) -> torch.Tensor:
    """Â = D^-1/2 (A+I) D^-1/2 as a sparse CSR (rows = destinations) with in-degrees,
    the same normalization the partition stage writes."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    deg = np.bincount(dst, minlength=num_nodes).astype(np.float64) + 1.0
    loops = np.arange(num_nodes)
    rows = np.concatenate([dst, loops])
    cols = np.concatenate([src, loops])
    vals = np.concatenate([1.0 / np.sqrt(deg[src] * deg[dst]), 1.0 / deg]).astype(np.float32)
    order = np.lexsort((cols, rows))
    rows, cols, vals = rows[order], cols[order], vals[order]
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=num_nodes), out=indptr[1:])
    return torch.sparse_csr_tensor(
        torch.from_numpy(indptr), torch.from_numpy(cols), torch.from_numpy(vals), size=(num_nodes, num_nodes)
    )


class ReferenceGCN(nn.Module):
    """H^{l+1} = act(drop(Â H^l) W^l); the last layer (after at least one hidden layer)
    gives logits Â (drop(H) W), Kipf and Welling's form, which gathers the narrow product."""

    def __init__(self, sizes: list[int], activation: str = "relu", dropout: float = 0.0, seed: int = 0):
        super().__init__()
        self.sizes, self.activation, self.dropout, self.seed = list(sizes), activation, dropout, seed
        init = init_gcn_weights(self.sizes, seed)
        self.weights = nn.ParameterList([nn.Parameter(init[f"weights.{l}"]) for l in range(len(sizes) - 1)])

    def forward(self, adj: torch.Tensor, x: torch.Tensor, epoch: int | None = None) -> torch.Tensor:
        """Logits; with ``epoch`` (1-based) the training forward with that epoch's dropout masks."""
        ids = np.arange(x.shape[0])
        h = x
        last = len(self.weights) - 1
        for l, w in enumerate(self.weights):
            narrow = l == last and l > 0  # the pipeline gathers H W there: Â (drop(H) W)
            a = h if narrow else adj @ h
            if epoch is not None:
                mask = kernels.dropout_mask(self.seed, epoch, l, ids, a.shape[1], self.dropout)
                if mask is not None:
                    a = a * mask
            h = adj @ (a @ w) if narrow else a @ w
            if l < last:
                h = kernels.activate(self.activation, h)
        return h


def train_reference(model: nn.Module, adj, x, labels, split, *, epochs: int, lr: float, weight_decay: float, eps: float = 1e-8):
    """Full-graph training with Adam; per epoch the training loss (with dropout) and the
    accuracies of the weights that entered the epoch (no dropout), as the pipeline reports."""
    opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay, eps=eps)
    labels = torch.as_tensor(np.array(labels), dtype=torch.long)
    split = np.asarray(split)
    train = torch.from_numpy(split == 1)
    history = []
    for epoch in range(1, epochs + 1):
        with torch.no_grad():
            pred = model(adj, x).argmax(1)
        acc = {name: float((pred[torch.from_numpy(split == code)] == labels[torch.from_numpy(split == code)]).float().mean())
               for name, code in (("train_acc", 1), ("val_acc", 2), ("test_acc", 3))}
        opt.zero_grad()
        logits = model(adj, x, epoch=epoch)
        loss = nn.functional.cross_entropy(logits[train], labels[train])
        loss.backward()
        opt.step()
        history.append({"epoch": epoch, "loss": float(loss.detach()), **acc})
    return history


def init_gat_weights(sizes: list[int], heads: int, seed: int) -> dict[str, torch.Tensor]:
    """Glorot-uniform GAT weights: hidden layers have ``heads`` heads, the last one head."""
    gen = torch.Generator().manual_seed(seed)
    out, fan_in = {}, sizes[0]
    for l in range(len(sizes) - 1):
        h = heads if l < len(sizes) - 2 else 1
        d = sizes[l + 1]
        out[f"weights.{l}"] = glorot(fan_in, h * d, gen)
        out[f"att_src.{l}"] = glorot(h, d, gen)
        out[f"att_dst.{l}"] = glorot(h, d, gen)
        fan_in = h * d
    return out


def gat_edges(src: np.ndarray, dst: np.ndarray, num_nodes: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The edges a GAT layer attends over, as the partition's in-CSR holds them: every
    edge (src, dst) as given (a kept self loop or duplicate stays) plus one self loop per vertex."""
    loops = np.arange(num_nodes, dtype=np.int64)
    return (torch.from_numpy(np.concatenate([np.asarray(src, np.int64), loops])),
            torch.from_numpy(np.concatenate([np.asarray(dst, np.int64), loops])))


class ReferenceGAT(nn.Module):
    """Full-graph GAT (Velickovic et al.): multi-head attention softmax-normalized over each
    vertex's in-neighbours (self loop included), ELU between layers, concatenated hidden
    heads, one head in the last layer, no bias. ``edges`` are (src, dst) including self
    loops (``gat_edges``).

    With ``epoch`` (1-based) the training forward: dropout on every layer's input and on
    the attention coefficients, with the pipeline's deterministic masks
    (``kernels.dropout_mask``, ``kernels.attention_dropout_mask``)."""

    def __init__(self, sizes: list[int], heads: int = 8, negative_slope: float = 0.2, dropout: float = 0.0, seed: int = 0):
        super().__init__()
        self.sizes, self.heads, self.slope, self.dropout, self.seed = list(sizes), heads, negative_slope, dropout, seed
        init = init_gat_weights(self.sizes, heads, seed)
        n = len(sizes) - 1
        self.weights = nn.ParameterList([nn.Parameter(init[f"weights.{l}"]) for l in range(n)])
        self.att_src = nn.ParameterList([nn.Parameter(init[f"att_src.{l}"]) for l in range(n)])
        self.att_dst = nn.ParameterList([nn.Parameter(init[f"att_dst.{l}"]) for l in range(n)])

    def forward(self, edges: tuple[torch.Tensor, torch.Tensor], x: torch.Tensor, epoch: int | None = None) -> torch.Tensor:
        src, dst = edges
        h = x
        n = x.shape[0]
        ids = np.arange(n)
        for l, w in enumerate(self.weights):
            heads = self.att_src[l].shape[0]
            if l > 0:
                h = nn.functional.elu(h)
            if epoch is not None:
                mask = kernels.dropout_mask(self.seed, epoch, l, ids, h.shape[1], self.dropout)
                h = h if mask is None else h * mask
            z = (h @ w).view(n, heads, -1)
            s_src = (z * self.att_src[l]).sum(-1)
            s_dst = (z * self.att_dst[l]).sum(-1)
            e = nn.functional.leaky_relu(s_src[src] + s_dst[dst], self.slope)
            top = torch.full((n, heads), -torch.inf, dtype=e.dtype).scatter_reduce(
                0, dst[:, None].expand_as(e), e.detach(), "amax")
            ex = torch.exp(e - top[dst])
            alpha = ex / torch.zeros(n, heads, dtype=e.dtype).index_add(0, dst, ex)[dst]
            if epoch is not None:
                amask = kernels.attention_dropout_mask(self.seed, epoch, l, src.numpy(), dst.numpy(), heads, self.dropout)
                alpha = alpha if amask is None else alpha * amask.to(alpha.dtype)
            h = torch.zeros(n, heads, z.shape[2], dtype=z.dtype).index_add(0, dst, alpha[..., None] * z[src])
            h = h.reshape(n, -1)
        return h

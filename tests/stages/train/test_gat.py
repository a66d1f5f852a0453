"""GAT: the tensor tasks' hand-written gradients (AV, AE, GA of GAT and their backward)
composed into a 2-layer GAT equal PyTorch autograd on a small graph."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from stages.train import kernels
from stages.train.reference import ReferenceGAT


def _small_graph(n=30, m=90, seed=0):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    keep = src != dst
    pairs = np.unique(np.stack([np.r_[src[keep], dst[keep], np.arange(n)], np.r_[dst[keep], src[keep], np.arange(n)]]), axis=1)
    order = np.lexsort((pairs[0], pairs[1]))  # CSR rows = destinations, sorted by source
    src, dst = pairs[0][order], pairs[1][order]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=indptr[1:])
    return torch.from_numpy(src), torch.from_numpy(dst), torch.from_numpy(indptr)


def test_gat_task_gradients_match_autograd():
    torch.manual_seed(0)
    n, heads, sizes, slope = 30, 3, [6, 4, 5], 0.2
    src, dst, indptr = _small_graph(n)
    x = torch.randn(n, sizes[0], dtype=torch.float64)
    labels = torch.randint(0, sizes[-1], (n,))
    model = ReferenceGAT(sizes, heads=heads, negative_slope=slope, seed=3).double()
    loss = F.cross_entropy(model((src, dst), x), labels)
    loss.backward()

    p = {name: v.detach() for name, v in model.named_parameters()}
    # forward, task by task
    acts, cache, h = [x], [], x
    for l in range(2):
        hh = heads if l == 0 else 1
        z, s_src, s_dst = kernels.gat_project(h, p[f"weights.{l}"], p[f"att_src.{l}"], p[f"att_dst.{l}"], hh)  # AV
        alpha = kernels.edge_attention(indptr, s_src[src], s_dst, slope)  # AE
        out = kernels.attention_gather(indptr, src, alpha, z, hh)  # GA
        cache.append((h, z, s_src, s_dst, alpha, out))
        h = F.elu(out) if l == 0 else out
    logits = h
    assert torch.allclose(logits, model((src, dst), x).detach())
    # backward, task by task
    g = torch.softmax(logits, 1)
    g[torch.arange(n), labels] -= 1
    dout = g / n
    grads = {}
    for l in (1, 0):
        hh = heads if l == 0 else 1
        h_in, z, s_src, s_dst, alpha, out = cache[l]
        if l == 0:
            dout = kernels.activate_grad("elu", out, dout)
        d_alpha, dz = kernels.attention_gather_backward(indptr, src, alpha, z, hh, dout)  # GA_b
        ds_src_e, ds_dst = kernels.edge_attention_backward(indptr, s_src[src], s_dst, alpha, d_alpha, slope)  # AE_b
        ds_src = torch.zeros_like(s_src).index_add_(0, src, ds_src_e)  # the graph server's scatter of edge grads
        dw, da_src, da_dst, dx = kernels.gat_project_backward(
            h_in, p[f"weights.{l}"], p[f"att_src.{l}"], p[f"att_dst.{l}"], hh, dz, ds_src, ds_dst)  # AV_b
        grads.update({f"weights.{l}": dw, f"att_src.{l}": da_src, f"att_dst.{l}": da_dst})
        dout = dx
    for name, param in model.named_parameters():
        torch.testing.assert_close(grads[name], param.grad, rtol=1e-9, atol=1e-12)

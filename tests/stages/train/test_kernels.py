"""Hand-written gradients of the tensor tasks against PyTorch autograd."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from stages.train import kernels


@pytest.mark.parametrize("act", ["relu", "tanh", "elu"])
def test_apply_vertex_backward_matches_autograd(act):
    gen = torch.Generator().manual_seed(1)
    a = torch.randn(50, 12, generator=gen, dtype=torch.float64)
    w = torch.randn(12, 7, generator=gen, dtype=torch.float64, requires_grad=True)
    mask = kernels.dropout_mask(3, 2, 0, np.arange(50), 12, 0.4).double()
    dh = torch.randn(50, 7, generator=gen, dtype=torch.float64)
    a_req = a.clone().requires_grad_(True)
    out = kernels.activate(act, (a_req * mask) @ w)
    out.backward(dh)
    assert torch.allclose(kernels.apply_vertex(a, w.detach(), act, mask), out.detach())
    dw, da = kernels.apply_vertex_backward(a, w.detach(), act, mask, dh, need_da=True)
    assert torch.allclose(dw, w.grad) and torch.allclose(da, a_req.grad)


def test_fused_last_layer_matches_autograd():
    gen = torch.Generator().manual_seed(2)
    a = torch.randn(40, 9, generator=gen, dtype=torch.float64, requires_grad=True)
    w = torch.randn(9, 5, generator=gen, dtype=torch.float64, requires_grad=True)
    labels = torch.randint(0, 5, (40,), generator=gen)
    train = torch.rand(40, generator=gen) < 0.5
    num_train = 100  # the interval's rows are part of a bigger training set
    logits = a @ w
    loss = torch.nn.functional.cross_entropy(logits[train], labels[train], reduction="sum") / num_train
    loss.backward()
    loss_sum, dw, da, out = kernels.fused_last_layer(a.detach(), w.detach(), None, labels, train, num_train)
    assert loss_sum / num_train == pytest.approx(float(loss.detach()))
    assert torch.allclose(dw, w.grad) and torch.allclose(da, a.grad) and torch.allclose(out, logits.detach())


def test_dropout_mask_is_a_function_of_vertex_not_of_the_cut():
    ids = np.array([5, 17, 2, 999, 40])
    full = kernels.dropout_mask(7, 3, 1, np.arange(1000), 33, 0.5)
    part = kernels.dropout_mask(7, 3, 1, ids, 33, 0.5)
    assert torch.equal(part, full[torch.from_numpy(ids)])
    assert set(torch.unique(full).tolist()) == {0.0, 2.0}
    assert 0.45 < float((full > 0).float().mean()) < 0.55
    other_epoch = kernels.dropout_mask(7, 4, 1, np.arange(1000), 33, 0.5)
    assert not torch.equal(full, other_epoch)
    assert kernels.dropout_mask(7, 3, 1, ids, 33, 0.0) is None


def test_attention_dropout_mask_is_a_function_of_the_edge():
    """Any cut of the edges (partitions, intervals, edge order) gets the same mask rows."""
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, 5000, 20000), rng.integers(0, 5000, 20000)
    full = kernels.attention_dropout_mask(3, 7, 1, src, dst, 8, 0.6)
    order = rng.permutation(len(src))[:5000]
    part = kernels.attention_dropout_mask(3, 7, 1, src[order], dst[order], 8, 0.6)
    assert torch.equal(part, full[torch.from_numpy(order)])
    assert set(torch.unique(full).tolist()) == {0.0, 2.5}  # kept coefficients scaled by 1/(1-p)
    assert 0.35 < float((full > 0).float().mean()) < 0.45
    # another epoch, layer, or the reversed edge draws other coefficients
    assert not torch.equal(full, kernels.attention_dropout_mask(3, 8, 1, src, dst, 8, 0.6))
    assert not torch.equal(full, kernels.attention_dropout_mask(3, 7, 0, src, dst, 8, 0.6))
    assert not torch.equal(full, kernels.attention_dropout_mask(3, 7, 1, dst, src, 8, 0.6))
    assert kernels.attention_dropout_mask(3, 7, 1, src, dst, 8, 0.0) is None

"""The array side of the probabilistic executor (:mod:`executors.probabilistic`): the two backends it
runs on (:class:`NumpyBackend`; :class:`TorchBackend`, CPU or CUDA, torch imported only when one is
made) and the batched kernels of its rules, each over a group of G rows at once: the posterior of
*the* element of a set (:func:`exactly_one`), the count distributions (:func:`poisson_binomial`,
:func:`point_count`), the attribute marginal of a part distribution (:func:`part_marginal`).

A backend ``be`` offers ``be.xp`` (numpy or torch), ``be.dtype``, ``be.name`` and the few array
operations whose spelling differs between the two (``asarray``, ``index``, ``zeros``, ``cat``, ...).
Imports numpy only.
"""
from __future__ import annotations

import numpy as np


# ====================================================================== backends
class NumpyBackend:
    name = "numpy"

    def __init__(self, dtype):
        self.dtype = np.dtype(dtype)
        self.xp = np

    def asarray(self, x, dtype=None):
        return np.asarray(x, dtype=dtype or self.dtype)

    def index(self, x):
        return np.asarray(x, dtype=np.intp)

    def zeros(self, shape):
        return np.zeros(shape, dtype=self.dtype)

    def empty(self, shape):
        return np.empty(shape, dtype=self.dtype)

    def cumprod(self, x, axis):
        return np.cumprod(x, axis=axis)

    def flip(self, x, axis):
        return np.flip(x, axis=axis)

    def to_numpy(self, x):
        return np.asarray(x)

    def as_float(self, x):
        return x.astype(self.dtype)

    def cat(self, xs, axis):
        return np.concatenate(xs, axis=axis)

    def stack(self, xs, axis):
        return np.stack(xs, axis=axis)


class TorchBackend:
    name = "torch"

    def __init__(self, dtype, device):
        import torch  # lazily: executors needs numpy only

        self.torch = torch
        self.xp = torch
        self.dtype = {"float64": torch.float64, "float32": torch.float32}[np.dtype(dtype).name]
        self.device = torch.device(device)

    def asarray(self, x, dtype=None):
        return self.torch.as_tensor(np.asarray(x), dtype=dtype or self.dtype, device=self.device)

    def index(self, x):
        return self.torch.as_tensor(np.asarray(x, dtype=np.int64), device=self.device)

    def zeros(self, shape):
        return self.torch.zeros(shape, dtype=self.dtype, device=self.device)

    def empty(self, shape):
        return self.torch.empty(shape, dtype=self.dtype, device=self.device)

    def cumprod(self, x, axis):
        return self.torch.cumprod(x, dim=axis)

    def flip(self, x, axis):
        return self.torch.flip(x, dims=(axis,))

    def to_numpy(self, x):
        return x.detach().cpu().numpy()

    def as_float(self, x):
        return x.to(self.dtype)

    def cat(self, xs, axis):
        return self.torch.cat(xs, dim=axis)

    def stack(self, xs, axis):
        return self.torch.stack(xs, dim=axis)


# ====================================================================== kernels
def exactly_one(be, p):
    """Posterior of *the* element given exactly one: q_i = p_i prod_{j != i}(1 - p_j) / Z.

    Args:
        p: (G, M) membership probabilities.
    Returns:
        q (G, M); ok (G,) bool, False where Z = P(exactly one) is exactly 0 (all p = 0, or two
        elements with p = 1: the deterministic failure); Z (G,), the step's confidence.

    numpy: running products on the transposed layout for small M, a product-over-quotient form
    otherwise; rows whose Z underflows although it is not 0 are redone in log space. torch:
    log space throughout (no host synchronisation).
    """
    if be.name != "numpy":
        certain = p >= 1.0
        k = certain.sum(-1)
        q, z = exactly_one_log(be, p, certain, k)
        return q, (k < 2) & (p > 0).any(-1), z
    G, M = p.shape
    if G == 1:
        # one row: the running products below as two cumulative products (the same products,
        # multiplied in the same order; ndarray methods and ufuncs called directly: on ten
        # elements the calls are the cost)
        w = p[0].copy()
        r = 1.0 - w
        w[1:] *= r[:-1].cumprod()
        w[:-1] *= r[:0:-1].cumprod()[::-1]
        z = np.add.reduce(w, keepdims=True)  # w.sum(keepdims=True) without its Python wrapper
        ok = z > 0
        if ok[0]:
            return (w / z)[None], ok, z
        q = w[None]
    elif M <= 32:
        # transposed (M, G) layout: every step below is a vector operation over the G rows
        pt = np.ascontiguousarray(p.T)
        r = 1.0 - pt
        wt = pt.copy()
        acc = r[0].copy()
        for j in range(1, M):
            wt[j] *= acc  # prod_{k < j} r_k
            acc *= r[j]
        acc = r[M - 1].copy()
        for j in range(M - 2, -1, -1):
            wt[j] *= acc  # prod_{k > j} r_k
            acc *= r[j]
        z = wt.sum(0)
        wt /= np.where(z > 0, z, 1.0)
        q = wt.T
    else:
        certain = p >= 1.0
        k = certain.sum(-1)
        r = np.where(certain, 1.0, 1.0 - p)
        prod = r.prod(-1, keepdims=True)  # product over the uncertain elements
        w = p * np.where(certain, prod * (k == 1)[:, None], prod * (k == 0)[:, None] / r)
        z = w.sum(-1)
        q = w / np.where(z > 0, z, 1.0)[:, None]
    ok = z > 0
    zero = np.flatnonzero(~ok)
    if len(zero):
        # Z == 0 is a failure only if it is exactly 0: no element, or two certain ones; else it
        # underflowed, and those rows are redone in log space
        pz = p[zero]
        certain = pz >= 1.0
        k = certain.sum(-1)
        exact_ok = (k < 2) & (pz > 0).any(-1)
        ok[zero] = exact_ok
        rows = zero[exact_ok]
        if len(rows):
            q = np.array(q)
            q[rows], z[rows] = exactly_one_log(be, p[rows], certain[exact_ok], k[exact_ok])
    return q, ok, z


def exactly_one_log(be, p, certain, k):
    """:func:`exactly_one` in log space (no underflow): returns normalised q and Z."""
    xp = be.xp
    one = xp.ones_like(p)
    log_r = xp.log(xp.where(certain, one, 1.0 - p))
    total = log_r.sum(-1, keepdims=True)
    with np.errstate(divide="ignore"):
        log_w = xp.log(p) + total - log_r
    neg = xp.full_like(p, -np.inf)
    k1 = (k == 1)[:, None]
    k0 = (k == 0)[:, None]
    log_w = xp.where(certain, xp.where(k1, log_w, neg), xp.where(k0, log_w, neg))
    m = xp.amax(log_w, -1, keepdims=True)
    fin = xp.isfinite(m)
    e = xp.exp(log_w - xp.where(fin, m, xp.zeros_like(m)))
    s = e.sum(-1, keepdims=True)
    q = e / xp.where(fin, s, xp.ones_like(s))
    z = xp.where(fin, xp.exp(m) * s, xp.zeros_like(s))[:, 0]
    return q, z


def poisson_binomial(be, p):
    """(G, N+1) distribution of the number of elements of independent memberships p (G, N).

    Dynamic programme over the elements, on the transposed (count, G) layout so every step is a
    few vector operations over all G rows; after element j only counts 0..j+1 are non-zero.
    """
    G, N = p.shape
    pt = p.T.contiguous() if be.name == "torch" else np.ascontiguousarray(p.T)
    qt = 1.0 - pt
    d = be.zeros((N + 1, G))
    d[0] = 1.0
    for j, (pj, qj) in enumerate(zip(pt, qt)):
        # d[k] <- d[k] q_j + d[k-1] p_j, in place (d[j+1] is still 0 before step j)
        t = d[:j + 1] * pj
        d[:j + 2] *= qj
        d[1:j + 2] += t
    return d.T


def point_count(be, selected, N):
    """(G, N+1) one-hot at the number of selected elements."""
    G = selected.shape[0]
    k = selected.sum(-1)
    out = be.zeros((G, N + 1))
    idx = be.index(np.arange(G))
    out[idx, k] = 1.0
    return out


def part_marginal(be, q, PA, s):
    """(G, Kp) sum_{n,p} q[g, n, p] * PA[s[g], n, p, :].

    A part distribution is non-zero on a few parts (those of the objects it came from), so on
    numpy only the non-zero entries gather their attribute rows; torch uses the dense einsum.
    """
    if be.name != "numpy":
        return be.xp.einsum("gnp,gnpk->gk", q, PA[s])
    g, n, p = np.nonzero(q)
    if len(g) > q.size // 4:
        return np.einsum("gnp,gnpk->gk", q, PA[s])
    out = np.zeros((q.shape[0], PA.shape[-1]), dtype=q.dtype)
    np.add.at(out, g, q[g, n, p][:, None] * PA[s[g], n, p])
    return out


def yes_no(be, y):
    """(G, 2) [P(yes), P(no)]."""
    return be.stack([y, 1.0 - y], -1)


def cumsum(be, x):
    return be.xp.cumsum(x, -1) if be.name == "numpy" else be.torch.cumsum(x, dim=-1)


__all__ = ["NumpyBackend", "TorchBackend", "exactly_one", "exactly_one_log", "poisson_binomial", "point_count",
           "part_marginal", "yes_no", "cumsum"]

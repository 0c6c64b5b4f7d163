"""Aggregation perturbation (GAP, Sajadmanesh, Shamsabadi, Bellet & Gatica-Perez, USENIX
Security 2023, Sec. 4.2-5) under **bounded-degree** node-level DP.

GAP bounds out-degrees by keeping D random out-edges per node and states an l2 sensitivity of
sqrt(D) per hop. That is false (issue #11; Xiang, Wang & Wang, IEEE S&P 2024 also report a
flaw in GAP's node-level analysis): removing a node frees slots at its in-neighbours, so other
edges enter and aggregates of nodes that are not its out-neighbours change, without bound
(e.g. 50 nodes point to both v and w, D = 1: removing v moves about 25 unit vectors into w's
sum). We know of no degree-bounding step whose node-level sensitivity is bounded on *all*
graphs and that keeps a useful fraction of the edges: every "keep the top D" rule refills the
slots a removed node frees (docs/node-dp.md). So dpgl states GAP's guarantee for what it can
prove, **bounded-degree node-DP** (``Unit.BOUNDED_NODE_DP``; Kasiviswanathan et al. 2013):
neighbouring graphs differ in one node with its features and edges, and both have every in-
and out-degree <= D, a public bound. There is no degree-bounding step; a training graph that
breaks the promise is refused (:func:`check_degree_bound`).

Sensitivity (proved): :class:`AggregationPerturbation` computes, per hop k,
X_k = A^T normalize(X_{k-1}) + N(0, sigma^2 I), where X_{k-1} is already released (X_0 =
normalize(encoder output), computed per node from its own features). Think of the release as
one row per public node id (an absent node's row is the empty sum plus noise). Removing node w
(a) removes its unit-norm row from the sums of its <= D out-neighbours (squared change <= D)
and (b) turns its own row, a sum of <= D unit vectors, into the empty sum (squared change
<= D^2); no other row changes, since no edge choice depends on other nodes. Hence the l2
sensitivity of one hop is sqrt(D + D^2) (:func:`ap_sensitivity`), and ``hops`` hops are an
adaptive composition of Gaussian mechanisms with noise multiplier sigma / sqrt(D + D^2).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from dpgl.errors import ConfigError, GraphError, PrivacyError
from dpgl.privacy import Accountant, Guarantee, Randomizer, Unit, current_accountant
from dpgl.privacy._validation import check_unit

__all__ = ["AggregationPerturbation", "ap_sensitivity", "check_degree_bound", "max_degrees"]


def _edges(edge_index: torch.Tensor, num_nodes: int) -> np.ndarray:
    ei = edge_index.numpy() if isinstance(edge_index, torch.Tensor) else np.asarray(edge_index)
    if ei.ndim != 2 or ei.shape[0] != 2:
        raise GraphError(f"edge_index must have shape [2, E], got {ei.shape}")
    if ei.size and (ei.min() < 0 or ei.max() >= num_nodes):
        raise GraphError(f"edge_index has node ids outside [0, {num_nodes - 1}]")
    return ei.astype(np.int64)


def max_degrees(edge_index: torch.Tensor, num_nodes: int) -> tuple[int, int]:
    """(largest in-degree, largest out-degree) of a directed edge list (source -> target)."""
    ei = _edges(edge_index, num_nodes)
    if ei.shape[1] == 0:
        return 0, 0
    out_deg = np.bincount(ei[0], minlength=num_nodes)
    in_deg = np.bincount(ei[1], minlength=num_nodes)
    return int(in_deg.max()), int(out_deg.max())


def check_degree_bound(edge_index: torch.Tensor, num_nodes: int, max_degree: int,
                       what: str = "the training graph") -> None:
    """Refuse a graph with an in- or out-degree above the public bound D (bounded-degree
    node-DP holds only for graphs that keep the promise)."""
    if isinstance(max_degree, bool) or int(max_degree) < 1:
        raise ConfigError(f"max_degree must be an integer >= 1, got {max_degree!r}")
    d_in, d_out = max_degrees(edge_index, num_nodes)
    if max(d_in, d_out) > max_degree:
        raise ConfigError(
            f"{what} has in-degree up to {d_in} and out-degree up to {d_out}, above "
            f"max_degree={max_degree}: bounded-degree node-DP covers graphs within the declared "
            "bound only (a degree-bounding step would not keep a provable node-level "
            "sensitivity; see docs/node-dp.md); declare a larger max_degree")


def ap_sensitivity(max_degree: int) -> float:
    """Node-level l2 sensitivity of one aggregation hop over graphs with in- and out-degree
    <= D and unit-norm rows: sqrt(D + D^2) (D out-neighbour rows change by a unit vector,
    the node's own row by a sum of at most D of them; module docstring)."""
    if isinstance(max_degree, bool) or int(max_degree) < 1:
        raise ConfigError(f"max_degree must be >= 1, got {max_degree}")
    d = int(max_degree)
    return math.sqrt(d + d * d)


def _normalize(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=1, keepdim=True).clamp_min(1e-12)


class AggregationPerturbation(Randomizer):
    """GAP's PMA module (Sec. 4.2): ``[X_0, ..., X_H]`` with X_0 = normalize(x) and X_k =
    normalize(A^T X_{k-1} + N(0, sigma^2 I)), sigma = noise_multiplier * sqrt(D + D^2).

    Each call checks the degree promise, draws ``hops`` Gaussian releases and charges them to
    the active accountant (a Gaussian event with ``hops`` steps). ``noise_multiplier=None``
    is non-private GAP (no noise, nothing charged).
    """

    def __init__(self, hops: int, noise_multiplier: float | None, max_degree: int, *,
                 unit: Unit | str = Unit.BOUNDED_NODE_DP,
                 label: str = "aggregation perturbation") -> None:
        if isinstance(hops, bool) or int(hops) < 0:
            raise ConfigError(f"hops must be >= 0, got {hops}")
        if noise_multiplier is not None and not noise_multiplier > 0:
            raise ConfigError(f"noise_multiplier must be > 0, got {noise_multiplier}")
        self.hops = int(hops)
        self.noise_multiplier = noise_multiplier
        self.max_degree = int(max_degree)
        self.sensitivity = ap_sensitivity(self.max_degree)
        self.unit = check_unit(unit)
        self.label = label

    @property
    def sigma(self) -> float:
        """The noise standard deviation every hop draws with."""
        return 0.0 if self.noise_multiplier is None else self.noise_multiplier * self.sensitivity

    def guarantee_at(self, delta: float) -> Guarantee:
        """(eps, delta) of the ``hops`` Gaussian releases alone (RDP accounting); no privacy
        (eps = inf) without noise; an error when nothing is released (``hops`` = 0)."""
        if self.noise_multiplier is None:
            return Guarantee(math.inf, 0.0, self.unit)
        if self.hops == 0:
            raise PrivacyError("aggregation perturbation with hops=0 releases no aggregate: "
                               "there is no guarantee to state")
        acc = Accountant(delta=delta)
        with acc.active():
            self.charge()
        total = acc.report().total(self.unit)
        assert total is not None
        return total

    @property
    def guarantee(self) -> Guarantee:
        """A Gaussian event has an epsilon only at a target delta: see :meth:`guarantee_at`
        (the run's report composes it with the other parts at the run's delta)."""
        raise PrivacyError("aggregation perturbation's epsilon depends on the target delta: "
                           "use guarantee_at(delta)")

    def charge(self, **_: object) -> None:  # type: ignore[override]
        """Record the ``hops`` Gaussian releases in the active accountant."""
        acc = current_accountant()
        if acc is None or self.noise_multiplier is None or self.hops == 0:
            return
        acc.spend_gaussian(self.label, noise_multiplier=self.noise_multiplier, steps=self.hops,
                           unit=self.unit,
                           sensitivity_note=(f"in- and out-degree <= {self.max_degree}: l2 "
                                             f"sensitivity sqrt(D + D^2) = "
                                             f"{self.sensitivity:.4g} per hop"))

    def perturb(self, x: torch.Tensor, edge_index: torch.Tensor, rng: np.random.Generator,
                *, what: str = "the training graph", check_bound: bool = True,
                normalize: bool = True) -> list[torch.Tensor]:
        """The ``hops + 1`` normalized aggregates of ``x`` over ``edge_index`` (sum over
        in-neighbours, source -> target). ``check_bound=False`` only for held-out evaluation
        graphs, which the guarantee does not cover. ``normalize=False`` returns each hop's
        noisy sums before their (post-processing) normalization (audits); the next hop still
        aggregates the normalized rows."""
        n = x.size(0)
        if check_bound:
            check_degree_bound(edge_index, n, self.max_degree, what)
        ei = torch.as_tensor(_edges(edge_index, n))
        src, dst = ei[0], ei[1]
        gen = torch.Generator()
        gen.manual_seed(int(rng.integers(0, 2**63 - 1)))
        sigma = self.sigma
        out = [_normalize(x.float())]
        raw = [out[0]]
        for _ in range(self.hops):
            h = out[-1]
            agg = torch.zeros_like(h).index_add_(0, dst, h[src])
            if sigma > 0:
                agg = agg + sigma * torch.randn(agg.shape, generator=gen)
            raw.append(agg)
            out.append(_normalize(agg))
        self.charge()
        return out if normalize else raw

    def _repr_args(self) -> dict[str, object]:
        return {"hops": self.hops, "noise_multiplier": self.noise_multiplier,
                "max_degree": self.max_degree}

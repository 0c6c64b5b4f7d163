"""End-to-end audits of every shipped randomizer, through the code path the methods run.

Each entry builds the randomizer exactly as its method does and draws with the same function
the method calls (the whole-population simulation ``simulate_lists`` of the edge randomizers,
:class:`~dpgl.mechanisms.features.CollectFeatures`, :class:`~dpgl.mechanisms.labels.
CollectLabels`, the DP-APPR release, the aggregation perturbation), on a small population. The
claimed guarantee is **what that code charges** to an active accountant, not a number stated
here. The neighbouring pair is the worst case of each proof: one bit of user 0's neighbour list
(only her list changes; every other user's list is the same), user 0's feature vector from one
corner of the public range to the other (or far outside it, so any preprocessing that reads
other users' data would show), user 0's label, a PPR vector whose every entry moves by the
clip, a node with D in- and D out-neighbours. The output features the event search sees
include user 0's report *and* statistics of the other users' reports, so a leak through
other users' reports is visible too.

``spend_factor`` f builds the randomizer with f times the budget while the claim stays that
of the correct randomizer: f = 2 is the power check (the audit must flag it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from torch_geometric.data import Data

from dpgl import progress
from dpgl.central.aggregation import AggregationPerturbation
from dpgl.central.dp_appr import DPAPPRExponential, DPAPPRGaussian
from dpgl.errors import ConfigError
from dpgl.graph.pairs import num_pairs, pair_to_index
from dpgl.mechanisms.blink import BlinkClient
from dpgl.mechanisms.dprr import DPRR
from dpgl.mechanisms.features import public_feature_range
from dpgl.mechanisms.lap import LocalLap
from dpgl.mechanisms.ldpgen import LDPGenClient
from dpgl.mechanisms.rr import RR
from dpgl.mechanisms.symrr import SymRR
from dpgl.methods.graph_ldp import GraphLDPParams, graph_randomizer
from dpgl.privacy import Accountant, Guarantee, Unit
from dpgl.privacy.audit import AuditableMechanism, AuditSetup
from dpgl.privacy.multiterm import quiet_absl
from dpgl.transforms import CollectFeatures, CollectLabels

__all__ = ["LOCAL_AUDITS", "claim_of"]

#: The edge-LDP population: 4 users. User 0's list is empty (input 0) or {1} (input 1);
#: the others' lists are fixed and not symmetric to hers (user 1 does not list 0).
_N = 4
_OTHERS = (np.array([1, 2, 2, 3]), np.array([2, 1, 3, 2]))


def _lists(which: int, user: int = 0, neighbor: int = 1) -> tuple[np.ndarray, np.ndarray]:
    src, dst = _OTHERS
    if which:
        src, dst = np.r_[src, user], np.r_[dst, neighbor]
    return src, dst


def claim_of(run_once: Callable[[], Any], unit: Unit, delta: float | None = None
             ) -> Guarantee:
    """The guarantee the code path charges for one run (each user's total for ``unit``)."""
    acc = Accountant(delta=delta)
    with acc.active(), quiet_absl():
        run_once()
    total = acc.report().total(unit)
    if total is None:
        raise ConfigError(f"the audited code path charged nothing for {unit.value}")
    return total


def _per_trial(draw: Callable[[int, np.random.Generator], np.ndarray]
               ) -> Callable[[int, int, np.random.Generator], np.ndarray]:
    """A sampler that calls the code path once per trial (each call = one population)."""
    def sample(n: int, which: int, rng: np.random.Generator) -> np.ndarray:
        out = []
        with progress.step(f"runs of the code path on input x{which}", total=n) as bar:
            for _ in range(n):
                out.append(draw(which, rng))
                bar.advance()
        return np.stack(out)
    return sample


# --------------------------------------------------------------------------- edge LDP


def _bits(user: np.ndarray, neighbor: np.ndarray, who: int) -> np.ndarray:
    """User ``who``'s reported bits towards the other users, and the others' report count."""
    mine = neighbor[user == who]
    bits = np.array([float(j in mine) for j in range(_N) if j != who])
    return np.r_[bits, float(np.sum(user != who))]


_BIT_NAMES = ("y_01", "y_02", "y_03", "others' reported bits")


def _rr(eps: float, p: dict[str, Any], f: float) -> AuditSetup:
    claim = claim_of(lambda: RR(eps).simulate_lists(*_lists(1), _N, np.random.default_rng(0)),
                     Unit.EDGE_LDP)
    mech = RR(f * eps)

    def draw(which: int, rng: np.random.Generator) -> np.ndarray:
        rep = mech.simulate_lists(*_lists(which), _N, rng)
        return _bits(rep.user, rep.neighbor, 0)

    return AuditSetup(claim, "user 0's list {} vs {1} (others fixed)", _BIT_NAMES,
                      _per_trial(draw), outcome_groups=((0, 1, 2),))


def _symrr(eps: float, p: dict[str, Any], f: float) -> AuditSetup:
    # user 3 reports the bits j < 3 of her list: {} vs {0}
    def lists(which: int) -> tuple[np.ndarray, np.ndarray]:
        return _lists(which, user=3, neighbor=0)

    claim = claim_of(lambda: SymRR(eps).simulate_lists(*lists(1), _N, np.random.default_rng(0)),
                     Unit.EDGE_LDP)
    mech = SymRR(f * eps)

    def draw(which: int, rng: np.random.Generator) -> np.ndarray:
        a, b = mech.simulate_lists(*lists(which), _N, rng)
        mine = {int(x) for x, y in zip(a, b, strict=True) if y == 3}
        return np.array([float(j in mine) for j in range(3)] + [float(np.sum(b != 3))])

    return AuditSetup(claim, "user 3's list {} vs {0} (she reports j < 3)",
                      ("y_30", "y_31", "y_32", "others' reported pairs"), _per_trial(draw))


def _dprr(eps: float, p: dict[str, Any], f: float) -> AuditSetup:
    n_max = int(p["n_max"])
    claim = claim_of(lambda: DPRR(eps, n_max=n_max).simulate_lists(
        *_lists(1), _N, np.random.default_rng(0)), Unit.EDGE_LDP)
    mech = DPRR(f * eps, n_max=n_max)

    def draw(which: int, rng: np.random.Generator) -> np.ndarray:
        rep, _ = mech.simulate_lists(*_lists(which), _N, rng)
        return _bits(rep.user, rep.neighbor, 0)

    return AuditSetup(claim, f"user 0's list {{}} vs {{1}} (others fixed; Eq. 8 with "
                             f"n_max={n_max})", _BIT_NAMES, _per_trial(draw),
                      outcome_groups=((0, 1, 2),))


def _dprr_graph(eps: float, p: dict[str, Any], f: float) -> AuditSetup:
    """The graph-classification client (its GraphRandomizer, per graph): an undirected graph, so
    the edge {0, 1} is in both users' lists; only user 0's report is observed."""
    params = GraphLDPParams(n_max=int(p["n_max"]))

    def graph(which: int) -> Data:
        u, v = [1, 2], [2, 3]
        if which:
            u, v = [0, *u], [1, *v]
        ei = torch.tensor([u + v, v + u])
        return Data(edge_index=ei, num_nodes=_N, y=torch.tensor([0]))

    claim = claim_of(lambda: graph_randomizer("dprr", eps, params)(graph(1),
                                                                  np.random.default_rng(0)),
                     Unit.EDGE_LDP)
    rand = graph_randomizer("dprr", f * eps, params)

    def draw(which: int, rng: np.random.Generator) -> np.ndarray:
        rep = rand(graph(which), rng).reports
        return _bits(rep.user, rep.neighbor, 0)[:-1]

    return AuditSetup(claim, "edge {0, 1} absent vs present; user 0's report observed",
                      _BIT_NAMES[:-1], _per_trial(draw))


def _blink_reports(eps: float, f: float, client: Callable[[float], BlinkClient]
                   ) -> AuditSetup:
    """Audit of a Blink client made by ``client(budget)``: user 0's RR bits and noisy degree,
    and the others' report count and noisy degrees."""
    claim = claim_of(lambda: client(eps).simulate_lists(*_lists(1), _N,
                                                        np.random.default_rng(0)),
                     Unit.EDGE_LDP)
    mech = client(f * eps)

    def draw(which: int, rng: np.random.Generator) -> np.ndarray:
        rep, noisy = mech.simulate_lists(*_lists(which), _N, rng)
        return np.r_[_bits(rep.user, rep.neighbor, 0), noisy[0], noisy[1:].sum()]

    return AuditSetup(claim, "user 0's list {} vs {1} (others fixed)",
                      (*_BIT_NAMES, "noisy degree of user 0", "others' noisy degrees"),
                      _per_trial(draw), outcome_groups=((0, 1, 2), (0, 1, 2, 4)))


def _blink(eps: float, p: dict[str, Any], f: float) -> AuditSetup:
    share = float(p["degree_share"])
    return _blink_reports(eps, f, lambda e: BlinkClient(e, share))


def _blink_pp(eps: float, p: dict[str, Any], f: float) -> AuditSetup:
    """blink-pp (dpgl's own method): the randomizer its transform holds
    (``PublicPriorTransform.mechanism``), drawn as the transform draws. Its server is a
    function of these reports and public data only (``PublicPriorTransform.serve`` takes
    nothing else; tests/estimators/test_public_prior.py checks that the estimate does not
    move when the true graph does and the reports do not)."""
    from dpgl.estimators.public_prior import PairCovariates
    from dpgl.transforms import PublicPriorTransform
    share = float(p["degree_share"])
    cov = PairCovariates(np.array([0, 0, 1, 1]), np.array([0, 1]), np.array([2, 3]))
    return _blink_reports(eps, f, lambda e: PublicPriorTransform(
        e, share, "hybrid", 0, covariates=cov).mechanism)


def _lap(variant: str) -> Callable[[float, dict[str, Any], float], AuditSetup]:
    keys = pair_to_index(np.zeros(_N - 1, dtype=np.int64), np.arange(1, _N), _N)

    def build(eps: float, p: dict[str, Any], f: float) -> AuditSetup:
        def run(mech: LocalLap, which: int, rng: np.random.Generator) -> np.ndarray:
            cand = mech.candidates_lists(*_lists(which), _N, rng)
            cand.ensure(num_pairs(_N))   # every pair's score (the server's top-T input)
            by_key = dict(zip(cand.keys.tolist(), cand.values.tolist(), strict=True))
            out = [by_key[int(k)] for k in keys]
            if cand.noisy_degrees is not None:
                out += [cand.noisy_degrees[0], cand.noisy_degrees[1:].sum()]
            return np.array(out)

        claim = claim_of(lambda: run(LocalLap(eps, variant=variant), 1,
                                     np.random.default_rng(0)), Unit.EDGE_LDP)
        mech = LocalLap(f * eps, variant=variant)
        names = ("Z_01", "Z_02", "Z_03")
        if variant == "locallap":
            names += ("noisy degree of user 0", "others' noisy degrees")
        return AuditSetup(claim, "user 0's list {} vs {1} (others fixed); pair scores "
                                 "Z_0j = a_0j + a_j0", names,
                          _per_trial(lambda which, rng: run(mech, which, rng)))

    return build


def _ldpgen(eps: float, p: dict[str, Any], f: float) -> AuditSetup:
    """Both LDPGen phases of the client (``simulate_lists``) for partitions the server chose:
    they are post-processing of other reports, so the user's guarantee must hold for any
    partition; fixed ones make every trial one disjoint copy of the population in a single
    call (the server's clustering would couple the copies)."""
    share = float(p["phase1_share"])
    part = np.array([1, 0, 1, 1])           # node 1 alone in group 0

    def run(client: LDPGenClient, which: int, n: int, rng: np.random.Generator
            ) -> np.ndarray:
        src, dst = _lists(which)
        offs = (np.arange(n) * _N)[:, None]
        s_all = (offs + src[None, :]).ravel()
        d_all = (offs + dst[None, :]).ravel()
        xi = np.tile(part, n)
        d0 = client.simulate_lists(s_all, d_all, n * _N, xi, 2, 1, rng).reshape(n, _N, 2)
        d1 = client.simulate_lists(s_all, d_all, n * _N, xi, 2, 2, rng).reshape(n, _N, 2)
        return np.c_[d0[:, 0, 0], d0[:, 0, 1], d1[:, 0, 0], d1[:, 0, 1],
                     d0[:, 1:].sum(axis=(1, 2))]

    claim = claim_of(lambda: run(LDPGenClient(eps, share), 1, 1, np.random.default_rng(0)),
                     Unit.EDGE_LDP)
    mech = LDPGenClient(f * eps, share)
    return AuditSetup(claim, "user 0's list {} vs {1} (others fixed); both phases, node 1 "
                             "alone in its group",
                      ("phase 1, node 1's group", "phase 1, other group",
                       "phase 2, node 1's group", "phase 2, other group",
                       "others' phase-1 vectors"),
                      lambda n, which, rng: run(mech, which, n, rng))


# --------------------------------------------------------------------------- features, labels

_D = 4
_USERS = 6


def _feature_data(which: int, far: bool) -> Data:
    """6 users with 4 binary-range features; user 0 at the low corner (input 0) or the high
    corner (input 1; with ``far`` far outside the public range, which she clips herself)."""
    x = np.tile(np.array([[0.2, 0.8, 0.5, 0.4]]), (_USERS, 1))
    x[1:] += np.linspace(-0.15, 0.15, _USERS - 1)[:, None]
    x[0] = (100.0 if far else 1.0) if which else 0.0
    data = Data(x=torch.tensor(x, dtype=torch.float32), num_nodes=_USERS)
    data.feature_range = (0.0, 1.0, "binary features: every value is 0 or 1")
    return data


def _features(method: str) -> Callable[[float, dict[str, Any], float], AuditSetup]:
    """The feature collection exactly as ``method`` builds it (LPGNN: its mechanism, m and
    delta; Solitude: multi-bit), with the dataset's public range."""
    def build(eps: float, p: dict[str, Any], f: float) -> AuditSetup:
        mechanism = str(p.get("mechanism", "multibit"))
        far = bool(int(p["outlier"]))

        def collector(e: float, rng: np.random.Generator, data: Data) -> CollectFeatures:
            frange = public_feature_range(data)
            if method == "lpgnn":
                return CollectFeatures(e, mechanism, feature_range=frange, m="best",
                                       delta=1e-4, seed=rng)
            return CollectFeatures(e, "multibit", feature_range=frange, seed=rng)

        def run(e: float, which: int, rng: np.random.Generator) -> np.ndarray:
            data = _feature_data(which, far)
            out = collector(e, rng, data)(data).x.numpy().astype(np.float64)
            return np.r_[out[0], out[1:].sum(axis=0), out[1:].sum()]

        unit = Unit.FEATURE_LDP
        claim = claim_of(lambda: run(eps, 1, np.random.default_rng(0)), unit)
        names = (*(f"user 0, x[{i}]" for i in range(_D)),
                 *(f"others' sum, x[{i}]" for i in range(_D)), "others' total")
        pair = (f"user 0's features all at 0 vs all at {'100 (outside the public range [0, 1])' if far else '1'}; "  # noqa: E501
                f"5 other users fixed; {method}'s collection ({mechanism})")
        return AuditSetup(claim, pair, names,
                          _per_trial(lambda which, rng: run(f * eps, which, rng)),
                          outcome_groups=(tuple(range(_D)),))

    return build


def _labels(eps: float, p: dict[str, Any], f: float) -> AuditSetup:
    k = int(p["k"])

    def run(e: float, which: int, rng: np.random.Generator) -> np.ndarray:
        y = torch.tensor([which, 0, 1, 2 % k, 1, 0], dtype=torch.long)
        out = CollectLabels(e, k, seed=rng)(Data(y=y, num_nodes=6)).y.numpy()
        return np.r_[out[0], np.sum(out[1:])].astype(np.float64)

    claim = claim_of(lambda: run(eps, 1, np.random.default_rng(0)), Unit.LABEL_LDP)
    return AuditSetup(claim, f"user 0's label 0 vs 1 (k={k}; 5 other users fixed)",
                      ("user 0's report", "others' reports summed"),
                      _per_trial(lambda which, rng: run(f * eps, which, rng)))


# --------------------------------------------------------------------------- central parts


def _appr_pair(which: int, items: int, k: int, clip: float, rows: int) -> sp.csr_matrix:
    """Worst case of the Gumbel proof on clipped PPR scores in [0, C2]: every score moves by
    C2 (the first k up, the others down); the K values of the first k move by K C2 in l1.
    ``rows`` independent copies (one release each)."""
    row = np.where(np.arange(items) < k, clip, 0.0) if which else np.where(
        np.arange(items) < k, 0.0, clip)
    return sp.csr_matrix(np.tile(row, (rows, 1)))


def _dense(rel: sp.csr_matrix, items: int, indicator: bool) -> np.ndarray:
    out = np.zeros((rel.shape[0], items))
    coo = rel.tocoo()
    out[coo.row, coo.col] = 1.0 if indicator else coo.data
    return out


def _dp_appr_em(values: str) -> Callable[[float, dict[str, Any], float], AuditSetup]:
    def build(eps: float, p: dict[str, Any], f: float) -> AuditSetup:
        k, items, clip = int(p["k"]), int(p["items"]), float(p["clip"])

        def run(e: float, which: int, n: int, rng: np.random.Generator) -> np.ndarray:
            rel = DPAPPRExponential(k, e, clip=clip, values=values).release(
                _appr_pair(which, items, k, clip, n), rng)
            sel = _dense(rel, items, True)
            if values == "uniform":
                return sel
            val = _dense(rel, items, False) / clip
            return np.c_[sel, val, sel[:, :k].sum(1), val[:, :k].sum(1)]

        claim = claim_of(lambda: run(eps, 1, 1, np.random.default_rng(0)), Unit.NODE_DP)
        names = tuple(f"selected[{i}]" for i in range(items))
        if values == "laplace":
            names += (*(f"value[{i}] / C2" for i in range(items)), "favoured selected",
                      "favoured values / C2")
        return AuditSetup(claim, f"one PPR vector, every score moved by C2={clip:g} "
                                 f"({items} ids, K={k})", names,
                          lambda n, which, rng: run(f * eps, which, n, rng))

    return build


def _dp_appr_gm(eps: float, p: dict[str, Any], f: float) -> AuditSetup:
    from dpgl.privacy import gaussian_noise_multiplier

    k, items, clip, delta = int(p["k"]), int(p["items"]), float(p["clip"]), float(p["delta"])

    def randomizer(e: float) -> DPAPPRGaussian:
        z = gaussian_noise_multiplier(e, delta, steps=1, method="rdp")
        return DPAPPRGaussian(k, z * DPAPPRGaussian(k, 1.0, clip=clip).sensitivity, clip=clip)

    def run(mech: DPAPPRGaussian, which: int, n: int, rng: np.random.Generator) -> np.ndarray:
        # orthogonal vectors on the sphere of radius C1: distance sqrt(2) C1 (the worst case
        # for non-negative PPR vectors)
        rows = np.zeros((n, items))
        rows[:, 0 if which else 1] = clip
        rel = mech.release(sp.csr_matrix(rows), rng)
        val = _dense(rel, items, False) / clip
        return np.c_[_dense(rel, items, True), val, val[:, 0] - val[:, 1]]

    claim = claim_of(lambda: run(randomizer(eps), 1, 1, np.random.default_rng(0)),
                     Unit.NODE_DP, delta)
    mech = randomizer(f * eps)
    return AuditSetup(claim, f"one PPR vector: C1 e_0 vs C1 e_1 (l2 distance sqrt(2) C1, "
                             f"{items} ids)",
                      (*(f"selected[{i}]" for i in range(items)),
                       *(f"value[{i}] / C1" for i in range(items)), "value[0] - value[1]"),
                      lambda n, which, rng: run(mech, which, n, rng))


def _aggregation(eps: float, p: dict[str, Any], f: float) -> AuditSetup:
    """GAP's aggregation perturbation under bounded-degree node-DP (D = ``max_degree``): node
    w has D in-neighbours and D out-neighbours, all with the same embedding direction; input 0
    removes w (her id stays as an isolated node without embedding: her row is the empty sum).
    Every trial is one disjoint copy of that graph in a single aggregation call."""
    from dpgl.privacy import gaussian_noise_multiplier

    d_max, delta = int(p["max_degree"]), float(p["delta"])
    size = 1 + 2 * d_max

    def graph(which: int, copies: int) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.zeros(copies * size, 3)
        x[:, 0] = 1.0
        base = np.arange(copies)[:, None] * size
        if not which:
            x[base[:, 0]] = 0.0  # an absent node has no embedding
            return x, torch.zeros(2, 0, dtype=torch.long)
        ins = base + np.arange(1, d_max + 1)
        outs = base + np.arange(d_max + 1, size)
        w = np.repeat(base[:, 0], d_max)
        src = np.r_[ins.ravel(), w]
        dst = np.r_[w, outs.ravel()]
        return x, torch.from_numpy(np.stack([src, dst]))

    def randomizer(e: float) -> AggregationPerturbation:
        return AggregationPerturbation(1, gaussian_noise_multiplier(e, delta, steps=1,
                                                                    method="rdp"), d_max)

    def run(pma: AggregationPerturbation, which: int, n: int, rng: np.random.Generator
            ) -> np.ndarray:
        x, ei = graph(1, n)
        if not which:
            x, ei = graph(0, n)
        # the noisy sums before the (post-processing) normalization: what the proof bounds
        hop = pma.perturb(x, ei, rng, normalize=False)[1].numpy().reshape(n, size, 3)
        return np.c_[hop[:, 0, 0], hop[:, d_max + 1:, 0].sum(1), hop[:, 0, 1], hop[:, 0, 2]]

    claim = claim_of(lambda: run(randomizer(eps), 1, 1, np.random.default_rng(0)),
                     Unit.BOUNDED_NODE_DP, delta)
    pma = randomizer(f * eps)
    return AuditSetup(claim, f"node w with {d_max} in- and {d_max} out-neighbours (aligned "
                             "embeddings) vs absent",
                      ("own row . e_0", "out-neighbour rows . e_0", "own row . e_1",
                       "own row . e_2"),
                      lambda n, which, rng: run(pma, which, n, rng))


LOCAL_AUDITS: dict[str, AuditableMechanism] = {
    m.name: m for m in (
        AuditableMechanism("rr", "RR on every neighbor-list bit (RR.simulate_lists)", _rr,
                           kind="randomizer", trials=8000),
        AuditableMechanism("symrr", "RR on the lower triangle (SymRR.simulate_lists)", _symrr,
                           kind="randomizer", trials=8000),
        AuditableMechanism("dprr", "DPRR, node task (DPRR.simulate_lists, Eq. 8 budget)",
                           _dprr, params={"n_max": 2000}, kind="randomizer", trials=8000),
        AuditableMechanism("dprr-graph", "DPRR, graph task (GraphRandomizer per graph)",
                           _dprr_graph, params={"n_max": 500}, kind="randomizer", trials=8000),
        AuditableMechanism("blink", "Blink: RR adjacency + discrete Laplace degree",
                           _blink, params={"degree_share": 0.1}, kind="randomizer", trials=8000),
        AuditableMechanism("blink-pp", "blink-pp (dpgl): the randomizer of its transform "
                                       "(PublicPriorTransform.mechanism)", _blink_pp,
                           params={"degree_share": 0.1}, kind="randomizer", trials=8000),
        AuditableMechanism("locallap", "LocalLap: Laplace bits + discrete Laplace degree "
                                       "(LapCandidates, the top-T server's input)",
                           _lap("locallap"), kind="randomizer", trials=8000),
        AuditableMechanism("ldpgcn", "L-DpGCN: Laplace bits (LapCandidates)", _lap("ldpgcn"),
                           kind="randomizer", trials=8000),
        AuditableMechanism("ldpgen", "LDPGen: two phases of discrete Laplace degree vectors",
                           _ldpgen, params={"phase1_share": 0.5}, kind="randomizer",
                           trials=100_000),
        AuditableMechanism("lpgnn-features", "LPGNN's feature collection (CollectFeatures, "
                                             "public range)", _features("lpgnn"),
                           params={"mechanism": "multibit", "outlier": 1},
                           kind="randomizer", trials=8000),
        AuditableMechanism("solitude-features", "Solitude's feature collection (multi-bit, "
                                                "public range)", _features("solitude"),
                           params={"outlier": 1}, kind="randomizer", trials=8000),
        AuditableMechanism("label-krr", "label collection: k-ary RR (CollectLabels)", _labels,
                           params={"k": 4}, kind="randomizer", trials=8000),
        AuditableMechanism("dp-appr-em", "DPAR's DP-APPR-EM option I (Gumbel top-K)",
                           _dp_appr_em("uniform"),
                           params={"k": 2, "items": 5, "clip": 1e-3},
                           kind="randomizer", trials=200_000),
        AuditableMechanism("dp-appr-em1", "DPAR's DP-APPR-EM option II (+ Laplace values)",
                           _dp_appr_em("laplace"),
                           params={"k": 2, "items": 5, "clip": 1e-3},
                           kind="randomizer", trials=200_000),
        AuditableMechanism("dp-appr-gm", "DPAR's DP-APPR-GM (l2 clip + Gaussian + top-K)",
                           _dp_appr_gm, params={"k": 2, "items": 2, "clip": 1e-2,
                                                "delta": 1e-3}, kind="randomizer",
                           trials=1_000_000),
        AuditableMechanism("aggregation", "GAP's aggregation perturbation, bounded-degree "
                                          "node-DP", _aggregation,
                           params={"max_degree": 3, "delta": 1e-3}, kind="randomizer",
                           trials=1_000_000),
    )
}

"""One-shot Gumbel top-k selection (Durfee & Rogers, NeurIPS 2019), as used by DPAR.

Add i.i.d. Gumbel(b) noise to every score and return the indices of the k largest noisy
scores, in order. By the Gumbel-max trick this output has exactly the distribution of k rounds
of the *peeling* exponential mechanism, each choosing among the remaining items with
probability proportional to exp(u_i / b) (Durfee & Rogers 2019, Sec. 4: one-shot Gumbel
top-k = peeling exponential mechanism; the Plackett-Luce law):

    P[(i_1..i_k) | u] = prod_{r=1}^{k} exp(u_{i_r}/b) / sum_{j not in {i_1..i_{r-1}}} exp(u_j/b).

Neighbouring relation: two score vectors u, u' are neighbours when every entry moves by at most
``sensitivity`` Delta (|u_i - u'_i| <= Delta for all i; for DPAR, per-entry clipping of the
approximate PPR vector bounds this). Proof of one step: the numerator changes by at most a
factor e^{Delta/b} and so does the normaliser, so with b = 2 Delta / eps_0 one peeling step is
eps_0-DP (the exponential mechanism, McSherry & Talwar 2007; Dwork & Roth 2014, Thm 3.10).
With ``monotone=True`` (all entries move in the same direction, e.g. counts under add/remove)
the two factors cannot both exceed 1, so b = Delta / eps_0 suffices. The ordered k-step output
is (k eps_0)-DP by basic composition (Durfee & Rogers 2019, Sec. 4), and (eps', delta')-DP by
optimal composition of k eps_0-DP steps (:meth:`GumbelTopK.approx_guarantee`).

Here ``epsilon`` is the pure budget of one whole top-k release; eps_0 = epsilon / k.
"""

from __future__ import annotations

import itertools

import numpy as np
from scipy import special

from dpgl.errors import ConfigError
from dpgl.privacy._validation import (
    as_finite_float,
    check_generator,
    check_positive,
    check_positive_int,
    check_unit,
)
from dpgl.privacy.composition import best_composition, optimal_composition
from dpgl.privacy.guarantee import Guarantee, Unit, check_delta, check_epsilon
from dpgl.privacy.randomizer import Randomizer

__all__ = ["GumbelTopK"]


class GumbelTopK(Randomizer):
    """One-shot top-k with Gumbel noise: (epsilon)-DP for the ordered selection.

    Parameters: ``k`` items to select; ``epsilon`` the total pure budget (eps_0 = epsilon / k
    per selection); ``sensitivity`` the L-infinity change of the scores between neighbours;
    ``monotone`` whether neighbouring scores always move in one direction.
    """

    def __init__(self, k: int, epsilon: float, *, sensitivity: float = 1.0,
                 monotone: bool = False, unit: Unit | str = Unit.NODE_DP,
                 label: str = "Gumbel top-k") -> None:
        self.label = label
        self.k = check_positive_int(k, "k")
        self.epsilon = check_epsilon(epsilon)
        self.sensitivity = check_positive(sensitivity, "sensitivity")
        self.monotone = bool(monotone)
        self.unit = check_unit(unit)

    @classmethod
    def from_per_selection(cls, k: int, epsilon_per_selection: float, **kwargs: object
                           ) -> GumbelTopK:
        """Construct from the per-selection budget eps_0 (total k eps_0)."""
        eps0 = check_epsilon(epsilon_per_selection, "epsilon_per_selection")
        return cls(k, check_positive_int(k, "k") * eps0, **kwargs)  # type: ignore[arg-type]

    @property
    def epsilon_per_selection(self) -> float:
        return self.epsilon / self.k

    @property
    def scale(self) -> float:
        """Gumbel scale b = c Delta / eps_0 with c = 2 (general) or 1 (monotone)."""
        c = 1.0 if self.monotone else 2.0
        return c * self.sensitivity / self.epsilon_per_selection

    @property
    def guarantee(self) -> Guarantee:
        """Pure (k eps_0)-DP by basic composition of k peeling steps (Durfee & Rogers 2019)."""
        return Guarantee.pure(self.epsilon, self.unit)

    def approx_guarantee(self, delta_slack: float, *, composition: str = "optimal") -> Guarantee:
        """(eps', delta')-DP from composing the k eps_0-DP steps: ``"optimal"`` (Kairouz et al.
        2015) or ``"best"`` (smallest of basic / advanced / optimal)."""
        slack = check_delta(delta_slack, "delta_slack")
        step = Guarantee.pure(self.epsilon_per_selection, self.unit)
        if composition == "optimal":
            return optimal_composition(step, self.k, slack)
        if composition == "best":
            return best_composition(step, self.k, slack)[0]
        raise ConfigError(f"unknown composition {composition!r}; choose one of: best, optimal")

    def _scores(self, scores: object) -> np.ndarray:
        u = as_finite_float(scores, "scores")
        if u.ndim not in (1, 2):
            raise ConfigError(f"scores must be a vector or a matrix (one row per query), "
                              f"got shape {u.shape}")
        if u.shape[-1] < self.k:
            raise ConfigError(f"cannot select k={self.k} of {u.shape[-1]} items")
        return u

    def select(self, scores: object, rng: np.random.Generator) -> np.ndarray:
        """Indices of the k largest noisy scores, largest first; shape (k,) or (rows, k)."""
        rng = check_generator(rng)
        u = self._scores(scores)
        noisy = u + rng.gumbel(0.0, self.scale, size=u.shape)
        if self.k == u.shape[-1]:
            top = np.argsort(-noisy, axis=-1)
        else:
            part = np.argpartition(-noisy, self.k - 1, axis=-1)[..., : self.k]
            order = np.argsort(-np.take_along_axis(noisy, part, axis=-1), axis=-1)
            top = np.take_along_axis(part, order, axis=-1)
        return top

    __call__ = select
    randomize = select

    def log_prob(self, selection: object, scores: object) -> float:
        """Exact log P[ordered output = selection | scores] (Plackett-Luce / peeling EM)."""
        u = self._scores(scores)
        if u.ndim != 1:
            raise ConfigError("log_prob takes one score vector")
        sel = np.asarray(selection, dtype=np.int64)
        if sel.shape != (self.k,) or len(set(sel.tolist())) != self.k or sel.min() < 0 \
                or sel.max() >= u.size:
            raise ConfigError(f"selection must be {self.k} distinct indices into the scores")
        z = u / self.scale
        remaining = np.ones(u.size, dtype=bool)
        total = 0.0
        for i in sel:
            total += z[i] - special.logsumexp(z[remaining])
            remaining[i] = False
        return float(total)

    def output_distribution(self, scores: object) -> tuple[np.ndarray, np.ndarray]:
        """All ordered selections of a small score vector (at most 10 items) and their exact
        log-probabilities: returns (selections of shape (P, k), log_probs of shape (P,))."""
        u = self._scores(scores)
        if u.ndim != 1 or u.size > 10:
            raise ConfigError("output_distribution enumerates one score vector of <= 10 items")
        sel = np.array(list(itertools.permutations(range(u.size), self.k)), dtype=np.int64)
        z = u / self.scale
        zs = z[sel]                                               # (P, k)
        # log of the remaining mass before each pick: log(sum_all e^z - sum_{picked} e^z)
        removed = np.concatenate([np.full((sel.shape[0], 1), -np.inf),
                                  np.logaddexp.accumulate(zs, axis=1)[:, :-1]], axis=1)
        total = special.logsumexp(z)
        with np.errstate(divide="ignore"):
            remaining = total + np.log1p(-np.exp(removed - total))
        return sel, (zs - remaining).sum(axis=1)

    def __repr__(self) -> str:
        return (f"GumbelTopK(k={self.k}, epsilon={self.epsilon:g}, "
                f"sensitivity={self.sensitivity:g}, monotone={self.monotone})")

"""A collection round as the operator declares it and the devices read it (issue #14).

A round says who reports (the population: an ordered list of user ids; a user's position is
her index in every neighbour list), what each user collects and with which randomizer and
budget (``collect``: neighbour list, features with their public range, label with its
classes), the deadline, the minimum participation, DPRR's poisoning defence, and what the
server trains at close. It is published read-only at ``GET /v1/rounds/{id}``; a device
rebuilds the same randomizer objects from it (:mod:`dpgl.collection.items`), so the charge
the server reserves and the noise the device draws come from one object.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from dpgl.errors import ConfigError

__all__ = [
    "EDGE_MECHANISMS",
    "DefenceSpec",
    "FeatureSpec",
    "LabelSpec",
    "NeighborSpec",
    "PopulationSpec",
    "RoundSpec",
    "TrainSpec",
    "load_round_spec",
]

#: the neighbour-list randomizers a round can use: the simulation's classes
#: (:mod:`dpgl.mechanisms`) and the server estimator each one feeds
EDGE_MECHANISMS = ("rr", "dprr", "blink-hard", "blink-soft", "blink-hybrid", "locallap",
                   "ldpgcn")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PopulationSpec(_Strict):
    """Who reports: explicit ``users`` (ids, in index order), or ``size`` users named
    "0" .. "size-1" (a dataset's node ids in the demo)."""

    users: list[str] | None = Field(None, description="user ids, in index order")
    size: int | None = Field(None, ge=2, le=10_000_000, description="users named 0..size-1")

    @model_validator(mode="after")
    def _one(self) -> PopulationSpec:
        if (self.users is None) == (self.size is None):
            raise ValueError("give exactly one of 'users' and 'size'")
        if self.users is not None:
            if len(self.users) < 2:
                raise ValueError("a population needs at least 2 users")
            if len(set(self.users)) != len(self.users):
                raise ValueError("population user ids must be unique")
            for u in self.users:
                if not u or len(u) > 200 or not u.isprintable():
                    raise ValueError(f"user id {u!r}: 1 to 200 printable characters")
        return self

    def ids(self) -> list[str]:
        return list(self.users) if self.users is not None else \
            [str(i) for i in range(int(self.size or 0))]

    def __len__(self) -> int:
        return len(self.users) if self.users is not None else int(self.size or 0)


class NeighborSpec(_Strict):
    """Each user's neighbour list (edge-LDP), randomized by ``mechanism``."""

    mechanism: Literal["rr", "dprr", "blink-hard", "blink-soft", "blink-hybrid", "locallap",
                       "ldpgcn"]
    epsilon: float = Field(gt=0, le=50, description="per-user edge-LDP budget")
    degree_share: float = Field(0.1, gt=0, lt=1, description="share of epsilon for the noisy "
                                "degree (Blink, DPRR, LocalLap)")
    symmetrize: Literal["directed", "or", "and"] = Field(
        "directed", description="how RR/DPRR reports become a graph")


class FeatureSpec(_Strict):
    """Each user's feature vector (feature-LDP) in the declared public range."""

    mechanism: Literal["multibit", "1bit"] = "multibit"
    epsilon: float = Field(gt=0, le=50, description="per-user feature-LDP budget")
    dim: int = Field(ge=1, le=100_000, description="feature dimension d")
    low: float = Field(0.0, description="public lower bound of every feature value")
    high: float = Field(1.0, description="public upper bound of every feature value")
    m: int | Literal["best"] = Field("best", description="dimensions each user samples "
                                     "(multi-bit; 'best' = LPGNN Eq. 6)")
    kprop_steps: int = Field(4, ge=0, le=64, description="KProp steps at training (LPGNN)")

    @model_validator(mode="after")
    def _range(self) -> FeatureSpec:
        if not self.low < self.high:
            raise ValueError(f"features: need low < high, got [{self.low}, {self.high}]")
        if isinstance(self.m, int) and not 1 <= self.m <= self.dim:
            raise ValueError(f"features: m must be in [1, {self.dim}]")
        return self


class LabelSpec(_Strict):
    """Each user's label (label-LDP), k-ary randomized response."""

    epsilon: float = Field(gt=0, le=50, description="per-user label-LDP budget")
    classes: int = Field(ge=2, le=100_000, description="number of classes k")
    denoise_steps: int = Field(2, ge=0, le=64, description="label propagation steps at "
                               "training (LPGNN Sec. 4.3)")


class DefenceSpec(_Strict):
    """DPRR's degree-based poisoning defence (Hidano & Murakami, Defense(theta)): drop the
    lists longer than tau(theta) before estimating."""

    theta: float = Field(gt=0, lt=1, description="false-positive rate of an honest user")


class TrainSpec(_Strict):
    """What the server trains at close. ``dataset`` supplies what the round does not collect
    (public features, labels, graph, as in each method's setting) and the evaluation labels;
    its nodes are the population "0" .. "n-1"."""

    dataset: str
    options: dict[str, Any] = Field(default_factory=dict, description="the dataset loader's "
                                    "options (e.g. a synthetic graph's num_nodes)")
    model: Literal["gcn", "sage", "gat", "mlp"] = "gcn"
    epochs: int = Field(200, ge=1, le=100_000)
    seed: int = Field(0, ge=0)


class RoundSpec(_Strict):
    """One collection round (YAML or JSON; ``dpgl collect create round.yaml``)."""

    round_id: str = Field(min_length=1, max_length=200)
    population: PopulationSpec
    neighbors: NeighborSpec | None = None
    features: FeatureSpec | None = None
    labels: LabelSpec | None = None
    deadline: _dt.datetime | None = Field(None, description="no reports accepted after it "
                                          "(ISO 8601, UTC when no zone is given)")
    min_participation: float = Field(0.0, ge=0, le=1, description="fraction of the "
                                     "population needed before the round is estimated")
    defence: DefenceSpec | None = None
    train: TrainSpec | None = None

    @field_validator("round_id")
    @classmethod
    def _rid(cls, v: str) -> str:
        if not v.isprintable() or "/" in v:
            raise ValueError("round_id: printable, no '/'")
        return v

    @field_validator("deadline")
    @classmethod
    def _utc(cls, v: _dt.datetime | None) -> _dt.datetime | None:
        if v is not None and v.tzinfo is None:
            v = v.replace(tzinfo=_dt.timezone.utc)
        return v

    @model_validator(mode="after")
    def _consistent(self) -> RoundSpec:
        if self.neighbors is None and self.features is None and self.labels is None:
            raise ValueError("a round collects at least one of neighbors, features, labels")
        if self.defence is not None and (self.neighbors is None
                                         or self.neighbors.mechanism != "dprr"):
            raise ValueError("the poisoning defence is DPRR's: it needs neighbors.mechanism: "
                             "dprr")
        return self

    def items(self) -> dict[str, Any]:
        """The collected items, in report order."""
        return {k: v for k, v in (("neighbors", self.neighbors), ("features", self.features),
                                  ("labels", self.labels)) if v is not None}

    def deadline_ts(self) -> float | None:
        return None if self.deadline is None else self.deadline.timestamp()


def _pydantic_message(e: Exception) -> str:
    errs = getattr(e, "errors", None)
    if callable(errs):
        first = errs()[0]
        where = ".".join(str(x) for x in first.get("loc", ())) or "round"
        return f"{where}: {first.get('msg')}"
    return str(e)


def parse_round_spec(obj: object) -> RoundSpec:
    """Validate a round given as a mapping; a clear one-line :class:`ConfigError` otherwise."""
    from pydantic import ValidationError
    if not isinstance(obj, dict):
        raise ConfigError("a round spec is a mapping (YAML or JSON object)")
    try:
        return RoundSpec.model_validate(obj)
    except ValidationError as e:
        raise ConfigError(f"round spec: {_pydantic_message(e)}") from None


def load_round_spec(path: str | Path) -> RoundSpec:
    """Read a round spec from a YAML (or JSON) file."""
    import yaml
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"round spec {str(p)!r} not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"round spec {str(p)!r} cannot be read: {e}") from None
    try:
        obj = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"round spec {str(p)!r} is not valid YAML: "
                          f"{str(e).splitlines()[0]}") from None
    return parse_round_spec(obj)

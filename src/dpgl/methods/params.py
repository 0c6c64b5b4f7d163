"""Hyper-parameters shared by the methods, validated with pydantic (unknown names and bad
values become one-line :class:`~dpgl.errors.ConfigError`). Methods subclass these to add
their own options."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from types import UnionType
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NamedTuple, Union, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from dpgl.errors import ConfigError, DpglDeprecationWarning
from dpgl.nn.names import WEIGHT_INIT_HELP, WeightInit

if TYPE_CHECKING:
    from dpgl.nn.gin import GIN
    from dpgl.nn.models import ModelConfig
    from dpgl.train.dpsgd import DPSGDConfig
    from dpgl.train.graph import GraphTrainConfig
    from dpgl.train.minibatch import MiniBatchConfig
    from dpgl.train.node import TrainConfig


class Renamed(NamedTuple):
    """An old parameter name's new name, and how an old value becomes a new one (None: as is).
    The glossary (docs/glossary.md) lists every renamed parameter."""

    new: str
    convert: Callable[[Any], Any] | None = None

    @property
    def how(self) -> str:
        """How an old value becomes a new one, in words (``""``: as is)."""
        if self.convert is None:
            return ""
        return "new = 1 - old" if self.convert is complement else "converted"


def complement(value: Any) -> Any:
    """``1 - value`` (rounded to 12 decimals, so that an old ``alpha = 0.7`` is the
    ``degree_share = 0.3`` a new configuration writes, and 1 - 0.3 gives back 0.7 exactly):
    an old share of the other part of a two-part budget split."""
    return round(1.0 - float(value), 12) if isinstance(value, (int, float)) else value


_BOUNDS = (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<="))


def _type_text(annotation: Any) -> tuple[str, list[Any]]:
    """A field type in words (``float``, ``int or unset``, ``relu|selu``) and its choices."""
    if get_origin(annotation) is Literal:
        choices = list(get_args(annotation))
        return "|".join(str(c) for c in choices), choices
    if get_origin(annotation) in (Union, UnionType):
        names: list[str] = []
        choices: list[Any] = []
        for arg in get_args(annotation):
            if arg is type(None):
                continue
            text, more = _type_text(arg)
            choices += more
            if text not in names:
                names.append(text)
        text = " or ".join(names)
        return (text + " or unset" if type(None) in get_args(annotation) else text), choices
    return getattr(annotation, "__name__", str(annotation)), []


class ParamInfo(NamedTuple):
    """One parameter as ``dpgl methods NAME`` lists it (derived from the pydantic field)."""

    name: str
    type: str
    default: Any
    bounds: dict[str, float]       # gt / ge / lt / le
    choices: list[Any]
    description: str

    @classmethod
    def of(cls, name: str, info: Any) -> ParamInfo:
        kind, choices = _type_text(info.annotation)
        bounds = {key: getattr(m, key) for m in info.metadata for key, _ in _BOUNDS
                  if getattr(m, key, None) is not None}
        return cls(name, kind, info.get_default(call_default_factory=True), bounds, choices,
                   info.description or "")

    @property
    def bounds_text(self) -> str:
        return bounds_text(self.bounds)

    @property
    def default_text(self) -> str:
        return value_text(self.default)


def bounds_text(bounds: dict[str, float]) -> str:
    """Field bounds as an interval: ``(0, 1)``, ``[0, 1)``, ``>= 1`` or ``""``."""
    lo = next(((k, v) for k, v in bounds.items() if k in ("gt", "ge")), None)
    hi = next(((k, v) for k, v in bounds.items() if k in ("lt", "le")), None)
    if lo and hi:
        return (f"{'(' if lo[0] == 'gt' else '['}{value_text(lo[1])}, "
                f"{value_text(hi[1])}{')' if hi[0] == 'lt' else ']'}")
    if lo or hi:
        key, value = lo or hi  # type: ignore[misc]
        return f"{dict(_BOUNDS)[key]} {value_text(value)}"
    return ""


def value_text(value: Any) -> str:
    """A parameter value as one writes it with ``-p`` (``unset`` for None)."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


class Params(BaseModel):
    """Base: frozen, unknown keys refused. :attr:`renamed` names still accepted for one
    release, with a :class:`~dpgl.errors.DpglDeprecationWarning`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: old name -> its :class:`Renamed` (inherited: a subclass adds its own)
    renamed: ClassVar[dict[str, Renamed]] = {}

    #: the parameters the users' randomizers read (local-model methods): the device's
    #: mechanism, its budget split, its public feature range, which users send true data.
    #: Choosing among values of one of them needs one collection per value, whose reports
    #: compose; every other parameter only changes the server's processing of one collection
    #: (post-processing). :meth:`dpgl.methods.Method.selection_cost` reads it; a test checks
    #: it against the reports (docs/privacy.md, "Hyper-parameter selection").
    randomizer_params: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def canonical(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        """``data`` with every old parameter name replaced by its new one (a warning each);
        only the given names, no defaults, so that a run's key does not depend on which name
        a configuration used. Giving an old name and its new name together is an error."""
        out = dict(data)
        for old, (new, convert) in cls.renamed.items():
            if old not in out:
                continue
            if new in out:
                raise ConfigError(f"parameter {old!r} is the old name of {new!r}: give only "
                                  f"{new!r}")
            value = out.pop(old)
            out[new] = convert(value) if convert is not None else value
            how = f" ({cls.renamed[old].how})" if convert is not None else ""
            warnings.warn(f"parameter {old!r} is now called {new!r}{how}; the old name will be "
                          "removed in the next release (docs/glossary.md)",
                          DpglDeprecationWarning, stacklevel=3)
        return out

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        """A field a subclass redeclares only to change its default or bounds keeps the
        description of the field it overrides (``Field(description=...)`` is the one place
        a parameter is described; ``dpgl methods NAME`` lists it)."""
        super().__pydantic_init_subclass__(**kwargs)
        unknown = sorted(set(cls.randomizer_params) - set(cls.model_fields))
        if unknown:
            raise TypeError(f"{cls.__name__}.randomizer_params names no parameter: {unknown}")
        for name, info in cls.model_fields.items():
            if info.description:
                continue
            for base in cls.__mro__[1:]:
                inherited = getattr(base, "model_fields", {}).get(name)
                if inherited is not None and inherited.description:
                    info.description = inherited.description
                    break

    @classmethod
    def describe(cls) -> list[ParamInfo]:
        """Every parameter: name, type, default, bounds and its one-line description, from
        the fields themselves (the model is the only copy)."""
        return [ParamInfo.of(name, info) for name, info in cls.model_fields.items()]

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        return cls.canonical(data) if isinstance(data, Mapping) else data

    @classmethod
    def parse(cls, data: dict[str, Any], method: str) -> Params:
        data = cls.canonical(data)
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            err = e.errors(include_url=False)[0]
            field = ".".join(str(p) for p in err["loc"]) or "params"
            if err["type"] == "extra_forbidden":
                allowed = ", ".join(sorted(cls.model_fields))
                raise ConfigError(
                    f"method {method!r} has no parameter {field!r}; allowed: {allowed}"
                ) from None
            raise ConfigError(f"method {method!r}: parameter {field!r}: {err['msg']}") from None


class DataParams(Params):
    """Dataset preprocessing (see :func:`dpgl.datasets.load_dataset`): a run's ``data``
    section (:data:`dpgl.experiments.config.DATA_OPTIONS`), apart from the method's
    parameters."""

    features: Literal["raw", "one-hot-degree"] = Field(
        "raw", description="node features: the dataset's own, or one-hot node degrees")
    normalize_features: bool = Field(
        False, description="min-max scale every feature over all nodes (reads every node's "
        "features)")
    normalize_rows: bool = Field(
        False, description="divide every node's features by their sum (PyG NormalizeFeatures, "
        "Blink's preprocessing; each node's own features only)")
    largest_component: bool = Field(False, description="keep the largest connected component only")
    top_k_classes: int | None = Field(
        None, ge=2, description="keep the nodes of the K largest classes (unset: all classes)")


class NodeParams(Params):
    """Node classification: split, architecture and optimizer; full batch, or mini-batches
    with neighbour sampling when ``batch_size`` is set (:mod:`dpgl.train.minibatch`)."""

    #: why this method's trainer takes no mini-batch options ("": it takes them); a
    #: subclass whose method trains otherwise (its own trainer, DP-SGD) says why
    no_minibatch: ClassVar[str] = ""
    #: why ``select_epoch_by: lpgnn-noise-capped`` does not apply ("": it does): the rule
    #: caps accuracies on k-RR label reports (:func:`dpgl.train.node.noise_capped_better`);
    #: the methods that may receive such reports say ""
    no_noise_capped: ClassVar[str] = (
        "select_epoch_by='lpgnn-noise-capped' is the LPGNN authors' rule for k-RR labels: "
        "only lpgnn, gcn-raw, gcn-rnd and gcn-ohd take it")

    split: Literal["random", "blink-fixed"] = Field(
        "random", description="random: a new split per seed, by the ratios below; "
        "blink-fixed: the Blink authors' one fixed 50/25/25 split (sklearn, random_state 42)")
    train_ratio: float = Field(0.5, gt=0, lt=1, description="fraction of the nodes in the "
                               "training split")
    val_ratio: float = Field(0.25, ge=0, lt=1, description="fraction of the nodes in the "
                             "validation split (early stopping)")
    test_ratio: float = Field(0.25, gt=0, lt=1, description="fraction of the nodes in the test "
                              "split")
    stratify: bool = Field(False, description="split every class by the same ratios (on the "
                           "labels the server sees)")
    label_rate: float | None = Field(None, gt=0, lt=1, description="fraction of all nodes whose "
                                     "labels train (unset: the whole training split)")
    hidden: int = Field(16, ge=1, description="hidden units per layer")
    num_layers: int = Field(2, ge=1, description="number of layers of the model")
    dropout: float = Field(0.5, ge=0, lt=1, description="dropout rate between layers")
    input_dropout: float = Field(0.0, ge=0, lt=1, description="dropout rate on the input "
                                 "features")
    activation: Literal["relu", "selu", "elu", "tanh"] = Field(
        "relu", description="activation function between layers")
    batch_norm: bool = Field(False, description="batch normalization after each hidden layer")
    weight_init: WeightInit = Field("torch", description=WEIGHT_INIT_HELP)
    lr: float = Field(0.01, gt=0, description="learning rate (Adam)")
    weight_decay: float = Field(5e-4, ge=0, description="L2 weight decay (Adam)")
    epochs: int = Field(200, ge=1, description="maximum number of training epochs")
    patience: int | None = Field(50, ge=1, description="stop after this many epochs without a "
                                 "better validation score (unset: run every epoch)")
    select_epoch_by: Literal["val_accuracy", "val_loss", "lpgnn-noise-capped"] = Field(
        "val_accuracy", description="the epoch whose model is kept and tested: the best "
        "validation accuracy (ties: lower loss), the lowest validation loss (Blink's code), or "
        "lpgnn-noise-capped: the LPGNN authors' rule for k-RR labels (lower validation loss "
        "and higher validation and training accuracies on the reported labels, capped by "
        "k-RR's keep probability; lpgnn, gcn-raw, gcn-rnd, gcn-ohd, full batch)")
    batch_size: int | None = Field(None, ge=1, description="seed nodes per mini-batch, with "
                                   "neighbour sampling (unset: full batch)")
    fanout: int | list[int] | None = Field(
        None, description="in-neighbours sampled per node at each layer, the seeds' first "
        "(-1: all; one int: every layer; unset: all); needs batch_size")

    @field_validator("batch_size")
    @classmethod
    def _batch_size(cls, v: int | None) -> int | None:
        if v is not None and cls.no_minibatch:
            raise ValueError(cls.no_minibatch)
        return v

    @field_validator("fanout")
    @classmethod
    def _fanout(cls, v: int | list[int] | None, info: ValidationInfo) -> list[int] | None:
        if v is None:
            return None
        if cls.no_minibatch:
            raise ValueError(cls.no_minibatch)
        if info.data.get("batch_size") is None:
            raise ValueError("fanout samples the neighbours of mini-batches: set batch_size "
                             "too (full batch uses every edge)")
        from dpgl.train.fanout import check_fanout
        layers = int(info.data.get("num_layers", 2))
        return list(check_fanout([v] * layers if isinstance(v, int) else v, layers))

    def minibatch(self) -> MiniBatchConfig | None:
        """The mini-batch configuration (None: full batch)."""
        if self.batch_size is None:
            return None
        from dpgl.train.minibatch import MiniBatchConfig
        fanout = self.fanout  # a list once validated (one int becomes one per layer)
        if isinstance(fanout, int):
            fanout = [fanout] * self.num_layers
        return MiniBatchConfig(self.batch_size, None if fanout is None else tuple(fanout))

    def architecture(self) -> ModelConfig:
        """The node model's architecture these parameters describe."""
        from dpgl.nn.models import ModelConfig
        return ModelConfig(hidden=self.hidden, num_layers=self.num_layers, dropout=self.dropout,
                           input_dropout=self.input_dropout, activation=self.activation,
                           batch_norm=self.batch_norm, weight_init=self.weight_init)

    def train_config(self) -> TrainConfig:
        """The (non-private) node trainer's configuration these parameters describe."""
        from dpgl.train.node import TrainConfig
        return TrainConfig(lr=self.lr, weight_decay=self.weight_decay, epochs=self.epochs,
                           patience=self.patience, select_by=self.select_epoch_by)

    @model_validator(mode="after")
    def _noise_capped(self) -> NodeParams:
        if self.select_epoch_by == "lpgnn-noise-capped":
            if self.no_noise_capped:
                raise ValueError(self.no_noise_capped)
            if self.batch_size is not None:
                raise ValueError("select_epoch_by='lpgnn-noise-capped' measures the training "
                                 "accuracy of a full-batch forward: unset batch_size")
        return self

    @model_validator(mode="after")
    def _ratios(self) -> NodeParams:
        total = self.train_ratio + self.val_ratio + self.test_ratio
        if total > 1 + 1e-9:
            raise ValueError(f"train_ratio + val_ratio + test_ratio = {total:g} exceeds 1")
        if self.split == "blink-fixed":
            given = sorted(k for k in ("train_ratio", "val_ratio", "test_ratio", "stratify",
                                       "label_rate") if k in self.model_fields_set)
            if given:
                raise ValueError(f"split='blink-fixed' is the Blink authors' fixed 50/25/25 "
                                 f"split: {given[0]} does not apply")
        return self


class NodeDPParams(NodeParams):
    """Node-level DP methods on an inductive split (DPAR, Features, GAP, DP-SAGE): the DPAR
    paper's Sec. 5 training defaults they share (MLP width 32, no dropout or weight decay,
    Adam lr 0.005, batch 60, DP-SGD clip C = 1, 80/20 inductive split, delta 1e-4).
    ``batch_size`` is DP-SGD's expected (Poisson) batch; neighbour sampling (``fanout``) is
    refused: their accounting does not cover it (docs/node-dp.md, "Mini-batches and
    sampling")."""

    no_minibatch: ClassVar[str] = (
        "DP-SGD methods draw their own Poisson batches (batch_size); neighbour sampling "
        "(fanout) is not covered by their accounting (docs/node-dp.md)")

    hidden: int = Field(32, ge=1)
    dropout: float = Field(0.0, ge=0, lt=1)
    weight_decay: float = Field(0.0, ge=0)
    lr: float = Field(0.005, gt=0)
    batch_size: int = Field(60, ge=1, description="expected DP-SGD batch size (sets the Poisson "
                            "sampling rate)")

    @field_validator("batch_size")
    @classmethod
    def _batch_size(cls, v: int | None) -> int | None:  # DP-SGD's batch: always allowed
        return v

    @model_validator(mode="after")
    def _own_protocol(self) -> NodeDPParams:
        if self.split != "random":
            raise ValueError("node-DP methods split inductively (inductive_train, "
                             "val_fraction): split does not apply")
        if self.select_epoch_by != "val_accuracy":
            raise ValueError("node-DP methods train a fixed number of DP-SGD epochs: "
                             "select_epoch_by does not apply")
        return self
    clip: float = Field(1.0, gt=0, description="DP-SGD per-example gradient clipping norm C")
    inductive_train: float = Field(0.8, gt=0, lt=1, description="fraction of the nodes in the "
                                   "training graph (the rest: validation and test graph)")
    val_fraction: float = Field(0.5, gt=0, lt=1, description="fraction of the held-out nodes "
                                "used for validation (the rest: test)")
    delta: float = Field(1e-4, gt=0, lt=1, description="delta of the node-level (eps, delta) "
                         "guarantee")

    def dpsgd_config(self, *, public_size: int, noise_multiplier: float | None = None,
                     epochs: int | None = None) -> DPSGDConfig:
        """The DP-SGD configuration these parameters describe, on ``public_size`` examples
        (the public number that sets the sampling rate and the steps), with
        ``noise_multiplier`` (None: non-private) and ``epochs`` (default :attr:`epochs`)."""
        from dpgl.train.dpsgd import DPSGDConfig
        return DPSGDConfig.of(self, public_size=public_size, noise_multiplier=noise_multiplier,
                              epochs=epochs)


class GraphParams(Params):
    """Graph classification with GIN-0 (DPRR Sec. 5.1 defaults: 75/10/15 split, batch 64)."""

    train_ratio: float = Field(0.75, gt=0, lt=1, description="fraction of the graphs in the "
                               "training split")
    val_ratio: float = Field(0.10, ge=0, lt=1, description="fraction of the graphs in the "
                             "validation split (early stopping)")
    test_ratio: float = Field(0.15, gt=0, lt=1, description="fraction of the graphs in the test "
                              "split")
    hidden: int = Field(64, ge=1, description="hidden units per GIN layer")
    num_layers: int = Field(5, ge=1, description="number of GIN layers")
    dropout: float = Field(0.5, ge=0, lt=1, description="dropout rate on each layer's graph score")
    lr: float = Field(0.01, gt=0, description="learning rate (Adam)")
    weight_decay: float = Field(0.0, ge=0, description="L2 weight decay (Adam)")
    batch_size: int = Field(64, ge=1, description="graphs per mini-batch")
    epochs: int = Field(500, ge=1, description="maximum number of training epochs")
    patience: int | None = Field(50, ge=1, description="stop after this many epochs without a "
                                 "better validation score (unset: run every epoch)")
    lr_step: int | None = Field(50, ge=1, description="multiply the learning rate by lr_gamma "
                                "every this many epochs (unset: constant)")
    lr_gamma: float = Field(0.5, gt=0, le=1, description="learning-rate decay factor (see "
                            "lr_step)")

    def train_config(self) -> GraphTrainConfig:
        """The trainer configuration these parameters describe."""
        from dpgl.train.graph import GraphTrainConfig
        return GraphTrainConfig(lr=self.lr, weight_decay=self.weight_decay, epochs=self.epochs,
                                patience=self.patience, batch_size=self.batch_size,
                                lr_step=self.lr_step, lr_gamma=self.lr_gamma)

    def gin(self, num_classes: int) -> GIN:
        """GIN-0 on the constant one-dimensional input feature."""
        from dpgl.nn.gin import GIN
        return GIN(1, num_classes, hidden=self.hidden, num_layers=self.num_layers,
                   dropout=self.dropout)

    @model_validator(mode="after")
    def _ratios(self) -> GraphParams:
        total = self.train_ratio + self.val_ratio + self.test_ratio
        if total > 1 + 1e-9:
            raise ValueError(f"train_ratio + val_ratio + test_ratio = {total:g} exceeds 1")
        return self

"""The method registry: one recipe per paper method, registered by name.

A method turns (dataset, split, budget, seed) into metrics plus a privacy report: it runs
the client-side randomizers, the server-side estimator and the model/trainer, and records
every release in the run's :class:`~dpgl.privacy.Accountant`. Adding a method touches one
module (plus its tests): subclass :class:`Method` and decorate it with :func:`register`.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from abc import ABC
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from dpgl.errors import ConfigError, unknown_name
from dpgl.methods.params import GraphParams, NodeParams, Params
from dpgl.nn.names import canonical_model_name
from dpgl.privacy import UNIT_SUBJECTS, Unit

if TYPE_CHECKING:
    import numpy as np


@dataclass
class RunContext:
    """Everything a method needs for one run."""

    task: str
    dataset: Any  # torch_geometric Data (node task) or GraphDataset (graph task); never mutated
    model: str
    params: Params
    epsilon: float | None
    seed: int
    rng: np.random.Generator
    accountant: Any  # dpgl.privacy.Accountant
    #: where the trainers run (a ``torch.device`` or its name, :mod:`dpgl.device`): an
    #: execution option, not part of the run's configuration; :meth:`Method.fit` makes it
    #: the current device
    device: Any = "cpu"


@dataclass
class MethodOutput:
    """What ``fit`` returns. ``info``: values computed from released or public data only.
    ``diagnostics``: evaluation-only values computed from private data (true edge counts,
    recall of the true top-K, label noise rates, clipping counts); they are stored apart and
    labelled as such, never part of a release."""

    metrics: dict[str, float]
    info: dict[str, Any] = field(default_factory=dict)
    diagnostics: dict[str, Any] = field(default_factory=dict)


class Method(ABC):
    """Base class of a registered method.

    ``budgets`` maps every unit the method protects to the parameter that holds its budget:
    ``"epsilon"`` is the run's ``--epsilon`` (the total per-user budget of the method's
    protected unit, the first key); any other budget is a named hyper-parameter (e.g.
    Solitude's ``feature_epsilon``). ``budget_split`` says in words how ``--epsilon`` is spent.
    After ``fit`` the runner checks the privacy report against these
    (:func:`dpgl.experiments.execute.check_report`). ``public`` names the units whose data the
    method's setting assumes the server knows (Blink: node features and labels); the privacy
    report says so for the data recorded as used as is. A registered method's own docstring
    (or its nearest base's, below :class:`Method`) is its paper citation (:attr:`paper`).
    """

    name: ClassVar[str]
    tasks: ClassVar[tuple[str, ...]] = ("node",)
    private: ClassVar[bool] = True  # takes an epsilon
    # the models it trains (None: any of the task's); checked when a config is validated, and
    # grids leave out the other (method, model) pairs
    models: ClassVar[tuple[str, ...] | None] = None
    summary: ClassVar[str] = ""
    #: the graph task's per-graph client (a :class:`dpgl.methods.graph_ldp.GraphRandomizer`
    #: subclass), which a method declaring the ``"graph"`` task must hold
    graph_randomizer: ClassVar[Any] = None
    params_for_task: ClassVar[dict[str, type[Params]]] = {}
    budgets: ClassVar[dict[Unit, str]] = {}
    deltas: ClassVar[dict[Unit, str]] = {}
    budget_split: ClassVar[str] = ""
    public: ClassVar[frozenset[Unit]] = frozenset()
    #: the name tables and plots show (``{model}``: the model it trains); default: ``name``
    display_name: ClassVar[str] = ""
    #: the model it trains whatever the run's ``--model`` (``mlp``: "mlp"); None: the run's
    fixed_model: ClassVar[str | None] = None

    def trained_model(self, model: str) -> str:
        """The model a run with ``--model model`` trains (canonical name)."""
        return self.fixed_model or canonical_model_name(model)

    def display(self, model: str) -> str:
        """The method's name in tables and plots, e.g. "Blink-Hard", "GCN on the true graph"."""
        return (self.display_name or self.name).format(
            model=self.trained_model(model).upper())

    @property
    def paper(self) -> str:
        """The paper the method follows: the first paragraph of its class docstring (or its
        nearest base's below :class:`Method`), on one line; ``""`` when it has none."""
        for cls in type(self).__mro__:
            if cls is Method:
                break
            doc = cls.__dict__.get("__doc__")
            if doc:
                return " ".join(inspect.cleandoc(doc).split("\n\n")[0].split())
        return ""

    def params_model(self, task: str) -> type[Params]:
        return self.params_for_task[task]

    @classmethod
    def trains(cls, model: str) -> bool:
        """Whether the method trains the node-task ``model`` (a name or alias): one of
        :attr:`models`, or any model when it declares none."""
        return cls.models is None or canonical_model_name(model) in cls.models

    def check_model(self, params: Params, model: str) -> None:
        """Refuse parameters the node-task ``model`` (canonical name) cannot use, with a
        one-line ConfigError before anything runs (default: none)."""
        return None

    def takes_epsilon(self, params: Params) -> bool:
        """Whether a run with these parameters takes ``--epsilon`` (default: :attr:`private`)."""
        return self.private

    def unprotected_by_choice(self, params: Params) -> set[Unit]:
        """Protected units whose "no privacy" total these parameters chose on purpose (e.g.
        DPRR's customized setting, where some users send their true lists)."""
        return set()

    def selection_cost(self, task: str, names: Iterable[str]) -> str:
        """What choosing the values of the parameters ``names`` on validation data costs
        (docs/privacy.md, "Hyper-parameter selection"):

        * ``"none"``: a non-private method;
        * ``"post-processing"``: a local-model method and only server-side parameters (none of
          :attr:`Params.randomizer_params`): every candidate processes the same collection;
        * ``"collections"``: a local-model method and a parameter its users' randomizers read:
          one collection per candidate value, whose reports compose (the untrusted server sees
          them all, so a private selection does not help);
        * ``"private selection"``: a central-model method: each candidate is a run on the
          private data, charged by a private selection (:mod:`dpgl.privacy.selection`).
        """
        from dpgl.privacy.report import LOCAL_UNITS

        if not self.private:
            return "none"
        if self.unit not in LOCAL_UNITS:
            return "private selection"
        reach = self.params_model(task).randomizer_params
        return "collections" if reach & set(names) else "post-processing"

    @property
    def unit(self) -> Unit | None:
        """The unit the method protects with ``--epsilon`` (None for non-private methods)."""
        for unit, param in self.budgets.items():
            if param == "epsilon":
                return unit
        return None

    def describe(self, task: str | None = None) -> dict[str, Any]:
        """What ``dpgl methods NAME`` shows (JSON-ready): the header (summary, paper, tasks,
        models, protected units and their budgets, how --epsilon is split, what the setting
        assumes public) and, for ``task`` (default: every task), every parameter from its
        pydantic model: the method's own first (the most specific model's first), then the
        task's shared training parameters; and the renamed old names."""
        if task is not None:
            check_task(self, task)
        params: dict[str, list[dict[str, Any]]] = {}
        renamed: dict[str, list[dict[str, str]]] = {}
        for t in self.tasks if task is None else (task,):
            model = self.params_model(t)
            models = [c for c in model.__mro__ if issubclass(c, Params)]
            shared = next((c.model_fields for c in models if c in (NodeParams, GraphParams)), {})

            def depth(name: str, models: list[type] = models) -> int:
                """Where a field is introduced (0: the most specific model)."""
                return max(i for i, c in enumerate(models) if name in c.model_fields)

            infos = model.describe()
            params[t] = [{**i._asdict(), "group": "training" if i.name in shared else "method"}
                         for i in sorted(infos, key=lambda i: (i.name in shared,
                                                               0 if i.name in shared
                                                               else depth(i.name)))]
            renamed[t] = [{"old": old, "new": r.new, "how": r.how}
                          for old, r in model.renamed.items()]
        return {
            "name": self.name,
            "summary": self.summary,
            "paper": self.paper,
            "tasks": list(self.tasks),
            "models": None if self.models is None else list(self.models),
            "private": self.private,
            "protects": [{"unit": u.value, "what": UNIT_SUBJECTS[u], "budget_parameter": p,
                          "delta_parameter": self.deltas.get(u)}
                         for u, p in self.budgets.items()],
            "budget_split": self.budget_split if self.private else "",
            "public": [{"unit": u.value, "what": UNIT_SUBJECTS[u]}
                       for u in sorted(self.public, key=list(Unit).index)],
            "params": params,
            "renamed": renamed,
        }

    def fit(self, ctx: RunContext) -> MethodOutput:
        """Run the method on ``ctx.task`` (:meth:`fit_node` or :meth:`fit_graph`); record
        privacy spending in ``ctx.accountant``. The trainers run on ``ctx.device``
        (:func:`dpgl.device.use_device`)."""
        from dpgl.device import use_device

        check_task(self, ctx.task)
        with use_device(ctx.device):
            return self.fit_graph(ctx) if ctx.task == "graph" else self.fit_node(ctx)

    def fit_graph(self, ctx: RunContext) -> MethodOutput:
        """The graph task: every graph's users run :attr:`graph_randomizer`, the server trains
        GIN-0 on the noisy graphs (the DPRR paper's protocol,
        :func:`dpgl.methods.graph_ldp.fit_graph_ldp`)."""
        from dpgl.methods.graph_ldp import fit_graph_ldp

        return fit_graph_ldp(self, ctx)

    def fit_node(self, ctx: RunContext) -> MethodOutput:
        """The node task (a method declaring it overrides this)."""
        raise NotImplementedError(f"method {self.name!r} declares no node task")


_REGISTRY: dict[str, type[Method]] = {}


def register(cls: type[Method]) -> type[Method]:
    """Class decorator: add a method to the registry under ``cls.name``."""
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise ValueError(f"method name {cls.name!r} registered twice")
    own_graph_fit = cls.fit_graph is not Method.fit_graph
    if ("graph" in cls.tasks) != (cls.graph_randomizer is not None or own_graph_fit):
        raise ValueError(f"method {cls.name!r}: a method serves the graph task exactly when it "
                         "holds a graph_randomizer (or overrides fit_graph)")
    if cls.private and ("epsilon" not in cls.budgets.values() or not cls.budget_split):
        raise ValueError(f"private method {cls.name!r} must declare the unit its --epsilon "
                         "protects (budgets = {Unit...: 'epsilon'}) and say how it spends it "
                         "(budget_split)")
    missing = set(cls.tasks) - set(cls.params_for_task)
    if missing:
        raise ValueError(f"method {cls.name!r} has no params_for_task for {sorted(missing)}")
    _REGISTRY[cls.name] = cls
    return cls


def get_method(name: str) -> Method:
    """The registered method ``name`` (ConfigError listing the allowed names otherwise)."""
    _load_builtin()
    if name not in _REGISTRY:
        raise unknown_name("method", name, list(_REGISTRY))
    return _REGISTRY[name]()


def list_methods(task: str | None = None) -> list[str]:
    _load_builtin()
    return sorted(n for n, c in _REGISTRY.items() if task is None or task in c.tasks)


def check_task(method: Method, task: str) -> None:
    if task not in method.tasks:
        raise ConfigError(
            f"method {method.name!r} does not support task {task!r} (it supports: "
            f"{', '.join(method.tasks)}); methods for {task!r}: {', '.join(list_methods(task))}"
        )


_LOADED = False


def _load_builtin() -> None:
    """Import every module of :mod:`dpgl.methods` once, which runs their ``@register``
    decorators (a new method module needs no edit elsewhere)."""
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    import dpgl.methods as package

    for info in pkgutil.iter_modules(package.__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"dpgl.methods.{info.name}")

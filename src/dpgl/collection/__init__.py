"""Collection rounds shared by the device SDK (:mod:`dpgl.client`) and the server
(:mod:`dpgl.service`): the round spec, each item's report format and validation, and the
estimator input (issue #14)."""

from typing import TYPE_CHECKING

from dpgl._lazy import attach

if TYPE_CHECKING:
    from dpgl.collection.items import ReportError, user_rng
    from dpgl.collection.round import PrivateData, Round, canonical_json, collect_in_process
    from dpgl.collection.spec import RoundSpec, load_round_spec, parse_round_spec

__getattr__, __dir__ = attach(__name__, __file__)

__all__ = ["PrivateData", "ReportError", "Round", "RoundSpec", "canonical_json",
           "collect_in_process", "load_round_spec", "parse_round_spec", "user_rng"]

"""The device SDK of the collection service (issue #14): :class:`Device` enrols, checks a
published round against its own lifetime budget, randomizes with the simulation's own
randomizers and submits one report with idempotent retries."""

from typing import TYPE_CHECKING

from dpgl._lazy import attach

if TYPE_CHECKING:
    from dpgl.client.device import Device, DeviceError, SubmitResult
    from dpgl.collection.round import PrivateData

__getattr__, __dir__ = attach(__name__, __file__)

__all__ = ["Device", "DeviceError", "PrivateData", "SubmitResult"]

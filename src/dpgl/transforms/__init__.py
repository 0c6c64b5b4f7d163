"""PyG transforms that run a privacy pipeline on a :class:`torch_geometric.data.Data`: the
users' randomizers (client side) and, for edge LDP, the server's estimator. One transform per
module, named after its class (PyG's ``torch_geometric/transforms`` pattern); each returns a
new ``Data`` and never mutates its input, and its ``repr`` shows its arguments.

Edge LDP (:class:`EdgeLDPTransform` subclasses; the graph in, the server's estimate out):
:class:`RRTransform`, :class:`SymRRTransform`, :class:`DPRRTransform`,
:class:`BlinkTransform`, :class:`PublicPriorTransform` (dpgl's ``blink-pp``),
:class:`LocalLapTransform` (L-DpGCN / LocalLap), :class:`LDPGenTransform`. Feature and
label LDP: :class:`CollectFeatures`, :class:`CollectLabels`. The randomizers themselves live
in :mod:`dpgl.mechanisms`, the server-side estimators in :mod:`dpgl.estimators`; dataset
preprocessing transforms in :mod:`dpgl.datasets.transforms`.
"""

from typing import TYPE_CHECKING

from dpgl._lazy import attach

if TYPE_CHECKING:
    from dpgl.transforms.blink_transform import BlinkTransform
    from dpgl.transforms.collect_features import CollectFeatures
    from dpgl.transforms.collect_labels import CollectLabels
    from dpgl.transforms.dprr_transform import DPRRTransform
    from dpgl.transforms.edge_ldp_transform import EdgeLDPTransform
    from dpgl.transforms.ldpgen_transform import LDPGenTransform
    from dpgl.transforms.local_lap_transform import LocalLapTransform
    from dpgl.transforms.public_prior_transform import PublicPriorTransform
    from dpgl.transforms.rr_transform import RRTransform
    from dpgl.transforms.sym_rr_transform import SymRRTransform

__getattr__, __dir__ = attach(__name__, __file__)

__all__ = [
    "BlinkTransform",
    "CollectFeatures",
    "CollectLabels",
    "DPRRTransform",
    "EdgeLDPTransform",
    "LDPGenTransform",
    "LocalLapTransform",
    "PublicPriorTransform",
    "RRTransform",
    "SymRRTransform",
]

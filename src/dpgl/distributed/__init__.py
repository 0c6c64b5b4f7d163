"""Beyond one machine (issue #15): users in blocks with counter-based streams
(:mod:`~dpgl.distributed.streams`, :mod:`~dpgl.distributed.blocks`), a shard store on a
shared filesystem (:mod:`~dpgl.distributed.store`), engine-free block tasks
(:mod:`~dpgl.distributed.tasks`), and the sharded run on a Dask cluster
(:mod:`~dpgl.distributed.sharded`, :mod:`~dpgl.distributed.cluster`). docs/scale.md.
"""

from dpgl.distributed.blocks import DEFAULT_BLOCK_SIZE, UserBlocks
from dpgl.distributed.cluster import connect
from dpgl.distributed.sharded import ShardedRun, StageResult, map_blocks, merge_privacy
from dpgl.distributed.store import ShardStore
from dpgl.distributed.streams import block_generator, stream_key

__all__ = ["DEFAULT_BLOCK_SIZE", "ShardStore", "ShardedRun", "StageResult", "UserBlocks",
           "block_generator", "connect", "map_blocks", "merge_privacy", "stream_key"]

"""Shared test set-up. Its presence puts ``tests/`` on ``sys.path`` (pytest's default
``prepend`` import mode), so helper modules such as ``_edge_graphs`` are importable from
every test folder."""

import os

# As the CLI does (dpgl.cli): torch's OpenMP threads wait passively, so a busy machine (CI
# shares its cores) does not turn every small training into seconds of spinning.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
if (os.cpu_count() or 1) <= 2:  # as the CLI does: one torch thread on a 2-core machine
    os.environ.setdefault("OMP_NUM_THREADS", "1")

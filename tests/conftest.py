"""Shared test set-up. Its presence puts ``tests/`` on ``sys.path`` (pytest's default
``prepend`` import mode), so helper modules such as ``_edge_graphs`` are importable from
every test folder."""

from dpgl.device import cpu_thread_defaults

# As the CLI does: torch's threads wait passively, one thread on a 2-core machine (CI shares
# its cores), set before any test imports torch.
cpu_thread_defaults()

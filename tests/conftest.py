"""Shared test set-up. Its presence puts ``tests/`` on ``sys.path`` (pytest's default
``prepend`` import mode), so helper modules such as ``_edge_graphs`` are importable from
every test folder."""

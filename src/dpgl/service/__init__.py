"""The local-DP collection service (issue #14): devices randomize with the simulation's own
randomizers and submit one report per user and round; the server stores them in a real
database (:mod:`dpgl.service.db`: SQLite by default, PostgreSQL on request) with a per-user
lifetime budget ledger."""

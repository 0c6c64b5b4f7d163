"""Sparse graph helpers shared by the other layers (pairs, propagation, symmetrization, splits)."""

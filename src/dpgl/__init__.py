"""dpgl: differentially private graph learning.

Layers (see docs/architecture.md): ``privacy`` (guarantees, accountant, primitive
mechanisms) -> ``graph`` (sparse helpers) -> ``mechanisms`` (client-side randomizers) ->
``estimators`` (server-side denoising) -> ``nn`` / ``train`` -> ``methods`` (one recipe per
paper method) -> ``experiments`` (grids, run store, reports) -> ``cli``.
"""

__version__ = "0.1.0"

"""Server-side estimators: turn the users' randomized reports into a graph (or denoised
features/labels). Edge LDP: :mod:`.blink` (Bayesian posterior, Hard/Soft/Hybrid),
:mod:`.dprr` (as-is), :mod:`.toptt` (L-DpGCN / LocalLap top-T), :mod:`.ldpgen`
(synthetic graph). The PyG transforms that run users + server live in :mod:`dpgl.transforms`.
"""

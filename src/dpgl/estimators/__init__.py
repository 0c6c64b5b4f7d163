"""Server-side estimators: turn the users' randomized reports into a graph (or denoised
features/labels). Edge LDP: :mod:`.blink` (Bayesian posterior, Hard/Soft/Hybrid),
:mod:`.dprr` (as-is), :mod:`.toptt` (L-DpGCN / LocalLap top-T), :mod:`.ldpgen`
(synthetic graph). Each module also has a PyG transform running users + server.
"""

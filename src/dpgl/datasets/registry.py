"""The dataset registry: every dataset's files (paths, sources, sha256), reader and statistics.

Checksums are those of the offline copies (``../shared/datasets/MANIFEST.md``); statistics
were measured on them with these loaders, except where a note says "published".

Sources: a GitHub file at a fixed commit is *pinned* (its bytes are the offline bytes). A
dataset's home page that distributes different bytes (the TU Dortmund zips, the SNAP
archives of the MUSAE data, the original gnn-benchmark / graph2gauss files behind the
derived npz copies) is *unpinned*: downloads from it are trusted on first use.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpgl.datasets.base import GraphDataset, Kind
from dpgl.datasets.download import FileSpec, Source
from dpgl.datasets.musae import MusaeFormat, read_musae

# The readers of the numeric formats import torch / SciPy / pandas, so the registry imports
# them when a dataset is read: listing datasets or checking a name stays cheap.

PLANETOID_COMMIT = "af6abf468a772cc055bec88c52e4d6f51b7c37e3"  # kimiyoung/planetoid
GNN_BENCHMARK_COMMIT = "1e72912a"  # shchur/gnn-benchmark (short id, as in the MANIFEST)
PPNP_COMMIT = "394425a9eeffbd95c09d68d6f0e1473ac9c2fd4a"  # klicperajo/ppnp, now gasteigerjo/ppnp
TU_HOME = "https://www.chrsmrrs.com/graphkerneldatasets"
SNAP_HOME = "https://snap.stanford.edu/data"
# the eight files of a Planetoid dataset (ind.NAME.PART)
PLANETOID_PARTS = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")

# sha256 of the offline copies (MANIFEST.md), plus PubMed's allx (listed there, not shipped).
SHA256: dict[str, str] = {
    "musae/deezer_europe/deezer_europe_edges.csv": "78c3d3fc62d12ccd2a637e0151283d9ced1b4c9400dc6c0e0b0f71fcbe314091",  # noqa: E501
    "musae/deezer_europe/deezer_europe_target.csv": "9d5c5736e1d55361e9caa5ae4f96ea5f40c3a70a8cfaad332defac9d84c6b2c6",  # noqa: E501
    "musae/facebook/musae_facebook_edges.csv": "7c50d8f02a75cc0829577814a1fc14535164daa38d79c3612340c9e9cdbd4022",  # noqa: E501
    "musae/facebook/musae_facebook_features.json": "ea870537646a93642a0008d38aa9bfeff02018070ba97b1f3f469d9622626436",  # noqa: E501
    "musae/facebook/musae_facebook_target.csv": "7bd96eafea3c2ca40f44bfa9e73642194696c21e38c7b29ed409c32ad14075cd",  # noqa: E501
    "musae/github/musae_git_edges.csv": "34c57382246949d1b3b7fa641a8532672001ecae8e9558f0b3c113cc035bd781",  # noqa: E501
    "musae/github/musae_git_target.csv": "3a8582f0c55d6f605df5f45bde28a90561be9517b40226c5e6bbce253679906a",  # noqa: E501
    "musae/lastfm_asia/lastfm_asia_edges.csv": "548eacff61bff564ab5007831fa4a7a30e1a3956075ffd24e43310ed33555842",  # noqa: E501
    "musae/lastfm_asia/lastfm_asia_target.csv": "91f19215f6eca8321feec038bd32900cf13fd4f7e041a9976cf202807c72ac16",  # noqa: E501
    "musae/twitch/DE/musae_DE_edges.csv": "54feaf3e3e70a485fe07f8611e4d2677841b97f77b8358204bcf4a48cc884d86",  # noqa: E501
    "musae/twitch/DE/musae_DE_features.json": "7b39c42570f05cd46017c765df8d8a1bc03f19787c3eb0f9684f50a52476ae3a",  # noqa: E501
    "musae/twitch/DE/musae_DE_target.csv": "2188f58a093bb9db363d3eaf7c3a52c2adc8ff6b23cbcb4f53875f87061c0321",  # noqa: E501
    "musae/twitch/ENGB/musae_ENGB_edges.csv": "5ea4d7f7267454e9523577eb2a9b4dcb7a22dd660a548240f01b815d08e0e3cc",  # noqa: E501
    "musae/twitch/ENGB/musae_ENGB_features.json": "d55948bd911ab28e0a89c4946562d5a8b363b9a7e4216e1a4986f37c74caa777",  # noqa: E501
    "musae/twitch/ENGB/musae_ENGB_target.csv": "e9d51399878216d2dd662b0a152b602cccde7b5cbb8452cb91d9379f64114443",  # noqa: E501
    "musae/twitch/ES/musae_ES_edges.csv": "17801d2cc45fc4909a431ce7a190c0565d4af87b0548ca7705cf2bef7da4c884",  # noqa: E501
    "musae/twitch/ES/musae_ES_features.json": "dec4b672183f9cb04524ee605b763cc14244ed88eb766147a3f954e9abe30d59",  # noqa: E501
    "musae/twitch/ES/musae_ES_target.csv": "f843427bae58289100e78c6c211fa4a1ae0d5fbf2c665841df9e390b00dcffb5",  # noqa: E501
    "musae/twitch/FR/musae_FR_edges.csv": "9924263f7e8edaa7278dcbc37bd90c8712cb0ea1726d85e054a5588b7959f887",  # noqa: E501
    "musae/twitch/FR/musae_FR_features.json": "490ff6a0afb0838fea1696980b14b3fcb9e8932d18e1f5172f066e45d97daa46",  # noqa: E501
    "musae/twitch/FR/musae_FR_target.csv": "dd0a9e7ba565cbb95ae66003892709742bd08c26387656e3e235fc25205663b4",  # noqa: E501
    "musae/twitch/PTBR/musae_PTBR_edges.csv": "b72d93a3c8a82883771a2f3822fce229885fa0d40367fb105c0535fb36c773b9",  # noqa: E501
    "musae/twitch/PTBR/musae_PTBR_features.json": "5012dee29ca3ae57cbdb4f46279506e3b87ff79d8c43affcafd7576acb21f960",  # noqa: E501
    "musae/twitch/PTBR/musae_PTBR_target.csv": "ecba7d1287e72ae7c3f42c922be475283288c0c67346245c72109690460444bd",  # noqa: E501
    "musae/twitch/RU/musae_RU_edges.csv": "fd307587a550289f746056ea12a7336171ab2053c9e08c42dba77499126ca5b2",  # noqa: E501
    "musae/twitch/RU/musae_RU_features.json": "7767f5d6fdb405cc5cd4267bd3dd0371cbd585ef3f3bec6b5d156880fe42e30a",  # noqa: E501
    "musae/twitch/RU/musae_RU_target.csv": "db7617528355be994352e491e7b25d060fed466d0d81c09cadd90fa10f15c071",  # noqa: E501
    "npz/amazon_electronics_computers.npz": "9e2beb6e75ed64d759c1d4d5622be802f185e4c7d22f4b3507e4060c28227ff2",  # noqa: E501
    "npz/amazon_electronics_photo.npz": "77c41781de87f5f6f822e08b004e45816291c1149dfe1d468a3ee76e6a63ef3a",  # noqa: E501
    "npz/citeseer.npz": "280278b21b434c047922e8389518861416fb3ad39389c27865ff0e6bbb0aaab7",
    "npz/citeseer_full.npz": "a0d99c7ad39d2ed5652392082cc2faa3d2400114e01eedc2bf987ceaa31d869c",
    "npz/cora.npz": "068e22d90c3849b4057dfb05851741428992af058efcd4e7ebb4186f3d581de2",
    "npz/cora_ml.npz": "e3439bfd32c4a962d5c56a4f313793baee39181c208c90a3915b61183d3e1cda",
    "npz/ms_academic_cs.npz": "0f1deef1abef175ed8c14d0e4cb448ee0d4115f031107f0bbf59e27f6be687f9",
    "npz/ms_academic_phy.npz": "75d1e330bab128550230f735e771abb4afa79dee5cfbd54a58e54520dd6913bf",
    "planetoid/raw/ind.citeseer.allx": "2ac30345d95c9ec933a817ee0bdd6a5f077f8c184a20e696910192d534414668",  # noqa: E501
    "planetoid/raw/ind.citeseer.ally": "f704b2d986dde6c2669934de1f3ae5696a6cf9455c0f6b2646a2d135ea0a1c95",  # noqa: E501
    "planetoid/raw/ind.citeseer.graph": "d79a4ef9d3e7169aee8946145f6b7306e35bc79bffad26346cfb94e10e9912a7",  # noqa: E501
    "planetoid/raw/ind.citeseer.test.index": "2af990671580b6b2df5d158d1038f8292e30c9cd821b5453f399659b25b723d4",  # noqa: E501
    "planetoid/raw/ind.citeseer.tx": "539a8906a2da97628d212f2fdd668c109a8b3f0d36574b59e5d3fd5b5303da21",  # noqa: E501
    "planetoid/raw/ind.citeseer.ty": "55e5bd1ba1e733a04598753ad1a8d57957f4b8f89e74519f41f4f4938767e4ce",  # noqa: E501
    "planetoid/raw/ind.citeseer.x": "d20de19150741e555de0ed037195630fc194114ebc7fd72ced62810148aa22f6",  # noqa: E501
    "planetoid/raw/ind.citeseer.y": "8ba87e515d8e3ee3cf52f6d2c5b86aa73f11ecad825a808455209ec26cd54924",  # noqa: E501
    "planetoid/raw/ind.cora.allx": "9419ba2f26f5c35243db64aba110e0f35a04851609e0dc5433450676ca6b8543",  # noqa: E501
    "planetoid/raw/ind.cora.ally": "2b998f5cc7fedc86e7f97ca2498f47a1ffc1462c29e2d578b23bf3f62b6e7d71",  # noqa: E501
    "planetoid/raw/ind.cora.graph": "58f13302f39dde8852dad6fe6d15b89b077b6d7f837626bce671ef80344b383d",  # noqa: E501
    "planetoid/raw/ind.cora.test.index": "297ce89af2b51a6a194181c7dbe1796c6a1cf9cd9349a88383b1b1e227867875",  # noqa: E501
    "planetoid/raw/ind.cora.tx": "b9afbaa4a400df991f6f02ef677e1e44da55ffc04801fd02f9e673987829226a",
    "planetoid/raw/ind.cora.ty": "41f5ac76596a1699cc33f53084a2419e92961c42bb75f36fc38e616d348532ad",
    "planetoid/raw/ind.cora.x": "23cfa55d91c6f624233f5eb7b6e3f141f1bd2b2ae39608a63cf5d084bb27baab",
    "planetoid/raw/ind.cora.y": "94465c14eb53e04ca262198dcbb2521ee8af60fb3f3d546cd6ca24a511b0e7d1",
    "planetoid/raw/ind.pubmed.allx": "508e538e2abdccdd54c4d3e9f49d638b4af7107d85845f66ddea5a5152658b7e",  # noqa: E501
    "planetoid/raw/ind.pubmed.ally": "0c37bbe3b5014ec365e9d393cf4791925e5ed94fb194305d74f064a8d7b50f0e",  # noqa: E501
    "planetoid/raw/ind.pubmed.graph": "5b89f0036ca22909471f1e6558eb42fa06e0c730a577bde5b058b40638f81dc9",  # noqa: E501
    "planetoid/raw/ind.pubmed.test.index": "b101d421688bbaecbd82e8a18f1e282378d6830f3a37666f28ebc47f844341b5",  # noqa: E501
    "planetoid/raw/ind.pubmed.tx": "4eb5f5d0f30f26497eb0ac6ac9719d09c67e284f1ed0385c93f3ef27a671da3d",  # noqa: E501
    "planetoid/raw/ind.pubmed.ty": "ee2e0d4819d9fbcc403689c3bf2e49face401b605932f093bc58ab6461130fdd",  # noqa: E501
    "planetoid/raw/ind.pubmed.x": "fbe9cb5c47200d1b7769a26e579be3b7130b556831f9d850e77c4c74f2599b33",  # noqa: E501
    "planetoid/raw/ind.pubmed.y": "e6c807633307a07ed659249006536a147c7999c797f11a2560752990181b41b3",  # noqa: E501
    "tu/IMDB-BINARY.zip": "ef45bd0ca317d44bb983c4dfaad5f95946b1745a349100e509d5da4e3468db3a",
    "tu/IMDB-MULTI.zip": "302900238e79641a543d20129bcaf5607cadcff1db5c1bb7957c52e2d9d83871",
    "tu/MUTAG.zip": "29d3c584f4930691a6ee165d707d7e81235201a8f3fac43d3b1858f8de7b2f46",
    "tu/PROTEINS.zip": "69e2460449043490af4ac780f87172db6059886b15ef02d1ad78f82a6278507f",
    "tu/REDDIT-BINARY.zip": "862794136f6a3e1cd2e27f56bd207ebd55d5de39f679ade4c119108660719beb",
}


def github_raw(repo: str, commit: str, path: str) -> str:
    """URL of ``path`` in GitHub repository ``repo`` at ``commit`` (exact bytes)."""
    return f"https://github.com/{repo}/raw/{commit}/{path}"


def _spec(path: str, *sources: Source, note: str = "") -> FileSpec:
    digest = SHA256.get(path)
    return FileSpec(path, tuple(sources), frozenset({digest}) if digest else frozenset(), note)


@dataclass(frozen=True)
class Stats:
    """Statistics reported by ``dataset_info`` (see :class:`~dpgl.datasets.DatasetInfo`)."""

    nodes: float | int | None
    edges: int | None
    features: int | None
    classes: int | None
    graphs: int | None = None


Reader = Callable[[dict[str, Path]], Any]


@dataclass(frozen=True)
class DatasetSpec:
    """One registered dataset.

    ``files`` hold the structure and labels (and the features when they share a file);
    ``feature_file`` is a separate features file needed only for ``features="raw"``.
    ``read`` receives the local paths keyed by ``FileSpec.path`` (without the feature file
    when it was not requested). Synthetic datasets have ``generate`` instead.
    """

    name: str
    kind: Kind
    files: tuple[FileSpec, ...]
    read: Reader | None
    stats: Stats
    source: str
    feature_file: FileSpec | None = None
    aliases: tuple[str, ...] = ()
    note: str = ""
    generate: Callable[..., Any] | None = None
    generator_options: tuple[str, ...] = ()
    #: The public, data-independent range of the raw feature values: (low, high, why it is
    #: public), or a function of the generator options; None when no such range is known.
    feature_range: tuple[float, float, str] | Callable[..., tuple[float, float, str]] | None = None


DATASETS: dict[str, DatasetSpec] = {}
ALIASES: dict[str, str] = {}


def _register(spec: DatasetSpec) -> None:
    DATASETS[spec.name] = spec
    for alias in spec.aliases:
        ALIASES[alias] = spec.name


#: Public feature ranges: binary bag-of-words / one-hot attributes are 0 or 1 by definition.
BINARY = (0.0, 1.0, "binary features: every value is 0 or 1")
ROW_NORMALIZED = (0.0, 1.0, "non-negative features l2-normalized per node: every value in [0, 1]")

# --------------------------------------------------------------------------- Planetoid

_PLANETOID_STATS = {
    "cora": Stats(2708, 5278, 1433, 7),
    "citeseer": Stats(3327, 4552, 3703, 6),
    "pubmed": Stats(19717, 44324, 500, 3),
}

for _name, _stats in _PLANETOID_STATS.items():
    _files = tuple(
        _spec(
            f"planetoid/raw/ind.{_name}.{part}",
            Source(github_raw("kimiyoung/planetoid", PLANETOID_COMMIT, f"data/ind.{_name}.{part}")),
        )
        for part in PLANETOID_PARTS
    )

    def _read_planetoid(paths: dict[str, Path], _n: str = _name) -> Any:
        from dpgl.datasets.planetoid import read_planetoid

        parts = {p: paths[f"planetoid/raw/ind.{_n}.{p}"] for p in PLANETOID_PARTS}
        return read_planetoid(parts, _n)

    _register(
        DatasetSpec(
            name=_name,
            kind="node",
            files=_files,
            read=_read_planetoid,
            stats=_stats,
            source="Planetoid raw ind.* files (Yang et al. 2016), kimiyoung/planetoid",
            feature_range=BINARY,
            note=(
                "ind.pubmed.allx is not in the offline copies; statistics published (PyG)"
                if _name == "pubmed"
                else "CiteSeer: 15 test ids without features get zero rows and label 0 (as PyG)"
                if _name == "citeseer"
                else ""
            ),
        )
    )

# --------------------------------------------------------------------------- npz


def _read_npz_at(path: str, paths: dict[str, Path]) -> Any:
    from dpgl.datasets.npz import read_npz

    return read_npz(paths[path])


def _read_tu_at(path: str, tu_name: str, paths: dict[str, Path]) -> Any:
    from dpgl.datasets.tu import read_tu_zip

    return read_tu_zip(paths[path], tu_name)


def _npz(
    name: str,
    fname: str,
    source: Source,
    stats: Stats,
    origin: str,
    *,
    aliases: tuple[str, ...] = (),
    note: str = "",
    feature_range: tuple[float, float, str] | None = BINARY,
) -> None:
    path = f"npz/{fname}"
    _register(
        DatasetSpec(
            name=name,
            kind="node",
            files=(_spec(path, source),),
            read=functools.partial(_read_npz_at, path),
            stats=stats,
            source=origin,
            aliases=aliases,
            note=note,
            feature_range=feature_range,
        )
    )


def _gnn_benchmark(fname: str, *, pinned: bool) -> Source:
    return Source(
        github_raw("shchur/gnn-benchmark", GNN_BENCHMARK_COMMIT, f"data/npz/{fname}"),
        pinned=pinned,
    )


_DERIVED = "offline copy re-saved without pickle (derived); downloads are trusted on first use"
_npz(
    "cora-ml",
    "cora_ml.npz",
    Source(github_raw("gasteigerjo/ppnp", PPNP_COMMIT, "ppnp/data/cora_ml.npz")),
    Stats(2995, 8158, 2879, 7),
    "PPNP npz (Klicpera et al. 2019), klicperajo/ppnp",
    feature_range=ROW_NORMALIZED,
)
_npz(
    "cora-npz",
    "cora.npz",
    _gnn_benchmark("cora.npz", pinned=True),
    Stats(2708, 5278, 1433, 7),
    "gnn-benchmark npz (Shchur et al. 2018)",
)
_npz(
    "citeseer-npz",
    "citeseer.npz",
    _gnn_benchmark("citeseer.npz", pinned=True),
    Stats(3312, 4536, 3703, 6),
    "gnn-benchmark npz (Shchur et al. 2018)",
    note="the gnn-benchmark CiteSeer (3,312 nodes; no padded test nodes)",
)
_npz(
    "coauthor-cs",
    "ms_academic_cs.npz",
    _gnn_benchmark("ms_academic_cs.npz", pinned=False),
    Stats(18333, 81894, 6805, 15),
    "gnn-benchmark npz (Shchur et al. 2018); = MS Academic in PPNP / DPAR",
    aliases=("ms-academic",),
    note=_DERIVED,
    feature_range=None,  # keyword counts: no public bound
)
_npz(
    "coauthor-physics",
    "ms_academic_phy.npz",
    _gnn_benchmark("ms_academic_phy.npz", pinned=False),
    Stats(34493, 247962, 8415, 5),
    "gnn-benchmark npz (Shchur et al. 2018)",
    aliases=("ms-academic-physics",),
    note=_DERIVED + "; dense x is 1.2 GB",
    feature_range=None,  # keyword counts: no public bound
)
_npz(
    "amazon-computers",
    "amazon_electronics_computers.npz",
    _gnn_benchmark("amazon_electronics_computers.npz", pinned=False),
    Stats(13752, 245861, 767, 10),
    "gnn-benchmark npz (Shchur et al. 2018)",
    note=_DERIVED,
)
_npz(
    "amazon-photo",
    "amazon_electronics_photo.npz",
    _gnn_benchmark("amazon_electronics_photo.npz", pinned=False),
    Stats(7650, 119081, 745, 8),
    "gnn-benchmark npz (Shchur et al. 2018)",
    note=_DERIVED,
)
_npz(
    "citeseer-full",
    "citeseer_full.npz",
    Source("https://github.com/abojchevski/graph2gauss/raw/master/data/citeseer.npz", pinned=False),
    Stats(4230, 5337, 602, 6),
    "CitationFull CiteSeer npz (Bojchevski & Günnemann 2018, graph2gauss)",
    note=_DERIVED,
    feature_range=ROW_NORMALIZED,
)

# --------------------------------------------------------------------------- MUSAE

_NO_FEATURES = (
    "node features are not in the offline copies; get them with download=True, or load "
    "features='one-hot-degree' for documented structural features"
)


def _musae(
    name: str,
    folder: str,
    stem: str,
    archive: str,
    fmt: MusaeFormat,
    stats: Stats,
    *,
    member_prefix: str = "",
    features_offline: bool = True,
) -> None:
    def spec(kind: str, ext: str) -> FileSpec:
        fname = f"{stem}_{kind}.{ext}"
        return _spec(
            f"musae/{folder}/{fname}",
            Source(f"{SNAP_HOME}/{archive}", member=member_prefix + fname, pinned=False),
            note="" if features_offline or kind != "features" else _NO_FEATURES,
        )

    edges, target, feats = spec("edges", "csv"), spec("target", "csv"), spec("features", "json")

    def read(paths: dict[str, Path]) -> Any:
        return read_musae(paths[edges.path], paths[target.path], paths.get(feats.path), fmt)

    _register(
        DatasetSpec(
            name=name,
            kind="node",
            files=(edges, target),
            feature_file=feats,
            read=read,
            stats=stats,
            source=f"MUSAE/FEATHER csv + json (Rozemberczki et al.), SNAP {archive}",
            note="" if features_offline else _NO_FEATURES,
            feature_range=BINARY,
        )
    )


_musae(
    "facebook",
    "facebook",
    "musae_facebook",
    "facebook_large.zip",
    MusaeFormat("id", "page_type", 4714, categorical=True),
    Stats(22470, 170823, 4714, 4),
)
_musae(
    "github",
    "github",
    "musae_git",
    "git_web_ml.zip",
    MusaeFormat("id", "ml_target", None),
    Stats(37700, 289003, None, 2),
    features_offline=False,
)
_musae(
    "lastfm-asia",
    "lastfm_asia",
    "lastfm_asia",
    "lastfm_asia.zip",
    MusaeFormat("id", "target", None),
    Stats(7624, 27806, None, 18),
    features_offline=False,
)
_musae(
    "deezer-europe",
    "deezer_europe",
    "deezer_europe",
    "deezer_europe.zip",
    MusaeFormat("id", "target", None),
    Stats(28281, 92752, None, 2),
    features_offline=False,
)
_TWITCH = {
    "DE": (9498, 153138),
    "ENGB": (7126, 35324),
    "ES": (4648, 59382),
    "FR": (6549, 112666),
    "PTBR": (1912, 31299),
    "RU": (4385, 37304),
}
for _code, (_n, _e) in _TWITCH.items():
    _musae(
        f"twitch-{_code.lower()}",
        f"twitch/{_code}",
        f"musae_{_code}",
        "twitch.zip",
        # The 3,170 feature ids are shared by all Twitch graphs (fixed width).
        MusaeFormat("new_id", "mature", 3170),
        Stats(_n, _e, 3170, 2),
        member_prefix=f"{_code}/",
    )

# --------------------------------------------------------------------------- TU


def _tu(name: str, tu_name: str, stats: Stats, *, offline: bool = True, note: str = "") -> None:
    path = f"tu/{tu_name}.zip"
    _register(
        DatasetSpec(
            name=name,
            kind="graph",
            files=(
                _spec(
                    path,
                    Source(f"{TU_HOME}/{tu_name}.zip", pinned=False),
                    note="" if offline else "not in the offline copies",
                ),
            ),
            read=functools.partial(_read_tu_at, path, tu_name),
            stats=stats,
            source="TU Dortmund graph kernel datasets (Morris et al. 2020)",
            note=note,
        )
    )


_TU_DERIVED = "offline zip rebuilt from the GIN text files (same graphs, labels, order)"
_tu("mutag", "MUTAG", Stats(17.930851, 3721, None, 2, 188), note="node labels as node_label")
_tu("proteins", "PROTEINS", Stats(39.057502, 81044, None, 2, 1113), note="node labels")
_tu("imdb-binary", "IMDB-BINARY", Stats(19.773, 96531, None, 2, 1000), note=_TU_DERIVED)
_tu("imdb-multi", "IMDB-MULTI", Stats(13.001333, 98903, None, 3, 1500), note=_TU_DERIVED)
_tu("reddit-binary", "REDDIT-BINARY", Stats(429.627, 995508, None, 2, 2000), note=_TU_DERIVED)
_tu(
    "reddit-multi-5k",
    "REDDIT-MULTI-5K",
    Stats(508.52, None, None, 5, 4999),
    offline=False,
    note="download only; statistics published (TU Dortmund page)",
)
_tu(
    "github-stargazers",
    "github_stargazers",
    Stats(113.79, None, None, 2, 12725),
    offline=False,
    note="download only; statistics published (TU Dortmund page)",
)

# --------------------------------------------------------------------------- synthetic


def _csbm_range(mean_distance: float = 2.0, **_: Any) -> tuple[float, float, str]:
    """csbm features are x = mu_y + N(0, I) with |mu_y[k]| <= mean_distance / sqrt(2): the
    declared public bound is that plus 3 standard deviations (values beyond it are clipped by
    each user; about 0.3 % of them)."""
    bound = float(mean_distance) / 2.0**0.5 + 3.0
    return (-bound, bound, f"declared from the generator: |mean| <= {bound - 3.0:.3g} plus 3 "
                           "standard deviations")


def _register_synthetic() -> None:
    from dpgl.datasets.synthetic import barabasi_albert, csbm

    _register(
        DatasetSpec(
            name="csbm",
            kind="node",
            files=(),
            read=None,
            stats=Stats(2000, 5000, 32, 4),
            source="contextual stochastic block model (generated, seeded)",
            note="edges: expected count with the default options",
            generate=csbm,
            feature_range=_csbm_range,
            generator_options=(
                "num_nodes",
                "num_classes",
                "avg_degree",
                "homophily",
                "num_features",
                "mean_distance",
            ),
        )
    )
    _register(
        DatasetSpec(
            name="ba",
            kind="node",
            files=(),
            read=None,
            stats=Stats(1000, 4985, 1, 1),
            source="Barabási-Albert graph (generated, seeded, linear time)",
            note="placeholder x = ones([n, 1]) and y = 0; edges: upper bound with defaults",
            generate=barabasi_albert,
            feature_range=(0.0, 1.0, "constant placeholder feature 1"),
            generator_options=("num_nodes", "m"),
        )
    )


_register_synthetic()

__all__ = ["ALIASES", "DATASETS", "SHA256", "DatasetSpec", "GraphDataset", "Stats"]

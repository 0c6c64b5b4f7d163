"""Loaders against the offline copies: exact statistics (MANIFEST.md) and graph invariants."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dpgl.datasets import (
    GraphDataset,
    canonical_name,
    dataset_info,
    dataset_kind,
    list_datasets,
    load_dataset,
)
from dpgl.errors import ConfigError, DatasetNotFoundError


def assert_simple_undirected(edge_index: torch.Tensor, n: int) -> None:
    """Both directions present, sorted (coalesced), no duplicates, no self-loops."""
    assert edge_index.dtype == torch.int64 and edge_index.dim() == 2 and edge_index.size(0) == 2
    if edge_index.numel() == 0:
        return
    assert int(edge_index.min()) >= 0 and int(edge_index.max()) < n
    assert not bool((edge_index[0] == edge_index[1]).any())
    key = edge_index[0] * n + edge_index[1]
    assert bool((key[1:] > key[:-1]).all())  # strictly increasing: sorted and no duplicates
    rev = torch.sort(edge_index[1] * n + edge_index[0]).values
    assert torch.equal(rev, key)


# name: (nodes, undirected edges, features, classes). MANIFEST.md "verified statistics";
# Twitch / Deezer / CitationFull values equal the published ones (MUSAE, FEATHER, PyG).
NODE_STATS = {
    "cora": (2708, 5278, 1433, 7),
    "citeseer": (3327, 4552, 3703, 6),
    "cora-ml": (2995, 8158, 2879, 7),
    "cora-npz": (2708, 5278, 1433, 7),
    "citeseer-npz": (3312, 4536, 3703, 6),
    "coauthor-cs": (18333, 81894, 6805, 15),
    "amazon-computers": (13752, 245861, 767, 10),
    "amazon-photo": (7650, 119081, 745, 8),
    "citeseer-full": (4230, 5337, 602, 6),
    "facebook": (22470, 170823, 4714, 4),
    "twitch-de": (9498, 153138, 3170, 2),
    "twitch-engb": (7126, 35324, 3170, 2),
    "twitch-es": (4648, 59382, 3170, 2),
    "twitch-fr": (6549, 112666, 3170, 2),
    "twitch-ptbr": (1912, 31299, 3170, 2),
    "twitch-ru": (4385, 37304, 3170, 2),
}


def _check_node_data(data, name: str, nodes: int, edges: int, feats: int, classes: int) -> None:
    assert data.name == name
    assert data.num_nodes == nodes
    assert data.edge_index.size(1) == 2 * edges
    assert data.x.dtype == torch.float32 and tuple(data.x.shape) == (nodes, feats)
    assert data.y.dtype == torch.int64 and tuple(data.y.shape) == (nodes,)
    assert int(data.y.min()) == 0 and int(data.y.max()) == classes - 1
    assert torch.unique(data.y).numel() == classes
    assert_simple_undirected(data.edge_index, nodes)


@pytest.mark.parametrize("name", sorted(NODE_STATS))
def test_node_dataset_statistics(shared_data_dir, name):
    data = load_dataset(name, shared_data_dir)
    _check_node_data(data, name, *NODE_STATS[name])
    info = dataset_info(name, shared_data_dir)
    assert info.available and info.missing == []
    assert (info.nodes, info.edges, info.features, info.classes) == NODE_STATS[name]


@pytest.mark.slow  # 2-6 s and a 1.2 GB dense feature matrix
def test_coauthor_physics(shared_data_dir):
    data = load_dataset("ms-academic-physics", shared_data_dir)  # alias
    _check_node_data(data, "coauthor-physics", 34493, 247962, 8415, 5)


@pytest.fixture(scope="module")
def cora(shared_data_dir):
    return load_dataset("cora", shared_data_dir)


def test_cora_matches_standard_planetoid_assembly(cora):
    # Class sizes and feature count of the standard (Kipf / PyG) Cora.
    assert torch.bincount(cora.y).tolist() == [351, 217, 418, 818, 426, 298, 180]
    assert float(cora.x.sum()) == 49216.0
    assert set(torch.unique(cora.x).tolist()) == {0.0, 1.0}


def test_citeseer_keeps_isolated_test_nodes_with_zero_features(shared_data_dir):
    data = load_dataset("citeseer", shared_data_dir)
    zero_rows = torch.nonzero(data.x.sum(dim=1) == 0).reshape(-1)
    assert zero_rows.numel() == 15
    assert bool((data.y[zero_rows] == 0).all())  # as PyG: padded label rows argmax to 0
    assert torch.bincount(data.y).tolist() == [264, 590, 668, 701, 596, 508]


def test_pubmed_missing_allx_is_a_clear_error(shared_data_dir, shared_file):
    shared_file("planetoid/raw/ind.pubmed.x")
    if (shared_data_dir / "planetoid/raw/ind.pubmed.allx").exists():
        pytest.skip("this data directory has ind.pubmed.allx")
    with pytest.raises(DatasetNotFoundError) as exc:
        load_dataset("pubmed", shared_data_dir)
    msg = str(exc.value)
    assert "planetoid/raw/ind.pubmed.allx" in msg
    assert str(shared_data_dir / "planetoid" / "raw" / "ind.pubmed.allx") in msg
    assert "https://github.com/kimiyoung/planetoid/raw/" in msg and "data/ind.pubmed.allx" in msg
    assert "download=True" in msg and "DPGL_DATA_DIR" in msg and "--data-dir" in msg
    info = dataset_info("pubmed", shared_data_dir)
    assert not info.available
    assert info.missing == ["planetoid/raw/ind.pubmed.allx"]
    assert (info.nodes, info.edges, info.features, info.classes) == (19717, 44324, 500, 3)


def test_facebook_classes_and_multi_hot_features(shared_data_dir):
    data = load_dataset("facebook", shared_data_dir)
    # page_type -> sorted codes: company, government, politician, tvshow
    assert torch.bincount(data.y).tolist() == [6495, 6880, 5768, 3327]
    # multi-hot: every entry 0 or 1 (nonzeros count equals the sum), every page has words
    assert float(data.x.max()) == 1.0
    assert int(torch.count_nonzero(data.x)) == int(data.x.sum())
    assert int(data.x.sum(dim=1).min()) >= 1


def test_twitch_fr_duplicate_rows_are_merged(shared_data_dir):
    data = load_dataset("twitch-fr", shared_data_dir)
    assert data.num_nodes == 6549  # the target file has 6,551 rows, two users listed twice
    assert torch.bincount(data.y).tolist() == [4135, 2414]


@pytest.mark.parametrize(
    ("name", "nodes", "edges", "classes"),
    [
        ("lastfm-asia", 7624, 27806, 18),
        ("github", 37700, 289003, 2),
        ("deezer-europe", 28281, 92752, 2),
    ],
)
def test_featureless_musae_needs_explicit_substitute(shared_data_dir, name, nodes, edges, classes):
    info = dataset_info(name, shared_data_dir)
    if info.available:
        pytest.skip(f"this data directory has the {name} features")
    assert info.structure_available and len(info.missing) == 1
    assert info.missing[0].endswith("_features.json")
    with pytest.raises(DatasetNotFoundError) as exc:
        load_dataset(name, shared_data_dir)
    msg = str(exc.value)
    assert "features are not in the offline copies" in msg
    assert "one-hot-degree" in msg and "https://snap.stanford.edu/data/" in msg

    data = load_dataset(name, shared_data_dir, features="one-hot-degree", max_degree=16)
    assert data.num_nodes == nodes and data.edge_index.size(1) == 2 * edges
    assert torch.unique(data.y).numel() == classes
    assert tuple(data.x.shape) == (nodes, 17)
    assert torch.equal(data.x.sum(dim=1), torch.ones(nodes))
    deg = torch.bincount(data.edge_index[0], minlength=nodes).clamp(max=16)
    assert torch.equal(data.x.argmax(dim=1), deg)
    assert_simple_undirected(data.edge_index, nodes)


def test_lastfm_top10_classes_option(shared_data_dir):
    full = load_dataset("lastfm-asia", shared_data_dir, features="one-hot-degree")
    counts = torch.bincount(full.y)
    top = torch.sort(counts, descending=True).values[:10]
    data = load_dataset(
        "lastfm-asia",
        shared_data_dir,
        features="one-hot-degree",
        top_k_classes=10,
        normalize_features=True,
    )
    assert data.num_nodes == int(top.sum())
    assert torch.bincount(data.y).tolist() == top.tolist()
    assert float(data.x.min()) == 0.0 and float(data.x.max()) == 1.0
    assert_simple_undirected(data.edge_index, data.num_nodes)


# name: (graphs, classes, average nodes, total undirected edges)
GRAPH_STATS = {
    "mutag": (188, 2, 17.930851, 3721),
    "proteins": (1113, 2, 39.057502, 81044),
    "imdb-binary": (1000, 2, 19.773, 96531),
    "imdb-multi": (1500, 3, 13.001333, 98903),
    "reddit-binary": (2000, 2, 429.627, 995508),
}


@pytest.mark.parametrize("name", sorted(GRAPH_STATS))
def test_graph_dataset_statistics(shared_data_dir, name):
    ds = load_dataset(name, shared_data_dir)
    graphs, classes, avg_nodes, edges = GRAPH_STATS[name]
    assert isinstance(ds, GraphDataset) and ds.name == name
    assert len(ds) == graphs and ds.num_classes == classes
    assert ds.avg_nodes == pytest.approx(avg_nodes, abs=1e-6)
    assert sum(g.edge_index.size(1) for g in ds) == 2 * edges
    assert ds.y.dtype == torch.int64 and tuple(ds.y.shape) == (graphs,)
    assert torch.unique(ds.y).tolist() == list(range(classes))
    for g in ds.graphs[:: max(1, graphs // 50)]:
        assert g.x is None and tuple(g.y.shape) == (1,)
        assert_simple_undirected(g.edge_index, g.num_nodes)
    info = dataset_info(name, shared_data_dir)
    assert (info.graphs, info.classes, info.edges) == (graphs, classes, edges)
    assert info.nodes == pytest.approx(avg_nodes, abs=1e-6)


def test_tu_class_balance_and_node_labels(shared_data_dir):
    mutag = load_dataset("MUTAG", shared_data_dir)  # case-insensitive name
    assert torch.bincount(mutag.y).tolist() == [63, 125]
    assert all(g.node_label.shape == (g.num_nodes,) for g in mutag)
    assert sorted(torch.unique(torch.cat([g.node_label for g in mutag])).tolist()) == list(range(7))
    imdb = load_dataset("imdb-binary", shared_data_dir)
    assert "node_label" not in imdb[0]
    assert torch.bincount(imdb.y).tolist() == [500, 500]
    sub = imdb[torch.tensor([0, 5, 7])]
    assert isinstance(sub, GraphDataset) and len(sub) == 3 and sub[1] is imdb[5]


def test_graph_dataset_one_hot_degree(shared_data_dir):
    ds = load_dataset("imdb-multi", shared_data_dir, features="one-hot-degree", max_degree=20)
    g = ds[3]
    assert tuple(g.x.shape) == (g.num_nodes, 21)
    deg = torch.bincount(g.edge_index[0], minlength=g.num_nodes).clamp(max=20)
    assert torch.equal(g.x.argmax(dim=1), deg)
    assert ds.num_features == 21


def test_npz_is_read_without_pickle(shared_data_dir, shared_file, monkeypatch):
    # cora_ml.npz holds pickled object entries (metadata, ...) that must never be read.
    shared_file("npz/cora_ml.npz")
    import dpgl.datasets.npz as npz_mod

    calls = []
    real_load = np.load

    def spy(*args, **kwargs):
        calls.append(kwargs.get("allow_pickle"))
        return real_load(*args, **kwargs)

    monkeypatch.setattr(npz_mod.np, "load", spy)
    data = load_dataset("cora-ml", shared_data_dir)
    assert calls == [False]
    assert data.num_nodes == 2995


def test_registry_names_kinds_and_aliases(tmp_path):
    names = list_datasets()
    for required in [
        "cora",
        "citeseer",
        "pubmed",
        "cora-ml",
        "coauthor-cs",
        "coauthor-physics",
        "amazon-computers",
        "amazon-photo",
        "citeseer-full",
        "facebook",
        "github",
        "lastfm-asia",
        "twitch-de",
        "twitch-engb",
        "twitch-es",
        "twitch-fr",
        "twitch-ptbr",
        "twitch-ru",
        "deezer-europe",
        "reddit-binary",
        "reddit-multi-5k",
        "imdb-binary",
        "imdb-multi",
        "mutag",
        "proteins",
        "github-stargazers",
        "csbm",
        "ba",
    ]:
        assert required in names
    assert set(list_datasets("node")) | set(list_datasets("graph")) == set(names)
    assert "mutag" in list_datasets("graph") and "mutag" not in list_datasets("node")
    assert dataset_kind("reddit-binary") == "graph" and dataset_kind("cora") == "node"
    assert canonical_name("ms-academic") == "coauthor-cs"
    assert canonical_name("MS_Academic_Physics") == "coauthor-physics"
    with pytest.raises(ConfigError, match=r"unknown dataset 'corra'; choose one of: .*cora"):
        load_dataset("corra")
    with pytest.raises(ConfigError, match="unknown dataset"):
        dataset_kind("nope")
    with pytest.raises(ConfigError, match="kind"):
        list_datasets("edge")
    info = dataset_info("ms-academic", tmp_path)
    assert info.name == "coauthor-cs" and "ms-academic" in info.aliases


def test_dataset_info_never_raises_for_missing_files(tmp_path):
    for name in list_datasets():
        info = dataset_info(name, tmp_path)
        if name in ("csbm", "ba"):
            assert info.available and info.missing == []
        else:
            assert not info.available and info.missing
    info = dataset_info("reddit-multi-5k", tmp_path)
    assert info.missing == ["tu/REDDIT-MULTI-5K.zip"] and info.graphs == 4999


def test_bad_options_are_config_errors(shared_data_dir):
    with pytest.raises(ConfigError, match="unknown features mode"):
        load_dataset("cora", shared_data_dir, features="pca")
    with pytest.raises(ConfigError, match="max_degree applies only"):
        load_dataset("cora", shared_data_dir, max_degree=3)
    with pytest.raises(ConfigError, match="apply only to node datasets"):
        load_dataset("mutag", shared_data_dir, top_k_classes=2)
    with pytest.raises(ConfigError, match="unknown option"):
        load_dataset("mutag", shared_data_dir, num_nodes=2)
    # neutral node options (as a generic caller passes them) are accepted for graph datasets
    ds = load_dataset(
        "mutag",
        shared_data_dir,
        normalize_features=False,
        largest_component=False,
        top_k_classes=None,
    )
    assert len(ds) == 188
    with pytest.raises(ConfigError, match="has 7 classes"):
        load_dataset("cora", shared_data_dir, top_k_classes=8)

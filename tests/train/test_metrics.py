import numpy as np
import pytest

from dpgl.train.metrics import accuracy, f1_scores, roc_auc


def test_accuracy_and_f1() -> None:
    y = np.array([0, 0, 1, 1, 2, 2])
    p = np.array([0, 1, 1, 1, 2, 0])
    assert accuracy(p, y) == pytest.approx(4 / 6)
    micro, macro = f1_scores(p, y, 3)
    assert micro == pytest.approx(4 / 6)  # micro-F1 == accuracy for single-label data
    # per class F1: c0: tp1 fp1 fn1 -> .5 ; c1: tp2 fp1 fn0 -> .8 ; c2: tp1 fp0 fn1 -> 2/3
    assert macro == pytest.approx((0.5 + 0.8 + 2 / 3) / 3)


def test_roc_auc_binary_known_values() -> None:
    y = np.array([0, 0, 1, 1])
    assert roc_auc(np.array([0.1, 0.4, 0.35, 0.8]), y) == pytest.approx(0.75)
    assert roc_auc(np.array([0.1, 0.2, 0.3, 0.4]), y) == pytest.approx(1.0)
    assert roc_auc(np.array([0.5, 0.5, 0.5, 0.5]), y) == pytest.approx(0.5)  # ties
    assert np.isnan(roc_auc(np.array([0.1, 0.2]), np.array([1, 1])))


def test_roc_auc_multiclass_is_macro_ovr() -> None:
    y = np.array([0, 1, 2, 2])
    probs = np.eye(3)[y] * 0.8 + 0.1
    assert roc_auc(probs, y) == pytest.approx(1.0)
    two_col = np.stack([1 - np.array([0.1, 0.4, 0.35, 0.8]), [0.1, 0.4, 0.35, 0.8]], 1)
    assert roc_auc(two_col, np.array([0, 0, 1, 1])) == pytest.approx(0.75)

"""Classification metrics: accuracy, micro/macro F1, ROC AUC (no scikit-learn needed)."""

from __future__ import annotations

import numpy as np
import torch
from scipy.stats import rankdata


def accuracy(pred: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean(pred == y)) if y.size else float("nan")


def f1_scores(pred: np.ndarray, y: np.ndarray, num_classes: int) -> tuple[float, float]:
    """(micro-F1, macro-F1). For single-label multi-class data micro-F1 equals accuracy
    (LPGNN reports micro-F1)."""
    if y.size == 0:
        return float("nan"), float("nan")
    tp = np.bincount(y[pred == y], minlength=num_classes).astype(float)
    fp = np.bincount(pred[pred != y], minlength=num_classes).astype(float)
    fn = np.bincount(y[pred != y], minlength=num_classes).astype(float)
    micro = tp.sum() / max(tp.sum() + 0.5 * (fp.sum() + fn.sum()), 1e-12)
    present = (tp + fn) > 0
    denom = tp + 0.5 * (fp + fn)
    per_class = np.divide(tp, denom, out=np.zeros_like(tp), where=denom > 0)
    macro = float(per_class[present].mean()) if present.any() else float("nan")
    return float(micro), macro


def roc_auc(scores: np.ndarray, y: np.ndarray) -> float:
    """ROC AUC via the Mann-Whitney U statistic (ties get average ranks).

    ``scores`` is [n] for binary labels (score of class 1) or [n, C] probabilities for C > 2,
    where the macro one-vs-rest average over classes present is returned.
    """
    scores = np.asarray(scores, dtype=float)
    y = np.asarray(y)
    if scores.ndim == 2 and scores.shape[1] == 2:
        scores = scores[:, 1]
    if scores.ndim == 1:
        pos = y == 1
        n_pos, n_neg = int(pos.sum()), int((~pos).sum())
        if n_pos == 0 or n_neg == 0:
            return float("nan")
        ranks = rankdata(scores)
        return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))
    aucs = [roc_auc(scores[:, c], (y == c).astype(int)) for c in range(scores.shape[1])]
    valid = [a for a in aucs if not np.isnan(a)]
    return float(np.mean(valid)) if valid else float("nan")


def evaluate_logits(logits: torch.Tensor, y: torch.Tensor, val_idx: torch.Tensor,
                    test_idx: torch.Tensor, num_classes: int) -> dict[str, float]:
    pred = logits.argmax(-1).cpu().numpy()
    true = y.cpu().numpy()
    out: dict[str, float] = {}
    for part, idx in (("val", val_idx), ("test", test_idx)):
        i = idx.cpu().numpy()
        micro, macro = f1_scores(pred[i], true[i], num_classes)
        out[f"{part}_accuracy"] = accuracy(pred[i], true[i])
        out[f"{part}_f1_micro"] = micro
        out[f"{part}_f1_macro"] = macro
    return out

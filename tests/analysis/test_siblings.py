"""Cross-run judgement: a loss stuck orders of magnitude above its siblings' is underfitting."""

from __future__ import annotations

from tanalyze.analysis.siblings import SiblingSummary, compare_siblings, folder_of
from tanalyze.diagnose import clip_value


def _runs(ends, starts=None, folder="sweep", kind="tensorboard|train/loss"):
    starts = starts or [5.0] * len(ends)
    return [SiblingSummary(f"{folder}/seed_{i}", folder, "train/loss", e, "normal", kind, s)
            for i, (e, s) in enumerate(zip(ends, starts, strict=True))]


def test_a_run_stuck_100x_above_its_siblings_is_found():
    [stuck] = compare_siblings(_runs([0.04, 0.05, 0.03, 4.1], [6.0, 9.0, 7.0, 10.0]))
    assert stuck.run == "sweep/seed_3" and stuck.ratio == 4.1 / 0.04
    assert stuck.siblings == ("sweep/seed_0", "sweep/seed_1", "sweep/seed_2")
    assert "100x" not in stuck.reason() and "102x" in stuck.reason()


def test_no_stuck_run_without_enough_alike_siblings():
    assert compare_siblings(_runs([0.04, 4.1])) == ()  # one sibling is not enough
    assert compare_siblings(_runs([0.04, 0.05, 0.3])) == ()  # 6.7x the median: not an order of magnitude
    assert compare_siblings(_runs([0.04, 0.05, 0.5, 0.2])) == ()  # 11x the median, but 2.5x the highest
    # different models in one folder start far apart (mmdet work_dirs: YOLOv3's summed loss starts near 470)
    assert compare_siblings(_runs([1.0, 0.2, 0.34, 178.0], [5.9, 0.83, 1.75, 467.0])) == ()
    # other folders or other readers are not siblings
    mixed = _runs([0.04, 0.05]) + _runs([4.1], folder="other") + _runs([4.2], kind="csv|train/loss")
    assert compare_siblings(mixed) == ()


def test_diverged_siblings_are_not_a_reference():
    runs = _runs([0.04, 0.05, 4.1])
    runs[0] = SiblingSummary("sweep/seed_0", "sweep", "train/loss", 0.04, "diverged", runs[0].kind, 5.0)
    assert compare_siblings(runs) == ()


def test_folder_of():
    assert folder_of("a/b/c") == "a/b" and folder_of("run") == ""


def test_clip_value_from_hparams():
    assert clip_value({"max_grad_norm": 1.0}) == 1.0
    assert clip_value({"trainer": {"gradient_clip_val": 0.5}}) == 0.5
    assert clip_value({"optim_wrapper": {"clip_grad": {"max_norm": 35, "norm_type": 2}}}) == 35.0
    assert clip_value({"grad_clip": 0.0}) is None and clip_value({"lr": 3e-4}) is None

"""The readers fed by one ``findall`` a chunk (readers/text/_findall.py): a chunk's first line, which no line break
comes before, is read as every other line is."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tanalyze.readers import get_reader
from tanalyze.readers.text import _parts
from tests.readers.text_helpers import write

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NNUNET_FOLD = FIXTURES / "nnunet/Dataset001_Blobs/nnUNetTrainer_5epochs__nnUNetPlans__2d/fold_0"


def _read(name: str, files: list[Path]):
    (run,) = get_reader(name).read(files)
    return run


@pytest.mark.parametrize(("name", "files"), [
    ("darknet", [FIXTURES / "darknet/train.log"]),
    ("nnunet", sorted(NNUNET_FOLD.glob("training_log_*.txt"))),
    ("console_table", [FIXTURES / "console_table/fastai_fit.log"]),
    ("paddle", [FIXTURES / "paddle/paddleseg/train.log"]),
    ("opennmt", [FIXTURES / "opennmt/toy/train.log"]),
    ("pytorch_lm", [FIXTURES / "pytorch_lm/word_lm_overfit.log"]),
    ("torchtitan", [FIXTURES / "torchtitan/console_grad_norm_validation.log"]),
    ("maxtext", [FIXTURES / "maxtext/docs_print/console.log"]),
    ("olmo", [FIXTURES / "olmo/console_v0.4plus.log"]),
], ids=["darknet", "nnunet", "console_table", "paddle", "opennmt", "pytorch_lm", "torchtitan", "maxtext", "olmo"])
def test_small_chunks_read_the_same_rows(name, files, monkeypatch):
    whole = _read(name, files)
    assert len(whole.scalars) > 20
    order = ["tag", "step"]  # (a chunk's evaluations may come after its iterations)
    expected = whole.scalars.sort_values(order, kind="stable").reset_index(drop=True)
    # many chunks, cut at other lines at each size (none cutting a line: the longest is 1,504 characters)
    for size in range(2048, 3072, 128):
        monkeypatch.setattr(_parts, "CHUNK_CHARS", size)
        pieces = _read(name, files)
        pd.testing.assert_frame_equal(expected, pieces.scalars.sort_values(order, kind="stable").reset_index(drop=True),
                                      check_exact=True, obj=f"{name} in chunks of {size}")
        assert (whole.restarts, whole.notes, whole.warnings) == (pieces.restarts, pieces.notes, pieces.warnings)


def test_a_file_that_begins_with_a_line_read(tmp_path):
    """darknet's iteration on the very first line of the file (no banner before it) is read."""
    lines = "".join(f" {i}: {10 - i:.6f}, {11 - i:.6f} avg loss, 0.001000 rate, 5.000000 seconds, {64 * i} images\n"
                    for i in range(1, 4))
    run = _read("darknet", [write(tmp_path / "train.log", lines)])
    loss = run.scalars[run.scalars["tag"] == "loss"]
    assert loss["step"].tolist() == [1, 2, 3]
    assert loss["value"].tolist() == [9.0, 8.0, 7.0]

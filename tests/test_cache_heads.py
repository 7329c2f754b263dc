"""Head tags remembered between discoveries: the same runs as without, no head decoded again while files keep
their stamp, and a file that changed decoded again."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tanalyze.cache import Cache
from tanalyze.cache.heads import StoredHeadTags
from tanalyze.discover import discover
from tanalyze.readers.tensorboard import TensorBoardReader

LAYOUT = Path(__file__).parent / "fixtures" / "layouts" / "tbx_add_scalars"


@pytest.fixture
def decoded(monkeypatch):
    """The files whose head tags were decoded."""
    seen: list[bytes] = []
    real = TensorBoardReader.head_tags

    def counting(self, head):
        seen.append(head)
        return real(self, head)

    monkeypatch.setattr(TensorBoardReader, "head_tags", counting)
    return seen


def _discover(root: Path, cache: Cache):
    heads = StoredHeadTags(cache, root)
    found = discover(root, heads=heads)
    heads.save()
    return found


def test_remembered_heads_give_the_same_runs_without_decoding(tmp_path, decoded):
    root = tmp_path / "runs"
    shutil.copytree(LAYOUT, root)
    plain = discover(root)
    files = len(list(root.rglob("events.out.tfevents.*")))
    assert len(decoded) == files >= 3 and len(plain.runs) == 1  # sub-writers joined by their head tags
    cache = Cache(str(tmp_path / "cache"))
    decoded.clear()
    assert _discover(root, cache) == plain
    assert len(decoded) == files
    decoded.clear()
    assert _discover(root, cache) == plain
    assert decoded == []

    changed = next((root / "runs" / "mlp" / "Loss" / "val").glob("events.*"))
    os.utime(changed, ns=(changed.stat().st_atime_ns, changed.stat().st_mtime_ns + 1_000_000))
    assert _discover(root, cache) == plain
    assert len(decoded) == 1  # that file only


def test_a_damaged_or_foreign_entry_means_decoding_again(tmp_path, decoded):
    root = tmp_path / "runs"
    shutil.copytree(LAYOUT, root)
    cache = Cache(str(tmp_path / "cache"))
    plain = _discover(root, cache)
    entry = next((Path(cache.directory) / "v1" / "heads").rglob("*.*"))
    entry.write_bytes(entry.read_bytes()[:-7])
    decoded.clear()
    assert _discover(root, cache) == plain
    assert len(decoded) == len(list(root.rglob("events.out.tfevents.*")))

"""A snapshot's offers kept in the data directory: the same offers again, and never stale ones."""

from __future__ import annotations

import csv
import gzip
import io
import shutil
from pathlib import Path
from typing import Any

import pytest

from perdollar.catalog import BUNDLED_SNAPSHOT, snapshot
from perdollar.paths import data_dir


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The snapshot folders whose offers were read from their CSV from here on."""
    folders: list[Path] = []
    read = snapshot._read_offers

    def counted(folder: Path, *args: Any) -> Any:
        folders.append(folder)
        return read(folder, *args)

    monkeypatch.setattr(snapshot, "_read_offers", counted)
    return folders


def kept_files() -> list[Path]:
    return sorted((data_dir() / "catalog-offers").glob("*.json"))


def test_offers_read_again_are_the_kept_ones(reads: list[Path]) -> None:
    first = snapshot.read_snapshot(BUNDLED_SNAPSHOT)
    again = snapshot.read_snapshot(BUNDLED_SNAPSHOT)
    assert reads == [BUNDLED_SNAPSHOT] and len(kept_files()) == 1
    assert again.offers == first.offers and len(first.offers) > 1000
    assert any(o.flags for o in again.offers) and any(o.price_max_per_hour is None for o in again.offers)


def test_an_edited_snapshot_is_read_again(reads: list[Path], tmp_path: Path) -> None:
    folder = tmp_path / "snapshot"
    shutil.copytree(BUNDLED_SNAPSHOT, folder)
    before = snapshot.read_snapshot(folder)
    table = list(csv.reader(io.StringIO(gzip.decompress((folder / "offers.csv.gz").read_bytes()).decode())))
    price = table[0].index("price_per_hour")
    table[1][price] = str(float(table[1][price]) + 1.0)
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(table)
    (folder / "offers.csv.gz").write_bytes(gzip.compress(text.getvalue().encode()))
    after = snapshot.read_snapshot(folder)
    assert reads == [folder, folder] and len(kept_files()) == 2
    changed = [(b.price_per_hour, a.price_per_hour) for b, a in zip(before.offers, after.offers, strict=True)
               if b != a and b.price_per_hour != a.price_per_hour]  # fmt: skip
    assert len(changed) == 1 and changed[0][1] == changed[0][0] + 1.0


def test_a_damaged_kept_file_is_read_again_and_replaced(reads: list[Path]) -> None:
    first = snapshot.read_snapshot(BUNDLED_SNAPSHOT)
    (path,) = kept_files()
    path.write_text('[["aws", "g5.xlarge"]]')
    again = snapshot.read_snapshot(BUNDLED_SNAPSHOT)
    assert reads == [BUNDLED_SNAPSHOT, BUNDLED_SNAPSHOT] and again.offers == first.offers
    assert snapshot.read_snapshot(BUNDLED_SNAPSHOT).offers == first.offers and len(reads) == 2

"""The checked catalog kept in the cache folder: served only while it is the snapshot's own, and read
as data, never as code."""

from __future__ import annotations

import dataclasses
import gzip
import os
import pickle
import shutil
from pathlib import Path
from typing import Any

import pytest

from perdollar import cache, catalog
from perdollar.catalog import kept
from perdollar.catalog.snapshot import read_snapshot

TINY = Path(__file__).parent / "fixtures" / "catalog" / "tiny"


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    folder = tmp_path / "snapshot"
    shutil.copytree(TINY, folder)
    return folder


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The folder the kept catalogs are written to."""
    return tmp_path / "cache" / kept.KIND


def _kept_files(home: Path) -> list[Path]:
    return sorted(home.glob("*.pickle"))


def _price(cat: catalog.Catalog, name: str, region: str, market: str) -> float:
    wanted = (name, region, market)
    return next(o.price_per_hour for o in cat.offers if (o.instance_type, o.region, o.market) == wanted)


def _frame_price(cat: catalog.Catalog, name: str, region: str, market: str) -> float:
    frame = cat.offers_frame()
    row = frame[(frame.instance_type == name) & (frame.region == region) & (frame.market == market)]
    return float(row["price_per_hour"].iloc[0])


def _set_price(folder: Path, name: str, region: str, market: str, price: str) -> None:
    path = folder / "offers.csv.gz"
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    changed = []
    for line in lines:
        cells = line.split(",")
        if cells[1:4] == [name, region, market]:
            cells[4] = price
        changed.append(",".join(cells))
    stat = path.stat()
    path.write_bytes(gzip.compress(("\n".join(changed) + "\n").encode()))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # only the bytes say it changed


def _refuse_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(folder: Path) -> catalog.Catalog:
        raise AssertionError(f"read {folder} again instead of using the kept catalog")

    monkeypatch.setattr(kept, "read_snapshot", refuse)


def _assert_same(a: catalog.Catalog, b: catalog.Catalog) -> None:
    assert a.offers == b.offers
    # repr: a missing vCPU count is NaN, which equals no other NaN object
    assert repr(dict(a.instance_types)) == repr(dict(b.instance_types))
    assert repr(dict(a.accelerators)) == repr(dict(b.accelerators))
    assert dict(a.aliases) == dict(b.aliases)
    assert (a.captured_at, a.snapshot_id, a.path) == (b.captured_at, b.snapshot_id, b.path)
    assert a.offers_frame().equals(b.offers_frame())
    assert a.instances_frame().equals(b.instances_frame())


def test_the_kept_catalog_is_served_and_is_the_one_read(
    snapshot: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = read_snapshot(snapshot)
    first = kept.kept_or_read(snapshot, home)
    assert len(_kept_files(home)) == 1
    _refuse_reading(monkeypatch)  # from here on, only the kept file can answer
    again = kept.kept_or_read(snapshot, home)
    assert again is not first
    _assert_same(again, expected)
    narrowed = dataclasses.replace(again, snapshot_id="narrowed")  # as compare narrows a catalog
    assert narrowed.offers == expected.offers and narrowed.snapshot_id == "narrowed"
    machine = expected.instance("g5.2xlarge")
    assert again.offers_for(machine) == expected.offers_for(machine)


def test_a_changed_snapshot_file_is_read_again(snapshot: Path, home: Path) -> None:
    before = kept.kept_or_read(snapshot, home)
    old = _price(before, "g5.2xlarge", "us-east-1", "on-demand")
    _set_price(snapshot, "g5.2xlarge", "us-east-1", "on-demand", "9.875")
    after = kept.kept_or_read(snapshot, home)
    assert old != 9.875
    assert _price(after, "g5.2xlarge", "us-east-1", "on-demand") == 9.875
    assert _frame_price(after, "g5.2xlarge", "us-east-1", "on-demand") == 9.875
    assert len(_kept_files(home)) == 2  # one per content; the earlier one is never named again


def test_load_follows_a_changed_bundled_style_snapshot(
    snapshot: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PERDOLLAR_CACHE", str(home.parent))
    monkeypatch.setattr(catalog, "_cache", {})
    catalog.load(snapshot)
    assert _kept_files(home)
    _set_price(snapshot, "m7i.large", "us-east-1", "on-demand", "0.5")
    monkeypatch.setattr(catalog, "_cache", {})  # a new process
    assert _price(catalog.load(snapshot), "m7i.large", "us-east-1", "on-demand") == 0.5


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: b"not a pickle at all",
        lambda data: data[: len(data) // 2],  # cut short, as by a full disk
        lambda data: b"",
        lambda data: pickle.dumps({"name": "another.pickle", "offers": []}),
        lambda data: pickle.dumps({**pickle.loads(data), "name": "another.pickle"}),  # another's, renamed
        lambda data: pickle.dumps(["a list"]),
    ],
)
def test_a_damaged_kept_file_is_never_served_and_is_written_again(
    snapshot: Path, home: Path, damage: object
) -> None:
    expected = read_snapshot(snapshot)
    kept.kept_or_read(snapshot, home)
    [path] = _kept_files(home)
    path.write_bytes(damage(path.read_bytes()))  # type: ignore[operator]
    served = kept.kept_or_read(snapshot, home)
    _assert_same(served, expected)
    with path.open("rb") as written:
        assert pickle.load(written)["name"] == path.name  # whole again


def test_a_kept_file_of_another_folder_with_the_same_files_is_not_used(
    snapshot: Path, home: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    shutil.copytree(snapshot, other)
    kept.kept_or_read(snapshot, home)
    assert kept.kept_or_read(other, home).path == other
    assert len(_kept_files(home)) == 2


def test_without_a_data_folder_nothing_is_kept(snapshot: Path, home: Path) -> None:
    _assert_same(kept.kept_or_read(snapshot, None), read_snapshot(snapshot))
    assert not home.exists()


def test_a_file_kept_by_other_catalog_code_is_not_served(
    snapshot: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = Path(kept.__file__).parent
    read = {path.resolve() for path in [*package.glob("*.py"), package.parent / "vocabulary.py"]}
    read |= {path.resolve() for path in (package / "data").iterdir() if path.is_file()}
    opened: set[Path] = set()
    real_read_bytes = Path.read_bytes

    def noting(path: Path) -> bytes:
        opened.add(path.resolve())
        return real_read_bytes(path)

    cache.code_digest.cache_clear()
    monkeypatch.setattr(Path, "read_bytes", noting)
    kept.kept_or_read(snapshot, home)
    monkeypatch.undo()
    assert read <= opened  # the list of clouds it checks names against is part of its code
    monkeypatch.setattr(cache, "code_digest", lambda parts: "another version of the catalog code")
    kept.kept_or_read(snapshot, home)
    assert len(_kept_files(home)) == 2


class _Planted:
    """What a hostile file would hold: unpickling it calls a function of the attacker's choice."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (Path.write_text, (self.marker, "ran"))


@pytest.mark.parametrize("where", ["document", "offers"])
def test_a_planted_kept_file_runs_no_code_and_the_snapshot_is_read(
    snapshot: Path, home: Path, tmp_path: Path, where: str
) -> None:
    expected = read_snapshot(snapshot)
    kept.kept_or_read(snapshot, home)
    [path] = _kept_files(home)
    marker = tmp_path / "marker"
    document = pickle.loads(path.read_bytes())
    if where == "document":
        document["accelerators"] = _Planted(marker)
    else:  # hidden in the columns read only when the offers are asked for
        document["offers"] = pickle.dumps([_Planted(marker)])
    path.write_bytes(pickle.dumps(document))
    served = kept.kept_or_read(snapshot, home)
    _assert_same(served, expected)
    assert not marker.exists(), "a kept file ran code"


def test_a_kept_file_another_account_may_write_is_not_read(
    snapshot: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept.kept_or_read(snapshot, home)
    [path] = _kept_files(home)
    path.chmod(0o666)
    _refuse_reading(monkeypatch)
    with pytest.raises(AssertionError, match=r"read .* again"):
        kept.kept_or_read(snapshot, home)
    path.chmod(0o600)
    _assert_same(kept.kept_or_read(snapshot, home), read_snapshot(snapshot))  # served again once private


@pytest.mark.skipif(os.name != "posix" or os.geteuid() != 0, reason="changing a file's owner needs root")
def test_a_kept_file_owned_by_another_user_is_not_read(
    snapshot: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept.kept_or_read(snapshot, home)
    [path] = _kept_files(home)
    os.chown(path, 65534, 65534)  # nobody
    _refuse_reading(monkeypatch)
    with pytest.raises(AssertionError, match=r"read .* again"):
        kept.kept_or_read(snapshot, home)


def test_the_bundled_catalog_reads_back_through_the_safe_unpickler(home: Path) -> None:
    # A pandas or numpy release that pickles a frame through a name the allow-list lacks would
    # quietly cost every process a full read: this fails first.
    from perdollar.catalog import BUNDLED_SNAPSHOT

    kept.kept_or_read(BUNDLED_SNAPSHOT, home)
    [path] = _kept_files(home)
    document = kept.safe_loads(path.read_bytes())
    assert len(kept.safe_loads(document["offers"])[0]) > 1000


def test_a_temporary_file_a_killed_run_left_is_pruned(snapshot: Path, home: Path) -> None:
    home.mkdir(parents=True)
    left, fresh = home / "left.tmp", home / "being-written.tmp"
    left.write_bytes(b"half a catal")
    fresh.write_bytes(b"half a catal")
    os.utime(left, (0, 1e9))  # long ago
    kept.kept_or_read(snapshot, home)
    assert not left.exists() and fresh.exists()  # another process may still be writing this one


def test_the_kept_folder_is_private_whatever_the_umask(snapshot: Path, home: Path) -> None:
    previous = os.umask(0o002)  # group-writable by default, as on many desktops
    try:
        kept.kept_or_read(snapshot, home)
    finally:
        os.umask(previous)
    assert home.stat().st_mode & 0o077 == 0
    kept.kept_or_read(snapshot, home)  # and so it is read back, not read from the snapshot again
    [path] = _kept_files(home)
    assert kept._owned_by_this_user(path)

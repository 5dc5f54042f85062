"""Bad files given where a CSV or JSON is expected: one line, exit 2, never a traceback."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

from cli_runner import run_perdollar
from perdollar.predict.published import REQUIRED_COLUMNS


def _files(folder: Path) -> dict[str, Path]:
    (folder / "a-folder.csv").mkdir()
    (folder / "header-only.csv").write_text("a,b\n")
    (folder / "garbage.csv").write_bytes(b"\x00\x01\xff\xfe not a table\n")
    (folder / "empty.csv").write_text("")
    (folder / "bad.json").write_text("{not json")
    # Files that parse, in the right schema, with nothing usable in them.
    (folder / "null.json").write_text("null")
    (folder / "integers.json").write_text("[1, 2, 3]")
    (folder / "empty-list.json").write_text("[]")
    header = ",".join(REQUIRED_COLUMNS)
    (folder / "schema-header-only.csv").write_text(header + "\n")
    (folder / "schema-garbage.csv").write_text(
        header + "\n" + ",".join("zq" for _ in REQUIRED_COLUMNS) + "\n"
    )
    one_row = "lab,resnet50,train,T4,1,fp32,64,per_gpu,,100,images/s,throughput,per gpu,"
    (folder / "one-usable-row.csv").write_text(header + "\n" + one_row + "\n")
    return {p.name: p for p in folder.iterdir()} | {"missing.csv": folder / "missing.csv"}


VALIDATE = ("validate", "{file}")
PREDICT = ("predict", "mlp", "--instance", "g5.xlarge", "--measurements", "{file}")
CASES = [
    (VALIDATE, name)
    for name in ("a-folder.csv", "header-only.csv", "garbage.csv", "empty.csv", "missing.csv")
]
CASES += [(PREDICT, name) for name in ("a-folder.csv", "garbage.csv", "bad.json")]
# Read without complaint and ignored once: a measurements file with no usable row names what it expected.
UNUSABLE = ("null.json", "integers.json", "empty-list.json", "schema-header-only.csv", "schema-garbage.csv")
CASES += [(PREDICT, name) for name in UNUSABLE]
CASES += [(VALIDATE, name) for name in ("schema-header-only.csv", "schema-garbage.csv", "one-usable-row.csv")]


@pytest.mark.parametrize(("command", "name"), CASES, ids=[f"{c[0]}-{n}" for c, n in CASES])
def test_a_bad_file_is_one_line(command: tuple[str, ...], name: str, tmp_path: Path) -> None:
    path = _files(tmp_path)[name]
    args = [part.format(file=path) for part in command]
    done = run_perdollar(*args, columns=200)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr[-1500:]
    assert "Traceback" not in done.stderr and lines[-1].startswith("perdollar: error:") and len(lines) == 1
    assert path.name in lines[-1]
    if name in UNUSABLE or (command is VALIDATE and name.startswith(("schema", "one"))):
        assert any(hint in lines[-1] for hint in ("reads without a file", "bench --json", "second GPU"))


def _hostile_catalog_sources(folder: Path) -> dict[str, Path]:
    """What a careless or hostile user gives `catalog refresh --from`: never a provider's table."""
    (folder / "a-folder").mkdir()
    (folder / "a-folder" / "aws.csv").mkdir()  # a folder where the provider's file should be
    (folder / "zero").mkdir()
    (folder / "zero" / "aws.csv").symlink_to("/dev/zero")
    (folder / "pipe").mkdir()
    os.mkfifo(folder / "pipe" / "aws.csv")  # nobody writes to it: reading it would wait forever
    header = "instance_name,location,price,cpu,memory,gpu_count,gpu_name,gpu_memory,spot\n"
    # 129 MiB of one byte in a few hundred kB
    with (zipfile.ZipFile(folder / "bomb.zip", "w", zipfile.ZIP_DEFLATED) as archive,
          archive.open("aws.csv", "w", force_zip64=True) as member):  # fmt: skip
        member.write(header.encode())
        for _ in range(129):
            member.write(b"x" * 2**20)
    return {"folder-named-aws.csv": folder / "a-folder", "dev-zero": Path("/dev/zero"),
            "link-to-dev-zero": folder / "zero", "named-pipe": folder / "pipe",
            "named-pipe-itself": folder / "pipe" / "aws.csv", "zip-bomb": folder / "bomb.zip"}  # fmt: skip


HOSTILE_SOURCES = ["folder-named-aws.csv", "dev-zero", "link-to-dev-zero", "named-pipe", "named-pipe-itself",
                   "zip-bomb"]  # fmt: skip


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
@pytest.mark.parametrize("name", HOSTILE_SOURCES)
def test_catalog_refresh_from_a_hostile_source_is_one_line(name: str, tmp_path: Path) -> None:
    source = _hostile_catalog_sources(tmp_path)[name]
    done = run_perdollar("catalog", "refresh", "--from", str(source), timeout=120, columns=200)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr[-1500:]
    assert "Traceback" not in done.stderr and len(lines) == 1 and lines[0].startswith("perdollar: error:")
    assert ("not a regular file" in lines[0]) or ("more than 128 MiB" in lines[0])

"""Checks shared by the tuners' resumption tests: a resumed run folder holds what an uninterrupted one does."""

from pathlib import Path

TIMED = ("decode_s", "optimize_s", "online_s", "seconds")  # log columns of wall-clock seconds


def untimed_log(folder: Path) -> list[list[str]]:
    """The rows of ``folder/log.tsv`` (header first) with the seconds columns left out."""
    rows = [line.split("\t") for line in (folder / "log.tsv").read_text(encoding="utf-8").splitlines()]
    keep = [i for i, name in enumerate(rows[0]) if name not in TIMED]
    return [[row[i] for i in keep] for row in rows]


def assert_resumed_as_uninterrupted(resumed: Path, whole: Path, files=("moses.ini",)) -> None:
    """The same log (but for the seconds) and the same ``files`` in both run folders."""
    assert untimed_log(resumed) == untimed_log(whole)
    assert len(untimed_log(whole)) > 2
    for name in files:
        assert (resumed / name).read_bytes() == (whole / name).read_bytes(), name

"""``pbmt.toml``: pbmt's own model settings, beside a ``moses.ini`` that stays loadable by Moses.

Tables (each optional):

- ``[preprocess]``: how plain text becomes the model's tokens
  (``pbmt.model.model.Preprocessing``);
- ``[search]``: pbmt-only search settings: ``reordering = "distortion"`` or
  ``"mon-swap"`` (``pbmt.model.model.SearchSettings``);
- ``[sparse]``: sparse feature families and their files (``pbmt.model.sparse``);
- ``[features]``: ``modules``, the model's own feature modules
  (``pbmt.base.feature_modules``).

One reader (``read_tables``) and one writer (``write_tables``) for every
table, so a tool that writes one table keeps the others.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from pbmt.base.errors import PbmtError
from pbmt.base.files import atomic_write

FILE = "pbmt.toml"
TABLES = ("preprocess", "search", "sparse", "features")


def read_tables(folder: str | os.PathLike) -> dict[str, dict]:
    """The tables of ``folder/pbmt.toml`` by name (empty without the file); unknown tables are an error."""
    path = Path(folder) / FILE
    if not path.exists():
        return {}
    try:
        tables = tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except tomllib.TOMLDecodeError as err:  # duplicate keys and tables included
        raise PbmtError(f"{path}: {err}") from None
    except UnicodeDecodeError as err:
        raise PbmtError(f"{path}: not valid UTF-8 (byte {err.start + 1})") from None
    for name, table in tables.items():
        if name not in TABLES or not isinstance(table, dict):
            raise PbmtError(f"{path}: unknown table or key {name!r}; known tables: {', '.join(TABLES)}")
    return tables


def check_keys(folder: str | os.PathLike, table: str, values: dict, known) -> None:
    """Raise an error naming ``folder/pbmt.toml`` when ``values`` (of ``[table]``) has keys outside ``known``."""
    unknown = set(values) - set(known)
    if unknown:
        raise PbmtError(f"{Path(folder) / FILE}: unknown [{table}] keys {sorted(unknown)}; known: {sorted(known)}")


def key_line(path: Path, key: str) -> int | None:
    """The 1-based line of ``path`` (a ``pbmt.toml``) where ``key = ...`` is set, or None: tomllib gives no
    line numbers, and an error about a value names its line."""
    for number, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), 1):
        if line.split("=", 1)[0].strip() == key:
            return number
    return None


def write_tables(folder: str | os.PathLike, tables: dict[str, dict]) -> None:
    """Write ``folder/pbmt.toml`` (atomically) with these tables (values: str, bool, int, float or lists of
    them); empty tables are left out."""
    lines = []
    for name in TABLES:
        if tables.get(name):
            lines += [f"[{name}]"] + [f"{key} = {_value(v)}" for key, v in tables[name].items()] + [""]
    unknown = set(tables) - set(TABLES)
    if unknown:
        raise ValueError(f"unknown pbmt.toml tables {sorted(unknown)}")
    with atomic_write(Path(folder) / FILE) as handle:
        handle.write("\n".join(lines))


def _value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return repr(value)

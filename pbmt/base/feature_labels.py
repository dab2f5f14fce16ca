"""Readable names of dense feature columns, for tables, sliders and plot legends.

A feature with several values (``TranslationModel0``: 4, ``LexicalReordering0``: 6)
is written ``TranslationModel0[1]`` in logs (0-based); a reader wants
``TranslationModel0 lex(f|e)``. Column meanings follow Moses: the phrase
table's four scores are p(f|e), lex(f|e), p(e|f), lex(e|f); a bidirectional
MSD reordering model's six are the block's orientation after its predecessor
(b: backward) then the next block's orientation after it (f: forward), each
monotone, swap, discontinuous.
"""

from __future__ import annotations

import re
from typing import Sequence

COLUMN_MEANINGS = {
    "PhraseDictionaryMemory": ("p(f|e)", "lex(f|e)", "p(e|f)", "lex(e|f)"),
    "LexicalReordering": ("mono (b)", "swap (b)", "disc (b)", "mono (f)", "swap (f)", "disc (f)"),
}

# Moses names a feature after its type when the ini gives no name= (TranslationModel0 is PhraseDictionaryMemory's)
_TYPE_OF_DEFAULT_NAME = {"TranslationModel": "PhraseDictionaryMemory", "LexicalReordering": "LexicalReordering"}
_INDEXED = re.compile(r"^(?P<name>.+)\[(?P<index>\d+)\]$")


def column_label(name: str, index: int, size: int, type_: str | None = None) -> str:
    """The label of column ``index`` (0-based) of feature ``name`` of ``size`` values.

    ``type_``: the feature's Moses type when known (else guessed from a
    default name such as ``LexicalReordering0``). A single-valued feature is
    its name; a column without a known meaning is ``name[index]``.
    """
    if size == 1:
        return name
    if type_ is None:
        type_ = _TYPE_OF_DEFAULT_NAME.get(name.rstrip("0123456789"))
    meanings = COLUMN_MEANINGS.get(type_ or "")
    if meanings is not None and size == len(meanings):
        return f"{name} {meanings[index]}"
    return f"{name}[{index}]"


def column_labels(names: Sequence[str], sizes: Sequence[int], types: Sequence[str] | None = None) -> list[str]:
    """Labels of every column of a dense vector laid out as ``names`` x ``sizes`` (a ``FeatureLayout``)."""
    types = types if types is not None else [None] * len(names)
    return [column_label(n, k, size, t) for n, size, t in zip(names, sizes, types) for k in range(size)]


def readable(column_name: str, size: int | None = None) -> str:
    """A log's column name (``LexicalReordering0[3]``) as a label (``LexicalReordering0 mono (f)``).

    ``size``: the feature's number of values, when known; by default a
    known type's full size is assumed.
    """
    match = _INDEXED.match(column_name)
    if match is None:
        return column_name
    name, index = match["name"], int(match["index"])
    type_ = _TYPE_OF_DEFAULT_NAME.get(name.rstrip("0123456789"))
    meanings = COLUMN_MEANINGS.get(type_ or "")
    if meanings is None or index >= len(meanings):
        return column_name
    return column_label(name, index, size or len(meanings), type_)

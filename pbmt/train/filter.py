"""Filtering a trained table to a test set, and pruning it per source phrase.

``filter_to_sentences`` keeps what Moses's ``filter-model-given-input.pl``
keeps for a phrase-based model: every pair whose source phrase occurs as a
contiguous word sequence of some input sentence. ``prune`` keeps the
``limit`` pairs of each source phrase with the highest φ(e|f).
Both keep the table's row order, and counts and scores as they were.
``filter_model`` does the same filtering to the table files of a moses.ini.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import IO, Iterable, Sequence

import numpy as np

from pbmt.base.config import MosesConfig, relative_path
from pbmt.base.errors import PbmtError
from pbmt.base.files import Outputs, atomic_write, lock_folder, read_lines
from pbmt.base.pbmt_toml import read_tables, write_tables
from pbmt.base.run_state import model_files
from pbmt.model.model import Preprocessing, SearchSettings
from pbmt.model.sparse import sparse_files
from pbmt.train.score import ScoredTable

#: Feature types whose table files ``filter_model`` filters.
FILTERED_TYPES = ("PhraseDictionaryMemory", "LexicalReordering")


def source_ngrams(sentences: Iterable[Sequence[str]], max_length: int) -> set[str]:
    """Every contiguous sequence of 1 to ``max_length`` words of the tokenised
    ``sentences``, as space-joined strings."""
    found: set[str] = set()
    for words in sentences:
        for i in range(len(words)):
            for j in range(i + 1, min(len(words), i + max_length) + 1):
                found.add(" ".join(words[i:j]))
    return found


def filter_to_sentences(table: ScoredTable, sentences: Iterable[Sequence[str]]) -> ScoredTable:
    """The pairs of ``table`` whose source phrase occurs in one of the tokenised ``sentences``."""
    pairs = table.pairs
    used, local = np.unique(pairs.src_index, return_inverse=True)
    max_length = int(pairs.src.length[used].max()) if len(used) else 0
    wanted = source_ngrams(sentences, max_length)
    keep = np.fromiter((text in wanted for text in pairs.src.take(used).strings()), dtype=bool, count=len(used))
    return table.take(np.flatnonzero(keep[local]))


def prune_rows(src_index: np.ndarray, p_tgt_given_src: np.ndarray, limit: int) -> np.ndarray:
    """The rows (sorted int64) that keep at most ``limit`` pairs per source
    phrase (``src_index``, int[n]): those with the highest φ(e|f)
    (``p_tgt_given_src``, float[n]), ties going to the earlier row."""
    if limit < 1:
        raise PbmtError(f"prune: limit must be at least 1, not {limit}")
    rows = np.arange(len(src_index))
    order = np.lexsort((rows, -p_tgt_given_src, src_index))
    sorted_src = src_index[order]
    starts_group = np.ones(len(order), dtype=bool)
    starts_group[1:] = sorted_src[1:] != sorted_src[:-1]
    first = np.flatnonzero(starts_group)
    rank = rows - np.repeat(first, np.diff(np.append(first, len(order))))
    return np.sort(order[rank < limit])


def prune(table: ScoredTable, limit: int) -> ScoredTable:
    """At most ``limit`` pairs per source phrase: those with the highest φ(e|f),
    ties going to the earlier row."""
    return table.take(prune_rows(table.pairs.src_index, table.features[:, 2], limit))


def filter_table_file(path: str | os.PathLike, handle: IO[str], wanted: set[str]) -> tuple[int, int]:
    """Copy the lines of a Moses phrase or reordering table (``src ||| ...``,
    plain or gzip) whose source phrase is in ``wanted`` (space-joined words)
    to ``handle``, in file order. Returns (lines kept, lines read)."""
    kept = total = 0
    for _, line in read_lines(path):
        total += 1
        if " ".join(line.split("|||", 1)[0].split()) in wanted:
            handle.write(line + "\n")
            kept += 1
    return kept, total


def filter_model(
    ini: str | os.PathLike, sentences: Iterable[Sequence[str]], out: str | os.PathLike, input_name: str = "the input"
) -> list[tuple[str, int, int]]:
    """Write to the folder ``out`` the model of ``ini`` filtered to the
    tokenised ``sentences``: its phrase and reordering tables keep the pairs
    whose source phrase occurs in a sentence (up to the ini's
    ``[max-phrase-length]``, the decoder's limit), under their own names; the
    new ``moses.ini`` points to them by relative paths and to every other file
    (the LM, the ``[weight-file]``) by its absolute path. ``pbmt.toml`` is copied when present, with
    the sparse features' files it names. ``sentences`` sharing no phrase with
    the phrase table are a PbmtError naming ``input_name``.
    Returns (feature name, lines kept, lines read) per filtered table.
    """
    ini, out = Path(ini), Path(out)
    config = MosesConfig.read(ini)
    if out.resolve() == ini.parent.resolve():
        raise PbmtError(f"{out}: the filtered model must go to another folder than the model's own")
    lock_folder(out)
    wanted = source_ngrams(sentences, SearchSettings.from_config(config).max_phrase_length)
    features, counts = [], []
    # every table or none: a refused input leaves no table behind; none replaces a file of the model (--out the
    # folder of its tables when its moses.ini is elsewhere)
    with Outputs(model_files(config)) as tables:
        for feature in config.features:
            if "path" in feature.args:
                source = config.resolve(feature.args["path"])
                if feature.type in FILTERED_TYPES:
                    counts.append((feature.name, *filter_table_file(source, tables.open(out / source.name), wanted)))
                    if feature.type == "PhraseDictionaryMemory" and counts[-1][1] == 0:
                        raise PbmtError(f"{input_name}: no phrase of it is in {source}: the filtered model would "
                                        "have an empty phrase table, which does not load (is the input in the "
                                        "model's language and token form?)")
                    path = source.name
                else:
                    path = str(source.resolve())
                feature = replace(feature, args={**feature.args, "path": path})
            features.append(feature)
    filtered = replace(config, features=tuple(features))
    if config.weight_file is not None:  # the sparse weights, where they are
        filtered = filtered.with_weight_file(config.weight_file.resolve())
    filtered.write(out / "moses.ini")
    preprocessing = ini.parent / "pbmt.toml"
    if preprocessing.exists():
        with atomic_write(out / "pbmt.toml") as handle:
            handle.write(preprocessing.read_text(encoding="utf-8"))
        for name in sparse_files(ini.parent):  # the class and weights files its [sparse] table names
            with atomic_write(out / name) as handle:
                handle.write((ini.parent / name).read_text(encoding="utf-8"))
        Preprocessing.read(ini.parent).table(out)  # copies the truecaser files its [preprocess] table names
        if config.feature_modules:  # named where they are, from the filtered folder
            tables = read_tables(ini.parent)
            tables["features"]["modules"] = [relative_path(str(p), str(out.resolve())) for p in config.feature_modules]
            write_tables(out, tables)
    return counts

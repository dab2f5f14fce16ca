"""Phrase scoring, word translation tables and lexicalized reordering, as Moses.

From the counts of ``pbmt.train.extract`` this computes what Moses's
``train-model.perl`` steps 4-7 write (``score``, ``consolidate``,
``lexical-reordering-score``), with the same numbers:

* Word translation tables (``lex.e2f``, ``lex.f2e``): from the aligned corpus,
  count(f, e) over alignment points, unaligned words counted against NULL;
  p(e|f) = count(f, e) / count(f), p(f|e) = count(f, e) / count(e). Moses
  prints them with 7 decimals and computes the lexical weights from the
  printed values, so they are rounded to 7 decimals here too.
* Phrase table features: φ(f|e) = count(f,e)/count(e), lex(f|e),
  φ(e|f) = count(f,e)/count(f), lex(e|f) (Koehn et al. 2003), with the
  alignment chosen by ``extract``; line
  ``src ||| tgt ||| φ(f|e) lex(f|e) φ(e|f) lex(e|f) ||| alignment ||| count(e) count(f) count(f,e) ||| |||``.
* Reordering (msd-bidirectional-fe): p(o | f, e) = (count(o) + σ) /
  (count + 3σ) for each of monotone, swap, discontinuous, towards the
  previous and the next phrase; σ = 0.5 is Moses's default constant smoothing.

Probabilities are written with six significant digits through 32-bit floats,
as Moses's ``score`` and ``consolidate`` print them, and lines come in Moses's
order (``PhrasePairs`` keeps it): on the shared Bible corpus every line equals
Moses's byte for byte.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import IO, Iterable, Iterator

import numpy as np

from pbmt.base.files import atomic_write
from pbmt.base.hashtable import build_table
from pbmt.train._extract_kernels import MASK_STRIDE
from pbmt.train._score_kernels import lexical_weights
from pbmt.train.corpus import Alignment, Corpus
from pbmt.train.extract import PhrasePairs

NULL = -1  # word id of NULL in WordTranslation
NULL_WORD = "NULL"
LEX_DECIMALS = 7  # Moses's lex files: printf "%.7f"
REORDERING_SMOOTHING = 0.5


@dataclass(frozen=True)
class WordTranslation:
    """Word translation probabilities of an aligned corpus, NULL included.

    Entry ``k`` pairs source word ``src[k]`` with target word ``tgt[k]``
    (int32 ids in the corpora's vocabularies, ``NULL`` = -1 on either side):
    ``p_tgt_given_src[k]`` = p(e|f) (Moses's lex.f2e) and
    ``p_src_given_tgt[k]`` = p(f|e) (lex.e2f), float64 rounded to 7 decimals.
    """

    src_corpus: Corpus
    tgt_corpus: Corpus
    src: np.ndarray
    tgt: np.ndarray
    p_tgt_given_src: np.ndarray
    p_src_given_tgt: np.ndarray

    def __len__(self) -> int:
        return len(self.src)


def word_pair_counts(src: Corpus, tgt: Corpus, alignment: Alignment, n_tgt: int) -> tuple[np.ndarray, np.ndarray]:
    """Counts of the linked word pairs of an aligned corpus, unaligned words
    linked to NULL: (keys int64[k], counts int64[k]), keys sorted, key
    ``(f + 1) * (n_tgt + 1) + e + 1`` for source id ``f`` and target id ``e``
    (-1 for NULL), ``n_tgt`` the size of the target vocabulary. Counts of
    parts of a corpus add up to the whole's."""
    alignment.check(src.lengths, tgt.lengths, "word translation")
    sent = np.repeat(np.arange(len(alignment)), np.diff(alignment.offsets))
    src_pos = src.offsets[sent] + alignment.src
    tgt_pos = tgt.offsets[sent] + alignment.tgt
    src_aligned = np.zeros(len(src.ids), dtype=bool)
    tgt_aligned = np.zeros(len(tgt.ids), dtype=bool)
    src_aligned[src_pos] = True
    tgt_aligned[tgt_pos] = True
    # ids shifted by one: 0 is NULL
    f = np.concatenate([src.ids[src_pos], src.ids[~src_aligned], np.full((~tgt_aligned).sum(), NULL)]) + 1
    e = np.concatenate([tgt.ids[tgt_pos], np.full((~src_aligned).sum(), NULL), tgt.ids[~tgt_aligned]]) + 1
    return np.unique(f.astype(np.int64) * (n_tgt + 1) + e, return_counts=True)


def word_translation_from_counts(src: Corpus, tgt: Corpus, keys: np.ndarray, count: np.ndarray) -> WordTranslation:
    """The word translation tables from ``word_pair_counts`` (keys sorted and
    distinct); ``src`` and ``tgt`` give the vocabularies."""
    n_e = len(tgt.vocab) + 1
    f, e = keys // n_e, keys % n_e
    total_f = np.bincount(f, weights=count)
    total_e = np.bincount(e, weights=count)
    return WordTranslation(
        src_corpus=src,
        tgt_corpus=tgt,
        src=(f - 1).astype(np.int32),
        tgt=(e - 1).astype(np.int32),
        p_tgt_given_src=_printed(count / total_f[f]),
        p_src_given_tgt=_printed(count / total_e[e]),
    )


def word_translation(src: Corpus, tgt: Corpus, alignment: Alignment) -> WordTranslation:
    """The word translation tables of ``train-model.perl`` (its ``get_lexical``)."""
    return word_translation_from_counts(src, tgt, *word_pair_counts(src, tgt, alignment, len(tgt.vocab)))


def _printed(p: np.ndarray) -> np.ndarray:
    """``p`` as Moses's lex files hold it: printf's correctly rounded ``%.7f``
    (np.round differs on halves such as 1/1280)."""
    return np.array([float(f"{x:.{LEX_DECIMALS}f}") for x in p.tolist()])


def _words(corpus: Corpus, ids: np.ndarray) -> list[str]:
    words = corpus.vocab.words(range(len(corpus.vocab))) + [NULL_WORD]  # index -1 is NULL
    return [words[i] for i in ids.tolist()]


@dataclass(frozen=True)
class ScoredTable:
    """Scored phrase pairs: ``pairs`` with, per pair, ``features`` (float64[n, 4]:
    φ(f|e), lex(f|e), φ(e|f), lex(e|f)) and ``reordering`` (float64[n, 6]:
    p(monotone), p(swap), p(discontinuous) towards the previous phrase, then the
    next). All probabilities, not logs."""

    pairs: PhrasePairs
    features: np.ndarray
    reordering: np.ndarray

    def __len__(self) -> int:
        return len(self.features)

    def take(self, rows: np.ndarray) -> "ScoredTable":
        """The pairs ``rows`` (int array) only; counts and scores are kept as they are."""
        return ScoredTable(self.pairs.take(rows), self.features[rows], self.reordering[rows])


def reordering_probabilities(orientation: np.ndarray, smoothing: float = REORDERING_SMOOTHING) -> np.ndarray:
    """msd-bidirectional-fe probabilities from orientation counts ``int[n, 6]`` -> float64[n, 6]."""
    smoothed = orientation + float(smoothing)
    out = np.empty(smoothed.shape, dtype=np.float64)
    for half in (slice(0, 3), slice(3, 6)):
        out[:, half] = smoothed[:, half] / smoothed[:, half].sum(axis=1, keepdims=True)
    return out


def score_phrase_pairs(
    pairs: PhrasePairs, lexicon: WordTranslation, reordering_smoothing: float = REORDERING_SMOOTHING
) -> ScoredTable:
    """The four translation features and the reordering probabilities of every pair.

    ``lexicon`` must come from the same corpora as ``pairs``.
    """
    src_ids = pairs.src.corpus.ids + np.int32(1)
    tgt_ids = pairs.tgt.corpus.ids + np.int32(1)
    n_tgt = len(pairs.tgt.corpus.vocab) + 1
    keys, values = build_table((lexicon.src + 1).astype(np.int64), (lexicon.tgt + 1).astype(np.int32), n_tgt)
    lex = lexical_weights(
        src_ids,
        pairs.src.start[pairs.src_index],
        pairs.src.length[pairs.src_index],
        tgt_ids,
        pairs.tgt.start[pairs.tgt_index],
        pairs.tgt.length[pairs.tgt_index],
        pairs.align_direct,
        pairs.align_inverse,
        keys,
        values,
        n_tgt,
        lexicon.p_tgt_given_src,
        lexicon.p_src_given_tgt,
    )
    features = np.empty((len(pairs), 4), dtype=np.float64)
    features[:, 0] = pairs.count / pairs.tgt.count[pairs.tgt_index]
    features[:, 1] = lex[:, 0]
    features[:, 2] = pairs.count / pairs.src.count[pairs.src_index]
    features[:, 3] = lex[:, 1]
    return ScoredTable(pairs, features, reordering_probabilities(pairs.orientation, reordering_smoothing))


def write_lines(handle: IO[bytes], lines: Iterable[str]) -> None:
    """Write text lines (each ending in a newline) to a binary handle as UTF-8, in batches."""
    batch: list[str] = []
    for line in lines:
        batch.append(line)
        if len(batch) == 65536:
            handle.write("".join(batch).encode("utf-8"))
            batch.clear()
    handle.write("".join(batch).encode("utf-8"))


def _write_lines(path: str | os.PathLike, lines: Iterable[str]) -> None:
    """Write text lines atomically, gzip if ``path`` ends in .gz."""
    with atomic_write(path, "wb") as out:
        write_lines(out, lines)


def write_word_translation(e2f_path: str | os.PathLike, f2e_path: str | os.PathLike, lexicon: WordTranslation) -> None:
    """Write Moses's ``lex.e2f`` (``f e p(f|e)``) and ``lex.f2e`` (``e f p(e|f)``), sorted by f then e."""
    f_words = _words(lexicon.src_corpus, lexicon.src)
    e_words = _words(lexicon.tgt_corpus, lexicon.tgt)
    order = sorted(range(len(lexicon)), key=lambda k: (f_words[k], e_words[k]))
    p_fe = lexicon.p_src_given_tgt.tolist()
    p_ef = lexicon.p_tgt_given_src.tolist()
    _write_lines(e2f_path, (f"{f_words[k]} {e_words[k]} {p_fe[k]:.{LEX_DECIMALS}f}\n" for k in order))
    _write_lines(f2e_path, (f"{e_words[k]} {f_words[k]} {p_ef[k]:.{LEX_DECIMALS}f}\n" for k in order))


def alignment_string(mask: int) -> str:
    """A phrase pair's alignment mask as Moses prints it: ``f-e`` points by e, then f."""
    return " ".join(
        f"{bit % MASK_STRIDE}-{bit // MASK_STRIDE}" for bit in range(MASK_STRIDE * MASK_STRIDE) if mask >> bit & 1
    )


def _pair_strings(table: ScoredTable) -> tuple[list[str], list[str]]:
    """Source and target phrase text of every row."""
    pairs = table.pairs
    out = []
    for phrases, index in ((pairs.src, pairs.src_index), (pairs.tgt, pairs.tgt_index)):
        used, local = np.unique(index, return_inverse=True)
        text = phrases.take(used).strings()
        out.append([text[i] for i in local.tolist()])
    return out[0], out[1]


def _formatted(values: np.ndarray, spec: str) -> list[str]:
    """``format(v, spec)`` of every value, formatting each distinct value once."""
    distinct, index = np.unique(values, return_inverse=True)
    text = [format(v, spec) for v in distinct.tolist()]
    return [text[i] for i in index.tolist()]


def phrase_table_lines(
    src: list[str], tgt: list[str], features: np.ndarray, align_direct: np.ndarray,
    count_e: np.ndarray, count_f: np.ndarray, count: np.ndarray,
) -> Iterator[str]:
    """Moses phrase table lines of pairs given by their phrase texts, features
    (float64[n, 4], probabilities), printed alignment masks (uint64[n]) and
    counts count(e), count(f), count(f, e) (int[n] each)."""
    masks, mask_index = np.unique(align_direct, return_inverse=True)
    align = [alignment_string(m) for m in masks.tolist()]
    # Moses prints these from 32-bit floats
    columns = [_formatted(col.astype(np.float32), ".6g") for col in features.T]
    columns.append([align[i] for i in mask_index.tolist()])
    columns.extend(_formatted(col, "d") for col in (count_e, count_f, count))
    line = "%s ||| %s ||| %s %s %s %s ||| %s ||| %s %s %s ||| |||\n"
    return (line % row for row in zip(src, tgt, *columns))


def reordering_table_lines(src: list[str], tgt: list[str], reordering: np.ndarray) -> Iterator[str]:
    """msd-bidirectional-fe reordering table lines of pairs given by their
    phrase texts and probabilities (float64[n, 6])."""
    columns = [_formatted(col, ".6g") for col in reordering.T]
    line = "%s ||| %s ||| %s %s %s %s %s %s\n"
    return (line % row for row in zip(src, tgt, *columns))


def write_phrase_table(path: str | os.PathLike, table: ScoredTable) -> None:
    """Write ``table`` as a Moses phrase table (gzip if ``path`` ends in .gz), atomically.

    Rows are written in their order, which is Moses's unless ``take`` reordered them.
    """
    src, tgt = _pair_strings(table)
    pairs = table.pairs
    counts = (pairs.tgt.count[pairs.tgt_index], pairs.src.count[pairs.src_index], pairs.count)
    _write_lines(path, phrase_table_lines(src, tgt, table.features, pairs.align_direct, *counts))


def write_reordering_table(path: str | os.PathLike, table: ScoredTable) -> None:
    """Write the msd-bidirectional-fe reordering table, one line per phrase pair, in row order."""
    _write_lines(path, reordering_table_lines(*_pair_strings(table), table.reordering))

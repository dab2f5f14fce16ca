"""Binary block features (Tillmann & Zhang, Section II): the ``block`` family of sparse features.

A block b = (S, T) is a source phrase and its target phrase; in a block
sequence each block also has an orientation relative to its predecessor
(R, L or N, as ``pbmt.search.derivation.Orientation`` computes it). Five kinds of binary
features fire on a block (a sequence's feature vector F(z) sums them, so a
feature may count more than once):

==========  =========================================  ===============================
kind        fires for                                  name
==========  =========================================  ===============================
block       the block's identity (the paper's f1)      ``blk:S|T``
word        each source word s and target word t       ``w:s|t``
            inside the block (Model-1-like, f2)
length      target phrase and source length (f3)       ``len:T|<number of source words>``
orient      orientation x block                        ``ori:R:S|T`` (or ``L``, ``N``)
bigram      the target words either side of a block    ``bi:t|t'`` (``<s>``, ``</s>`` at
            boundary                                    the sentence ends)
==========  =========================================  ===============================

A phrase is its words joined by ``_``. Names hold no whitespace, so they sit
in the one ``name value`` weights file of ``pbmt.model.sparse``
(``sparse-weights.txt``): in a word, ``%``, ``_``, ``|``, ``:``, ``#`` and
whitespace are written as ``%XX`` (UTF-8 bytes), which makes every name
unambiguous (``escape_word``). Names are built from the words themselves,
so they mean the same in every model and vocabulary.

The first three kinds are option-local: ``BlockScores`` computes their
weighted sum once per phrase-table candidate when the weights are set (in
numba, from the names compiled to id-keyed tables, ``_block_kernels``), and
the searches add it to each option's ``local_score``. Orientation and
boundary bigrams look at the predecessor: ``BlockScores`` also holds each
candidate's three orientation weights and scores bigrams of word ids, which
the searches read as transition scores. ``FeatureIndex`` numbers names as
they are first seen, so a feature vector is a pair of arrays (ids int64,
counts float64), never a dense vector.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence
from urllib.parse import unquote

import numpy as np

from pbmt.model._block_kernels import BlockTables, bigram_scores, pair_scores
from pbmt.base.hashtable import build_table
from pbmt.base.vocab import BOS, EOS, Vocab

KINDS = ("block", "word", "length", "orient", "bigram")
ORIENT_LETTERS = "RLN"  # msd order of the decoder's transition scores: monotone = R, swap = L, discontinuous = N
BOS_WORD, EOS_WORD = "<s>", "</s>"
PREFIXES = {"blk:": 2, "w:": 2, "len:": 2, "ori:": 2, "bi:": 2}  # name prefix -> fields separated by "|"
_ESCAPED = set("%_|:#")
_ESCAPING = re.compile(r"[%_|:#\s]")  # \s is str.isspace's whitespace


@dataclass(frozen=True)
class Block:
    """One block of a sequence: its source span [src_start, src_end) and the words of both phrases."""

    src_start: int
    src_end: int
    source: tuple[str, ...]
    target: tuple[str, ...]


def escape_word(word: str) -> str:
    """``word`` with ``%``, ``_``, ``|``, ``:``, ``#`` and whitespace as ``%XX`` (UTF-8 bytes); ``unquote`` inverts it."""
    if _ESCAPING.search(word) is None:  # most words: as they are, without a look at each character in Python
        return word
    return "".join("".join(f"%{b:02X}" for b in c.encode("utf-8")) if c in _ESCAPED or c.isspace() else c
                   for c in word)


def _phrase(words: Sequence[str]) -> str:
    return "_".join(escape_word(w) for w in words)


def _key(source: Sequence[str], target: Sequence[str]) -> str:
    return _phrase(source) + "|" + _phrase(target)


def local_names(source: Sequence[str], target: Sequence[str]) -> list[str]:
    """Names of a block's option-local features: block identity, word pairs, phrase length."""
    names = ["blk:" + _key(source, target), f"len:{_phrase(target)}|{len(source)}"]
    names += [f"w:{escape_word(s)}|{escape_word(t)}" for s in dict.fromkeys(source) for t in dict.fromkeys(target)]
    return names


def orient_name(letter: str, source: Sequence[str], target: Sequence[str]) -> str:
    """Name of the orientation x block feature (letter: R, L or N)."""
    return f"ori:{letter}:" + _key(source, target)


def bigram_name(left: str, right: str) -> str:
    """Name of the boundary bigram feature: the last target word of a block (or <s>), the first of the next (or </s>)."""
    return f"bi:{escape_word(left)}|{escape_word(right)}"


def is_block_name(name: str) -> bool:
    """Whether ``name`` is well-formed as a block-family feature name (a kind prefix, its ``|`` fields)."""
    for prefix, fields in PREFIXES.items():
        if name.startswith(prefix):
            parts = name[len(prefix):].split("|")
            if prefix == "ori:" and not (len(parts[0]) > 2 and parts[0][0] in ORIENT_LETTERS and parts[0][1] == ":"):
                return False
            return len(parts) == fields and all(parts) and (prefix != "len:" or parts[1].isdigit())
    return False


def orientation_letter(prev_start: int, prev_end: int, start: int, end: int) -> str:
    """R, L or N of block [start, end) after [prev_start, prev_end) (the sentence start is [0, 0))."""
    if start == prev_end:
        return "R"
    if end == prev_start:
        return "L"
    return "N"


def sequence_names(blocks: Sequence[Block]) -> Counter:
    """Every feature name firing on a block sequence (target order; target phrases are never empty), with its
    count: F(z) by name."""
    names: Counter = Counter()
    prev_start, prev_end, prev_word = 0, 0, BOS_WORD
    for block in blocks:
        names.update(local_names(block.source, block.target))
        names[orient_name(orientation_letter(prev_start, prev_end, block.src_start, block.src_end),
                          block.source, block.target)] += 1
        names[bigram_name(prev_word, block.target[0])] += 1
        prev_start, prev_end, prev_word = block.src_start, block.src_end, block.target[-1]
    names[bigram_name(prev_word, EOS_WORD)] += 1
    return names


class FeatureIndex:
    """Names of binary features to ids 0, 1, ... in the order first seen."""

    def __init__(self, names: Iterable[str] = ()):
        self.names: list[str] = []
        self._ids: dict[str, int] = {}
        for name in names:
            self.add(name)

    def __len__(self) -> int:
        return len(self.names)

    def add(self, name: str) -> int:
        found = self._ids.get(name)
        if found is None:
            found = self._ids[name] = len(self.names)
            self.names.append(name)
        return found

    def vector(self, names: Counter, add: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(ids int64[k], counts float64[k]) of named counts, ids ascending; unknown names get ids
        (``add``) or are dropped."""
        pairs = [(self.add(n) if add else self._ids.get(n, -1), c) for n, c in names.items()]
        pairs = sorted(p for p in pairs if p[0] >= 0)
        return np.array([p[0] for p in pairs], np.int64), np.array([p[1] for p in pairs], np.float64)


class BlockWeights:
    """Weights of named block features (the ``block`` family).

    names, values: the features (float64[k]); zero weights are dropped. ``weight``: name -> weight.
    """

    def __init__(self, names: Sequence[str], values: np.ndarray):
        values = np.asarray(values, dtype=np.float64)
        if len(names) != len(values):
            raise ValueError(f"{len(names)} names but {len(values)} weights")
        self.weight = {n: float(v) for n, v in zip(names, values) if v != 0.0}

    def __len__(self) -> int:
        return len(self.weight)

    def score(self, blocks: Sequence[Block]) -> float:
        """The weighted block features of a block sequence, from scratch (natural log): the reference the
        searches' scores (``BlockScores``) are tested against."""
        return sum(self.weight.get(name, 0.0) * count for name, count in sequence_names(blocks).items())

    def tables(self, vocab: Vocab) -> BlockTables:
        """The weights as id-keyed tables (``_block_kernels``). The names' words join ``vocab``, so a word
        first seen in the input later (an unknown word passed through) gets the id the tables know."""
        trie: dict[tuple[int, ...], int] = {(): 0}
        parents, last_words = [-1], [0]

        def node(phrase: str) -> int:
            ids = tuple(vocab.add(unquote(w)) for w in phrase.split("_"))
            for k in range(1, len(ids) + 1):
                if ids[:k] not in trie:
                    trie[ids[:k]] = len(parents)
                    parents.append(trie[ids[:k - 1]])
                    last_words.append(ids[k - 1])
            return trie[ids]

        blocks: dict[tuple[int, int], int] = {}
        block_weight: list[float] = []
        orient: list[list[float]] = []
        kinds: dict[str, tuple[list, list, list]] = {k: ([], [], []) for k in ("len", "w", "bi")}

        def block_row(key: str) -> int:
            source, target = key.split("|")
            pair = (node(source), node(target))
            if pair not in blocks:
                blocks[pair] = len(block_weight)
                block_weight.append(0.0)
                orient.append([0.0, 0.0, 0.0])
            return blocks[pair]

        for name, value in self.weight.items():
            kind, rest = name.split(":", 1)
            if kind == "blk":
                block_weight[block_row(rest)] += value
            elif kind == "ori":
                orient[block_row(rest[2:])][ORIENT_LETTERS.index(rest[0])] += value
            else:
                left, right = rest.split("|")
                a, b, w = kinds[kind]
                if kind == "len":
                    a.append(node(left))
                    b.append(int(right))
                else:
                    a.append(vocab.add(unquote(left)))
                    b.append(vocab.add(unquote(right)))
                w.append(value)

        def table(parent: list, word: list, n_words: int) -> tuple[np.ndarray, np.ndarray]:
            return build_table(np.array(parent, np.int64), np.array(word, np.int32), n_words)

        n_vocab, n_nodes = len(vocab), len(parents)
        max_length = max(kinds["len"][1], default=0) + 1
        pairs = list(blocks)
        return BlockTables(
            n_vocab, *table(parents, last_words, n_vocab), n_nodes,
            *table([p[0] for p in pairs], [p[1] for p in pairs], n_nodes), np.array(block_weight, np.float64),
            np.array(orient, np.float64).reshape(-1, 3), max_length,
            *table(*kinds["len"][:2], max_length), np.array(kinds["len"][2], np.float64),
            *table(*kinds["w"][:2], n_vocab), np.array(kinds["w"][2], np.float64),
            *table(*kinds["bi"][:2], n_vocab), np.array(kinds["bi"][2], np.float64))


@dataclass(frozen=True)
class BlockScores:
    """The block family under its weights, over the candidates of a phrase table.

    ``local``: ``float64[n_cand]``, each candidate's weighted option-local features (block identity, word
    pairs, length; natural log); ``orient``: ``float64[n_cand, 3]``, the weight of its orientation x block
    feature in msd order (R, L, N). Computed once when the weights are set, in numba; the searches take
    their options' rows and score target-word bigrams with ``bigrams``.
    """

    tables: BlockTables
    local: np.ndarray
    orient: np.ndarray

    @classmethod
    def of(cls, weights: BlockWeights, src_offsets: np.ndarray, src_words: np.ndarray, cand_offsets: np.ndarray,
           tgt_offsets: np.ndarray, tgt_words: np.ndarray, vocab: Vocab) -> "BlockScores":
        """Scores of a phrase table's candidates: source phrase ``p`` (CSR ``src_offsets``/``src_words``) has
        candidates ``cand_offsets[p] .. cand_offsets[p + 1] - 1``, whose targets are the CSR
        ``tgt_offsets``/``tgt_words`` (word ids of ``vocab``)."""
        tables = weights.tables(vocab)
        pair_source = np.repeat(np.arange(len(cand_offsets) - 1, dtype=np.int64), np.diff(cand_offsets))
        local, orient = _pair_scores(tables, pair_source, src_offsets, src_words, tgt_offsets, tgt_words)
        return cls(tables, local, orient)

    def options(self, candidate: np.ndarray, src_offsets: np.ndarray, src_words: np.ndarray,
                tgt_offsets: np.ndarray, tgt_words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(local ``float64[n_opt]``, orient ``float64[n_opt, 3]``) of a sentence's options: candidate
        ``candidate[o]``, or, where it is negative (an unknown word passed through, a translation the input's
        markup gives), the next pair of the CSR source phrases ``src_offsets``/``src_words`` and target
        phrases ``tgt_offsets``/``tgt_words``."""
        candidate = np.asarray(candidate, np.int64)
        other = candidate < 0
        local, orient = self.local[candidate], self.orient[candidate]
        if other.any():
            local[other], orient[other] = _pair_scores(self.tables, np.arange(int(other.sum()), dtype=np.int64),
                                                       src_offsets, src_words, tgt_offsets, tgt_words)
        return local, orient

    def bigrams(self, lasts: np.ndarray, firsts: np.ndarray) -> np.ndarray:
        """``float64[len(lasts) + 1, len(firsts) + 1]``: the weight of the boundary bigram (last target word of a
        block, first of the next), word ids; the last row is the sentence start, the last column its end."""
        out = np.zeros((len(lasts) + 1, len(firsts) + 1))
        bigram_scores(self.tables, np.asarray(lasts, np.int32), np.asarray(firsts, np.int32), BOS, EOS, out)
        return out


def _pair_scores(tables: BlockTables, pair_source, src_offsets, src_words, tgt_offsets, tgt_words):
    local, orient = np.zeros(len(pair_source)), np.zeros((len(pair_source), 3))
    pair_scores(tables, pair_source, np.asarray(src_offsets, np.int64), np.asarray(src_words, np.int32),
                np.asarray(tgt_offsets, np.int64), np.asarray(tgt_words, np.int32), local, orient)
    return local, orient

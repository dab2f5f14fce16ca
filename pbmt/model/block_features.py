"""Binary block features (Tillmann & Zhang, Section II): the ``block`` family of sparse features.

A block b = (S, T) is a source phrase and its target phrase; in a block
sequence each block also has an orientation relative to its predecessor
(R, L or N, ``pbmt.search.derivation.Orientation``). Five kinds of binary
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

The first three kinds are option-local: their weighted sum joins an
option's ``local_score`` (``BlockWeights.local_scores``, used by
``TranslationOptions.build``); orientation and boundary bigrams look at the
predecessor and reach the decoder as transition scores
(``BlockWeights.transition_arrays``). ``FeatureIndex`` numbers names as they
are first seen, so a feature vector is a pair of arrays (ids int64, counts
float64), never a dense vector.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence
from urllib.parse import unquote

import numpy as np

from pbmt.vocab import Vocab

if TYPE_CHECKING:
    from pbmt.search.derivation import Derivation
    from pbmt.search.options import TranslationOptions

KINDS = ("block", "word", "length", "orient", "bigram")
ORIENT_LETTERS = "RLN"  # msd order of the decoder's transition scores: monotone = R, swap = L, discontinuous = N
BOS_WORD, EOS_WORD = "<s>", "</s>"
PREFIXES = {"blk:": 2, "w:": 2, "len:": 2, "ori:": 2, "bi:": 2}  # name prefix -> fields separated by "|"
_ESCAPED = set("%_|:#")


@dataclass(frozen=True)
class Block:
    """One block of a sequence: its source span [src_start, src_end) and the words of both phrases."""

    src_start: int
    src_end: int
    source: tuple[str, ...]
    target: tuple[str, ...]


def escape_word(word: str) -> str:
    """``word`` with ``%``, ``_``, ``|``, ``:``, ``#`` and whitespace as ``%XX`` (UTF-8 bytes); ``unquote`` inverts it."""
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


def derivation_blocks(derivation: "Derivation", options: "TranslationOptions", vocab: Vocab) -> list[Block]:
    """The blocks of a derivation over ``options``, in target order."""
    words = vocab.words(options.sentence)
    return [Block(int(a), int(b), tuple(words[a:b]), tuple(vocab.words(options.target(o))))
            for a, b, o in zip(derivation.src_start, derivation.src_end, derivation.option)]


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
    """Weights of named block features (the ``block`` family), ready to score a sentence's options.

    names, values: the features (float64[k]); zero weights are dropped.
    """

    def __init__(self, names: Sequence[str], values: np.ndarray):
        values = np.asarray(values, dtype=np.float64)
        if len(names) != len(values):
            raise ValueError(f"{len(names)} names but {len(values)} weights")
        self.weight = {n: float(v) for n, v in zip(names, values) if v != 0.0}
        self.bigrams: dict[str, dict[str, float]] = defaultdict(dict)
        for name, value in self.weight.items():
            if name.startswith("bi:"):
                left, right = name[3:].split("|")
                self.bigrams[unquote(left)][unquote(right)] = value

    def __len__(self) -> int:
        return len(self.weight)

    def score(self, blocks: Sequence[Block]) -> float:
        """The weighted block features of a block sequence, from scratch (natural log)."""
        return sum(self.weight.get(name, 0.0) * count for name, count in sequence_names(blocks).items())

    def local_scores(self, options: "TranslationOptions", vocab: Vocab) -> np.ndarray:
        """Weighted option-local features (block, word pairs, length) of every option: float64[n_opt]."""
        source = vocab.words(options.sentence)
        weight = self.weight
        return np.array([sum(weight.get(name, 0.0) for name in local_names(
            source[options.start[o]:options.end[o]], vocab.words(options.target(o)))) for o in range(len(options))],
            dtype=np.float64)

    def transition_arrays(self, options: "TranslationOptions", vocab: Vocab
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The orientation and bigram weights of a sentence's options, as the decoder's transition scores:
        (orient float64[n_opt, 3] in R, L, N order, right_key int32[n_opt], left_key int32[n_opt],
        pair float64[n_right + 1, n_left + 1]); keys number the distinct last and first target words, the last
        row is the sentence start and the last column the end (``pbmt.search.decoder.TransitionScores``)."""
        n = len(options)
        source = vocab.words(options.sentence)
        orient = np.zeros((n, 3))
        firsts: dict[str, int] = {}
        lasts: dict[str, int] = {}
        left_key = np.zeros(n, np.int32)
        right_key = np.zeros(n, np.int32)
        for o in range(n):
            src = source[options.start[o]:options.end[o]]
            tgt = vocab.words(options.target(o))
            for k, letter in enumerate(ORIENT_LETTERS):
                orient[o, k] = self.weight.get(orient_name(letter, src, tgt), 0.0)
            left_key[o] = firsts.setdefault(tgt[0], len(firsts))
            right_key[o] = lasts.setdefault(tgt[-1], len(lasts))
        pair = np.zeros((len(lasts) + 1, len(firsts) + 1))
        for last, r in list(lasts.items()) + [(BOS_WORD, len(lasts))]:
            following = self.bigrams.get(last)
            if not following:
                continue
            for first, l in list(firsts.items()) + [(EOS_WORD, len(firsts))]:
                pair[r, l] = following.get(first, 0.0)
        return orient, right_key, left_key, pair

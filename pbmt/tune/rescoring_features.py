"""Rescoring features: computed on n-best entries only, so they can be expensive.

A decoder scores millions of partial hypotheses and can afford only local
features; an n-best list has a hundred complete ones per sentence, so a
rescorer can use a bigger LM, sentence-level statistics or features that
compare the hypotheses of a list with each other. They are added as new
columns next to the decoder's (``pbmt.tune.rescore``) and weighted by any
optimiser (ListNet, MERT, PRO, APRO).

The built-in kinds (``KINDS``):

- ``lm`` (argument: an ARPA file; column ``LM<k>``, the first free k):
  the hypothesis's log probability with ``<s>`` and ``</s>``, natural log
  (KenLM's log10 score times ln 10, like the decoder's ``LM0``).
- ``length-ratio`` (needs the source sentences; ``LengthRatio0``): target
  words over source words (over 1 for an empty source).
- ``consensus`` (``Consensus0``, 4 values): for n = 1..4, the mean over
  the hypothesis's distinct n-grams of their n-best posterior: the
  probability mass of the list's entries that contain the n-gram, the
  entries weighted by ``exp(total)`` of the decoder's model score (natural
  log), normalised over the list. In [0, 1]; 0 for a hypothesis shorter than n.

The decoder's ``WordPenalty0`` already is minus the word count and its
model score is a linear function of the other columns, so neither is
repeated here.

**Adding a feature** takes a function and a decorator. The function gets the
``NBestLists`` (hypotheses, their CSR word ids, decoder features and totals,
sources) and the feature's argument (a string, or None), and returns
float64[n_cand, size]::

    from pbmt.tune.rescoring_features import register

    @register("hyp-chars", prefix="HypChars", size=1)
    def hyp_chars(lists, argument):  # characters of each hypothesis
        return np.array([len(t) for t in lists.texts], dtype=np.float64)[:, None]

after which ``pbmt rescore --feature hyp-chars`` adds a column ``HypChars0``
(the module defining it must be imported: put it in this file, or in one
imported by it). docs/rescoring.md walks through a complete example.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

import numpy as np

from pbmt.errors import PbmtError
from pbmt.model.features import FeatureLayout
from pbmt.model.lm import NgramLM
from pbmt.tune.listnet import top_one
from pbmt.vocab import Vocab

CONSENSUS_ORDERS = 4


@dataclass(frozen=True, eq=False)
class NBestLists:
    """n-best lists grouped by sentence: what a rescoring feature sees.

    layout: the decoder's feature columns; features: float64[n_cand,
    layout.size], natural logs as in the n-best file; offsets:
    int64[n_sent+1], sentence ``s`` owns entries ``offsets[s]:offsets[s+1]``
    in file order (possibly none); texts: the n_cand hypotheses; totals:
    float64[n_cand], the decoder's model scores (natural log); sources: the
    n_sent source sentences (tokenised), or None when not given.
    """

    layout: FeatureLayout
    features: np.ndarray
    offsets: np.ndarray
    texts: tuple[str, ...]
    totals: np.ndarray
    sources: tuple[str, ...] | None = None
    vocab: Vocab = field(default_factory=Vocab, repr=False)

    @property
    def n_sentences(self) -> int:
        return len(self.offsets) - 1

    @property
    def n_candidates(self) -> int:
        return len(self.texts)

    @property
    def sentence(self) -> np.ndarray:
        """int64[n_cand]: the sentence of each entry."""
        return np.repeat(np.arange(self.n_sentences, dtype=np.int64), np.diff(self.offsets))

    @cached_property
    def words(self) -> tuple[np.ndarray, np.ndarray]:
        """The hypotheses as CSR word ids of ``vocab``: (offsets int64[n_cand+1], ids int32[n_words])."""
        tokens = [t.split() for t in self.texts]
        offsets = np.zeros(len(tokens) + 1, dtype=np.int64)
        np.cumsum([len(t) for t in tokens], out=offsets[1:])
        return offsets, self.vocab.ids(w for t in tokens for w in t)


Compute = Callable[[NBestLists, "str | None"], np.ndarray]


@dataclass(frozen=True)
class FeatureKind:
    """A registered kind of rescoring feature.

    kind: the name users ask for (``lm``); prefix: the stem of its column
    names (``LM`` -> ``LM1``); size: values per entry; compute(lists,
    argument) -> float64[n_cand, size]; needs_sources: it reads
    ``lists.sources``; takes_argument: it needs an argument (such as a file).
    """

    kind: str
    prefix: str
    size: int
    compute: Compute
    needs_sources: bool
    takes_argument: bool


# kind -> FeatureKind; filled by @register
KINDS: dict[str, FeatureKind] = {}


def register(kind: str, prefix: str, size: int = 1, needs_sources: bool = False,
             takes_argument: bool = False) -> Callable[[Compute], Compute]:
    """Decorator registering ``compute(lists, argument) -> float64[n_cand, size]`` as ``kind``."""
    def decorator(compute: Compute) -> Compute:
        KINDS[kind] = FeatureKind(kind, prefix, size, compute, needs_sources, takes_argument)
        return compute
    return decorator


@dataclass(frozen=True)
class FeatureSpec:
    """One rescoring feature: its kind, its column name and its argument (or None)."""

    kind: str
    name: str
    argument: str | None = None


def name_features(requests: list[tuple[str, str | None]], taken: tuple[str, ...]) -> list[FeatureSpec]:
    """Specs for ``requests`` ((kind, argument) pairs), each named ``prefix + k`` with the
    smallest k not in ``taken`` nor given to an earlier request. Raises PbmtError for an
    unknown kind or a missing or unexpected argument."""
    used = set(taken)
    specs = []
    for kind, argument in requests:
        if kind not in KINDS:
            raise PbmtError(f"unknown rescoring feature {kind!r}; known: {', '.join(sorted(KINDS))}")
        spec = KINDS[kind]
        if spec.takes_argument != (argument is not None):
            raise PbmtError(f"rescoring feature {kind} " + ("needs an argument" if spec.takes_argument
                                                            else "takes no argument"))
        k = 0
        while f"{spec.prefix}{k}" in used:
            k += 1
        used.add(f"{spec.prefix}{k}")
        specs.append(FeatureSpec(kind, f"{spec.prefix}{k}", argument))
    return specs


def compute_features(lists: NBestLists, specs: list[FeatureSpec]) -> tuple[FeatureLayout, np.ndarray]:
    """The columns of ``specs`` for every entry: (their layout, float64[n_cand, layout.size]).

    Raises PbmtError when a feature needs sources the lists do not have, or
    computes a value that is NaN or infinite.
    """
    blocks = []
    for spec in specs:
        kind = KINDS[spec.kind]
        if kind.needs_sources and lists.sources is None:
            raise PbmtError(f"rescoring feature {spec.name} ({spec.kind}) needs the source sentences (--src)")
        values = np.asarray(kind.compute(lists, spec.argument), dtype=np.float64).reshape(lists.n_candidates,
                                                                                          kind.size)
        if not np.all(np.isfinite(values)):
            raise PbmtError(f"rescoring feature {spec.name} ({spec.kind}) has values that are NaN or infinite")
        blocks.append(values)
    layout = FeatureLayout(tuple(s.name for s in specs), tuple(s.kind for s in specs),
                           tuple(KINDS[s.kind].size for s in specs))
    return layout, np.concatenate(blocks, axis=1) if blocks else np.zeros((lists.n_candidates, 0))


@register("lm", prefix="LM", takes_argument=True)
def lm_score(lists: NBestLists, argument: str | None) -> np.ndarray:
    """Natural-log probability of each hypothesis with <s> and </s> under the ARPA LM ``argument``."""
    offsets, words = lists.words
    lm = NgramLM.load(argument, lists.vocab)
    return math.log(10.0) * lm.score_sentences(offsets, words)


@register("length-ratio", prefix="LengthRatio", needs_sources=True)
def length_ratio(lists: NBestLists, argument: str | None) -> np.ndarray:
    """Target words over source words (source length at least 1)."""
    source_lengths = np.array([max(1, len(s.split())) for s in lists.sources], dtype=np.float64)
    return np.diff(lists.words[0]) / source_lengths[lists.sentence]


@register("consensus", prefix="Consensus", size=CONSENSUS_ORDERS)
def consensus(lists: NBestLists, argument: str | None) -> np.ndarray:
    """n-gram posteriors of orders 1..4 (module docstring), float64[n_cand, 4]."""
    word_offsets, words = lists.words
    lengths = np.diff(word_offsets)
    n_cand = lists.n_candidates
    values = np.zeros((n_cand, CONSENSUS_ORDERS))
    if not len(words):
        return values
    candidate = np.repeat(np.arange(n_cand), lengths)
    position = np.arange(len(words)) - word_offsets[candidate]
    list_of = lists.sentence[candidate]
    filled = np.append(lists.offsets[:-1][np.diff(lists.offsets) > 0], lists.offsets[-1])
    posterior = top_one(lists.totals, filled)
    keys = words.astype(np.int64)
    n_words = max(len(lists.vocab), 1)
    for n in range(1, CONSENSUS_ORDERS + 1):
        fits = position <= lengths[candidate] - n
        if n > 1:
            # the n-gram at i: the (n-1)-gram at i, extended by word i + n - 1, renumbered densely
            ends = np.minimum(np.arange(len(words)) + n - 1, len(words) - 1)
            keys = np.unique(np.where(fits, keys * n_words + words[ends], -1), return_inverse=True)[1]
        at = np.flatnonzero(fits)
        # each distinct n-gram of a candidate once
        _, first = np.unique(candidate[at] * (keys.max() + 1) + keys[at], return_index=True)
        owner, key = candidate[at][first], keys[at][first]
        groups, group = np.unique(list_of[at][first] * (keys.max() + 1) + key, return_inverse=True)
        mass = np.bincount(group, weights=posterior[owner], minlength=len(groups))
        counts = np.bincount(owner, minlength=n_cand)
        values[:, n - 1] = np.bincount(owner, weights=mass[group], minlength=n_cand) / np.maximum(counts, 1)
    return values

"""Rescoring features on n-best lists: the global features of ``pbmt.features``, computed for every entry.

A decoder scores millions of partial hypotheses and can afford only local
features; an n-best list has a hundred complete ones per sentence, so a
rescorer can use a bigger LM, sentence-level statistics or features that
compare the hypotheses of a list with each other. They are added as new
columns next to the decoder's (``pbmt.tune.rescore``) and weighted by any
optimiser (ListNet, MERT, PRO, APRO).

Any kind of the one global-feature registry (``pbmt.features.KINDS``) can
rescore: ``lm``, ``length-ratio``, ``repetition``, ``lexical-consistency``,
a researcher's own (docs/global-features.md), and ``consensus``, which only
rescoring can compute since it compares the entries of a list. A feature
with an ``nbest_values(lists)`` method computes every entry at once;
otherwise each entry becomes a ``Hypothesis`` (source words from
``sources``, word links from the list's alignment field when every entry has
one) and is scored alone: each sentence is its own document, since n-best
lists know no documents.

The decoder's ``WordPenalty0`` already is minus the word count and its model
score is a linear function of the other columns, so neither is repeated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Sequence

import numpy as np

from pbmt.base.errors import PbmtError
from pbmt.features import KINDS, FeatureSpec, Hypothesis, build
from pbmt.model.features import FeatureLayout
from pbmt.base.vocab import Vocab


@dataclass(frozen=True, eq=False)
class NBestLists:
    """n-best lists grouped by sentence: what a rescoring feature sees.

    layout: the decoder's feature columns; features: float64[n_cand,
    layout.size], natural logs as in the n-best file; offsets:
    int64[n_sent+1], sentence ``s`` owns entries ``offsets[s]:offsets[s+1]``
    in file order (possibly none); texts: the n_cand hypotheses; totals:
    float64[n_cand], the decoder's model scores (natural log); sources: the
    n_sent source sentences (tokenised), or None when not given; alignments:
    each entry's (source, target) word links ``int32[a, 2]``, or None when
    some entry has none.
    """

    layout: FeatureLayout
    features: np.ndarray
    offsets: np.ndarray
    texts: tuple[str, ...]
    totals: np.ndarray
    sources: tuple[str, ...] | None = None
    vocab: Vocab = field(default_factory=Vocab, repr=False)
    alignments: tuple[np.ndarray, ...] | None = field(default=None, repr=False)

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

    def hypotheses(self) -> list[Hypothesis]:
        """Every entry as a ``Hypothesis`` (word links when the list has them). Without ``sources`` each has an
        empty source: only kinds that declare ``needs_sources`` read it, and ``compute_features`` refuses those."""
        sources = ([self.vocab.ids(s.split()) for s in self.sources] if self.sources is not None
                   else [self.vocab.ids(())] * self.n_sentences)
        offsets, words = self.words
        return [Hypothesis(sources[s], words[offsets[i]:offsets[i + 1]],
                           None if self.alignments is None else self.alignments[i])
                for i, s in enumerate(self.sentence)]


def compute_features(lists: NBestLists, specs: Sequence[FeatureSpec]) -> tuple[FeatureLayout, np.ndarray]:
    """The columns of ``specs`` for every entry: (their layout, float64[n_cand, layout.size]).

    Raises PbmtError when a feature needs sources or word alignments the lists
    do not have, or computes a value that is NaN or infinite.
    """
    blocks, hypotheses = [], None
    features = build(specs, lists.vocab)
    for spec, feature in zip(specs, features):
        if KINDS[spec.kind].needs_sources and lists.sources is None:
            raise PbmtError(f"rescoring feature {spec.name} ({spec.kind}) needs the source sentences (--src)")
        if hasattr(feature, "nbest_values"):
            values = feature.nbest_values(lists)
        else:
            if hypotheses is None:
                hypotheses = lists.hypotheses()
            try:
                values = [feature.values([h]) for h in hypotheses]
            except ValueError as err:
                needs = (" (the n-best list needs pbmt's word alignment field)"
                         if lists.alignments is None and "alignment" in str(err) else "")
                raise PbmtError(f"rescoring feature {spec.name} ({spec.kind}): {err}{needs}") from None
        values = np.asarray(values, dtype=np.float64).reshape(lists.n_candidates, feature.size)
        if not np.all(np.isfinite(values)):
            raise PbmtError(f"rescoring feature {spec.name} ({spec.kind}) has values that are NaN or infinite")
        blocks.append(values)
    layout = FeatureLayout(tuple(s.name for s in specs), tuple(s.kind for s in specs),
                           tuple(f.size for f in features))
    return layout, np.concatenate(blocks, axis=1) if blocks else np.zeros((lists.n_candidates, 0))

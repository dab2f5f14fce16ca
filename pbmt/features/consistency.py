"""Document-level lexical consistency: one translation per discourse (a penalty for changing a word's translation)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from pbmt.base.errors import PbmtError
from pbmt.features.base import Candidates, GlobalFeature, Hypothesis
from pbmt.features.registry import register
from pbmt.search.output import option_links
from pbmt.base.vocab import Vocab

DEFAULT_MIN_CHARS = 4


@register("lexical-consistency", prefix="LexicalConsistency", takes_argument=None, needs_sources=True)
class LexicalConsistency(GlobalFeature):
    """Minus the source words of a document not translated as their word's most frequent translation.

    The *translation* of a source token is the sequence of target words
    linked to it by the word alignment (the phrase pairs' internal
    alignments), in target order; ``()`` when it has none. Only *counted*
    source words take part: at least ``min_chars`` characters long (the
    argument; default 4, a cheap proxy for content words; 1 counts every
    word) and containing a letter. For a counted word type w, let n(w) be its
    tokens in the document and n(w, t) those translated as t; the value is

        -Σ_w ( n(w) - max_t n(w, t) )

    a count ≤ 0, 0 when every word keeps one translation throughout. (The
    same word in two sentences translated "lord" and "god" costs 1; three
    tokens translated "lord", "lord", "god" also cost 1.) One column.
    """

    def __init__(self, argument: str | None, vocab: Vocab):
        try:
            self.min_chars = DEFAULT_MIN_CHARS if argument is None else int(argument)
        except ValueError:
            raise PbmtError(f"lexical-consistency: the argument is a minimum word length in characters, "
                            f"got {argument!r}") from None
        self.vocab = vocab
        self._counted: dict[int, bool] = {}

    def counted(self, word: int) -> bool:
        """Whether source word id ``word`` takes part (its length and a letter). A word the model does not know
        (an id of a sentence's ``pbmt.base.vocab.Overlay``) does not: it passes through unchanged, so it is always
        translated consistently."""
        if word >= len(self.vocab):
            return False
        found = self._counted.get(word)
        if found is None:
            text = self.vocab.word(int(word))
            found = self._counted[word] = len(text) >= self.min_chars and any(ch.isalpha() for ch in text)
        return found

    def tokens(self, hypothesis: Hypothesis) -> list[tuple[int, tuple[int, ...]]]:
        """(source word id, its translation) of every counted source token."""
        return [(int(w), t) for w, t in zip(hypothesis.source, hypothesis.translations()) if self.counted(int(w))]

    def values(self, document: Sequence[Hypothesis]) -> np.ndarray:
        return np.array([-float(sum(self._loss(c) for c in self.start(document).counts.values()))])

    # incremental: the state holds {word: Counter(translation -> tokens)} over the document

    def start(self, document: Sequence[Hypothesis]) -> "_State":
        state = _State({}, {})
        for h in document:
            for w, t in self.tokens(h):
                state.counts.setdefault(w, Counter())[t] += 1
        return state

    def delta(self, state: "_State", j: int, candidates: Candidates) -> np.ndarray:
        out = np.zeros((len(candidates), 1))
        removed = self._tokens_of(state, j, candidates, candidates.removed)
        if not removed:  # the candidates cover the same source words: none counted, nothing changes
            return out
        words = [w for w, _ in removed]
        if len(set(words)) < len(words):
            return self._delta_by_recount(state, j, candidates, removed)
        # each counted word type occurs once among the changed tokens, so the change is a sum over tokens, and
        # a candidate's is the sum over its (one or two) options
        counts = state.counts
        after, best_after, loss_before = {}, {}, {}
        for w, t in removed:
            counter = counts[w]
            total = sum(counter.values())
            loss_before[w] = total - max(counter.values())
            after[w] = counter.copy()
            after[w][t] -= 1
            best_after[w] = max(after[w].values())

        def option_change(option: int) -> float:
            change = 0.0
            for w, t in self._tokens_of(state, j, candidates, (option,)):
                total = loss_before[w] + max(counts[w].values())
                change += (total - max(best_after[w], after[w][t] + 1)) - loss_before[w]
            return change

        per_option: dict[int, float] = {}
        nb = candidates.neighbourhood
        for c in range(len(candidates)):
            if c == candidates.current:
                continue
            change = 0.0
            for o in (int(nb.first[c]), int(nb.second[c])):
                if o >= 0:
                    if o not in per_option:
                        per_option[o] = option_change(o)
                    change += per_option[o]
            out[c, 0] = -change
        return out

    def _delta_by_recount(self, state, j, candidates, removed) -> np.ndarray:
        """``delta`` when a word type occurs more than once among the changed tokens."""
        out = np.zeros((len(candidates), 1))
        counts = state.counts
        old = {w: self._loss(counts[w]) for w, _ in removed}
        for c in range(len(candidates)):
            if c == candidates.current:
                continue
            changes: dict[int, Counter] = {}
            for w, t in removed:
                changes.setdefault(w, Counter())[t] -= 1
            for w, t in self._tokens_of(state, j, candidates, candidates.added(c)):
                changes[w][t] += 1
            total = 0.0
            for w, change in changes.items():
                if any(change.values()):
                    new = counts[w].copy()
                    new.update(change)
                    total += self._loss(new) - old[w]
            out[c, 0] = -total
        return out

    def move(self, state: "_State", j: int, candidates: Candidates, c: int) -> "_State":
        for w, t in self._tokens_of(state, j, candidates, candidates.removed):
            state.counts[w][t] -= 1
        for w, t in self._tokens_of(state, j, candidates, candidates.added(c)):
            state.counts[w][t] += 1
        return state

    @staticmethod
    def _loss(counter: Counter) -> int:
        values = [v for v in counter.values() if v > 0]
        return sum(values) - max(values) if values else 0

    def _tokens_of(self, state: "_State", j: int, candidates: Candidates,
                   chosen: np.ndarray) -> list[tuple[int, tuple[int, ...]]]:
        """(source word, translation) of the counted source tokens of options ``chosen`` of sentence ``j``."""
        options = candidates.options
        cached = state.option_tokens.get(j)
        if cached is None or cached[0] is not options:
            cached = state.option_tokens[j] = (options, {})
        out = []
        for o in chosen:
            found = cached[1].get(int(o))
            if found is None:
                start, end = int(options.start[o]), int(options.end[o])
                target = options.target(o)
                linked: list[list[int]] = [[] for _ in range(end - start)]
                for s, t in sorted(option_links(options, int(o)), key=lambda st: (st[0], st[1])):
                    linked[s - start].append(int(target[t]))
                found = [(int(options.sentence[start + i]), tuple(words)) for i, words in enumerate(linked)
                         if self.counted(int(options.sentence[start + i]))]
                cached[1][int(o)] = found
            out.extend(found)
        return out


@dataclass
class _State:
    """Token counts of the document, and each sentence's (options, {option: counted tokens}) cache."""

    counts: dict[int, Counter]
    option_tokens: dict[int, tuple[object, dict[int, list[tuple[int, tuple[int, ...]]]]]]

"""Search errors against model errors: where the reference went.

Wisniewski, Allauzen & Yvon (2010, "Assessing phrase-based translation
models with oracle decoding") separate what a decoder gets wrong into what
its search loses and what its model prefers, by comparing the model score of
the 1-best with that of the best derivation of a target the search should
have found. Here that target is the reference, found by forced decoding
(``pbmt.search.forced``, an exact search in the decoder's space):

- **correct**: the 1-best's words are the reference's;
- **search error**: the reference scores higher than the 1-best, so the
  decoder's pruning lost a better derivation (which pruning: each of stack
  size, beam threshold and pop limit is lifted alone, then all together, and
  the first after which the search finds a score at least the reference's
  is named);
- **model error**: the 1-best scores at least the reference: the model
  prefers another translation, however large the search;
- **unreachable**: no derivation of the model produces the reference (why:
  ``Unreachable``), so the sentence says nothing about the search.

``summarize`` gives the shares with bootstrap intervals over sentences.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from enum import Enum

import numpy as np

from pbmt.model.model import SearchSettings, TranslationModel
from pbmt.search.decoder import decode
from pbmt.search.forced import ForcedDecoder
from pbmt.search.options import TranslationOptions

TOLERANCE = 1e-6  # model scores closer than this (natural log) are equal


class Verdict(Enum):
    CORRECT = "correct"
    SEARCH_ERROR = "search error"
    MODEL_ERROR = "model error"
    UNREACHABLE = "unreachable"


@dataclass(frozen=True)
class SentenceAnalysis:
    """One sentence's verdict. ``reference_score``: the best model score of a derivation of the reference
    (natural log; nan when unreachable); ``best_score``: the decoder's 1-best's (-inf when it found none);
    ``best``: the 1-best's target tokens; ``reason``, ``detail``: why the reference is unreachable (the
    ``Unreachable`` member's name and its words); ``pruned_by``: for a search error, the pruning whose lifting
    alone finds a score at least the reference's ("stack size" (ten times larger), "beam threshold", "pop
    limit"), else "all together" when lifting them all does, else "more than these"."""

    verdict: Verdict
    reference_score: float
    best_score: float
    best: tuple[str, ...]
    reason: str = ""
    detail: str = ""
    pruned_by: str = ""


def _lifted(settings: SearchSettings) -> dict[str, dict]:
    """Each pruning of ``settings`` that limits the search, and the settings lifting it (a stack can only
    grow: ten times)."""
    out = {"stack size": dict(stack_size=10 * settings.stack_size)}
    if settings.beam_threshold > 0:
        out["beam threshold"] = dict(beam_threshold=0.0)
    if settings.search == "cube" and settings.pop_limit > 0:
        out["pop limit"] = dict(pop_limit=0)
    return out


def analyze_sentence(model: TranslationModel, options: TranslationOptions, reference: list[str],
                     forced: ForcedDecoder, causes: bool = True) -> SentenceAnalysis:
    """The verdict on one sentence: the decoder's 1-best under ``model.settings`` against the best derivation
    of ``reference`` (the model's target tokens) that ``forced`` finds (its search space must be the
    model's). ``causes``: for a search error, find which pruning lost it (up to four more searches)."""
    found = decode(model, options)
    best_score = found[0].score if found else -math.inf
    best = tuple(options.vocab.words(found[0].derivation.target_words(options))) if found else ()
    if best == tuple(reference) and found:
        return SentenceAnalysis(Verdict.CORRECT, best_score, best_score, best)
    result = forced.decode(options, reference)
    if not result.reachable:
        return SentenceAnalysis(Verdict.UNREACHABLE, math.nan, best_score, best, result.reason.name, result.detail)
    reference_score = result.found[0].score
    if reference_score <= best_score + TOLERANCE:
        return SentenceAnalysis(Verdict.MODEL_ERROR, reference_score, best_score, best)
    pruned_by = _pruned_by(model, options, reference_score) if causes else ""
    return SentenceAnalysis(Verdict.SEARCH_ERROR, reference_score, best_score, best, pruned_by=pruned_by)


def _pruned_by(model: TranslationModel, options: TranslationOptions, reference_score: float) -> str:
    settings = model.settings
    lifted = _lifted(settings)
    trials = list(lifted.items()) + [("all together", {k: v for d in lifted.values() for k, v in d.items()})]
    for name, change in trials:
        found = decode(model, options, settings=dataclasses.replace(settings, **change))
        if found and found[0].score >= reference_score - TOLERANCE:
            return name
    return "more than these"


@dataclass(frozen=True)
class Share:
    """A share of sentences (in [0, 1]) with its bootstrap interval (``low``, ``high``)."""

    count: int
    total: int
    share: float
    low: float
    high: float


def summarize(analyses: list[SentenceAnalysis], samples: int = 1000, seed: int = 1,
              confidence: float = 0.95) -> dict[str, Share]:
    """Shares of the sentences, with percentile bootstrap intervals (``samples`` resamplings of the
    sentences, ``confidence`` level): each verdict among all sentences (``Verdict`` values), ``reachable``
    among all, and ``search error, of reachable errors`` and ``model error, of reachable errors`` among the
    reachable sentences that are not correct."""
    order = list(Verdict)
    verdicts = np.array([order.index(a.verdict) for a in analyses], dtype=np.int64)
    n = len(verdicts)
    draws = verdicts[np.random.default_rng(seed).integers(0, max(n, 1), size=(samples, n))]
    everything = set(Verdict)
    errors = {Verdict.SEARCH_ERROR, Verdict.MODEL_ERROR}
    measures = {v.value: ({v}, everything) for v in Verdict}  # name: (counted, out of)
    measures["reachable"] = (everything - {Verdict.UNREACHABLE}, everything)
    measures["search error, of reachable errors"] = ({Verdict.SEARCH_ERROR}, errors)
    measures["model error, of reachable errors"] = ({Verdict.MODEL_ERROR}, errors)
    tail = (1 - confidence) / 2
    out = {}
    for name, (counted, among) in measures.items():
        hit = [order.index(v) for v in counted]
        base = [order.index(v) for v in among]
        count, total = int(np.isin(verdicts, hit).sum()), int(np.isin(verdicts, base).sum())
        hits, totals = np.isin(draws, hit).sum(axis=1), np.isin(draws, base).sum(axis=1)
        shares = hits[totals > 0] / totals[totals > 0]
        low, high = (np.quantile(shares, [tail, 1 - tail]) if len(shares) else (math.nan, math.nan))
        out[name] = Share(count, total, count / total if total else math.nan, float(low), float(high))
    return out

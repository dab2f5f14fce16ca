"""Minimum error rate training (Och, 2003) on an n-best pool.

``Mert`` maximises the corpus BLEU of the pool's 1-best translations over the
feature weights, with Och's exact line search: along a line ``w + gamma * d``
every candidate's model score is linear in gamma, so each sentence's 1-best is
the upper envelope of its candidates' lines and changes only at the
envelope's breakpoints. The breakpoints of all sentences, merged and sorted,
cut the line into intervals of constant BLEU statistics, which are summed
incrementally and scored all at once; the best interval wins. No grid, no
approximation: the result is the exact maximum of corpus BLEU on the line.

The search around it is Moses's ``mert`` (its "powell" optimiser): from a
starting point, line-search every coordinate direction and some random
directions, move to the best point found, repeat until corpus BLEU improves by
no more than ``tolerance``; do so from the previous weights and from
``restarts`` random starting points, and keep the best. Within the best
interval the point chosen is its middle, as Moses does; for a half-line
interval (before the first or after the last breakpoint), the current point
if it lies inside, else the point as far past the breakpoint as the
breakpoint is from the current point (Moses uses cmert's fixed offsets, -1000
and +0.1, whose effect depends on the weights' scale).

**Bounded steps.** Each line search looks only ``max_step`` times the current
point's L1 norm away from it (directions have L1 norm 1), so one step changes
the weights by at most that share of their mass; intervals are clipped to
the segment, and where the point above lies beyond it, the middle of the
clipped interval is taken. Och's search is the unbounded case
(``max_step=None``). Why: far out along a line the 1-best of every sentence
is fixed by the direction alone (along a coordinate, by that one feature,
the other weights only breaking its ties), and such a lexicographic ranking
can win on the pool by a few tenths of a point; the unbounded search then
walks to weights many times their start, with their mass on the phrase
penalty or one reordering orientation and none on the LM, which the decoder,
reaching hypotheses the pool never held, turns into word salad.

**Kept signs.** With ``keep_signs``, no tuned weight changes sign: each line
search also stops where a weight would cross zero (the segment it may step
into ends there), and random restarts start in the orthant of the starting
weights. Why: a log-probability feature whose events are rare in the pool
(a lexicalized-reordering swap under untuned weights) varies on only a few
of its sentences, so the pool can reward flipping its weight; a flipped
weight rewards making those events as unlikely, or as many, as the search
allows, and the decoder finds 1-bests with dozens of swaps that no pool of
one decode holds. Bounded steps alone do not prevent this. The traced case
and the cures measured against it are in ``docs/tuning-results.md``;
``tests/tune/test_mert.py`` has a small pool built the same way.

Fixed features (default ``UnknownWordPenalty0``: -100 per unknown word, a
constant Moses never tunes and does not print in its n-best lists, so its
mert-moses.pl cannot see it) keep their weight and take no part in the
search, as in Moses. After optimisation the tuned weights are L1-normalised
(their absolute values sum to 1), as Moses's ``mert`` does; the fixed weights
are left as they were.

Corpus BLEU here is ``pbmt.metrics.bleu.bleu`` of summed statistics (``exp``
smoothing, equal to sacrebleu's corpus BLEU and, whenever every n-gram order
has a match, to Moses's unsmoothed BLEU), in [0, 1].
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

import numpy as np

from pbmt.base.projection import project
from pbmt.metrics.bleu import bleu, paired_bootstrap
from pbmt.tune._mert_kernels import envelope_breakpoints, merge_breakpoints
from pbmt.tune.options import DEDUP_OPTION, INTERPOLATION, ITERATIONS, KEEP, MERT_OPTIONS
from pbmt.tune.pool import Pool, argmax_by_sentence
from pbmt.tune.tuner import Tuner, TuningData, l1_normalised, toward


def line_search(a: np.ndarray, b: np.ndarray, offsets: np.ndarray, stats: np.ndarray,
                low: float = -np.inf, high: float = np.inf) -> tuple[float, float]:
    """The best step ``gamma`` along a line, ``low < gamma < high``, and the corpus BLEU there, in [0, 1].

    a: float64[n_cand], the candidates' model scores at the current point
    (``X @ w``); b: float64[n_cand], their slopes along the direction
    (``X @ d``); offsets: int64[n_sent+1] (CSR by sentence, none empty); stats:
    int64[n_cand, 10] BLEU statistics; low <= 0 <= high, the segment of the
    line the search may step into. Each sentence's 1-best at ``w + gamma * d`` is its
    ``argmax(a + gamma * b)`` (the first candidate on ties).
    """
    return best_step(*envelope_breakpoints(a, b, offsets), stats, low, high)


def best_step(first: np.ndarray, gamma: np.ndarray, old: np.ndarray, new: np.ndarray, stats: np.ndarray,
              low: float = -np.inf, high: float = np.inf) -> tuple[float, float]:
    """The best step ``gamma`` along a line, ``low < gamma < high``, and the corpus BLEU there, in [0, 1],
    given every sentence's upper envelope, however it was found (an n-best list's, a lattice's).

    first, gamma, old, new: the envelopes as ``envelope_breakpoints`` returns
    them (indices into ``stats``, int64[n_lines, 10]: BLEU statistics of
    each envelope line's translation). Only intervals that reach into
    (low, high) compete, clipped to it (the module docstring says which
    point of the best one is returned).
    """
    bounds, rows = merge_breakpoints(first, gamma, old, new, stats)
    lower, upper = np.r_[-np.inf, bounds], np.r_[bounds, np.inf]
    scores = np.where((lower < high) & (upper > low), bleu(rows), -np.inf)
    best = np.flatnonzero(scores == scores.max())
    here = int(np.searchsorted(bounds, 0.0, side="left"))
    inside = here == len(bounds) or bounds[here] != 0.0
    chosen = here if inside and here in best else int(best[0])
    return _step(lower[chosen], upper[chosen], inside and chosen == here, low, high), float(scores[chosen])


def _segment(point: np.ndarray, direction: np.ndarray, signs: np.ndarray, reach: float) -> tuple[float, float]:
    """(low, high): the steps ``gamma`` in (-reach, reach) for which no weight of ``point + gamma * direction``
    changes the sign ``signs`` gives it (0: free); the weight may reach zero at the ends."""
    low, high = -reach, reach
    moving = (signs != 0) & (direction != 0)
    if moving.any():
        limits = -point[moving] / direction[moving]  # where each constrained weight reaches zero
        toward = signs[moving] * direction[moving] < 0
        high = min(high, limits[toward].min(initial=np.inf))
        low = max(low, limits[~toward].max(initial=-np.inf))
    return low, high


def _step(lower: float, upper: float, contains_origin: bool, low: float, high: float) -> float:
    if np.isfinite(lower) and np.isfinite(upper):
        point = 0.5 * (lower + upper)
    elif contains_origin:
        return 0.0
    else:
        edge, side = (upper, -1.0) if np.isinf(lower) else (lower, 1.0)
        point = edge + side * (abs(edge) if edge != 0.0 else 1.0)
    return float(point if low < point < high else 0.5 * (max(lower, low) + min(upper, high)))


#: MERT's interpolation where a pool cannot judge a full step: in the MON/SWAP search space (undamped, its first
#: step there overshoots what the pool holds and decodes too long) and on a dev set of fewer than
#: SMALL_DEV_SENTENCES sentences (on the tutorial's 100 verses a full step took the distortion weight to zero,
#: where the pool held no candidate, and the decode fell below the untuned weights); half steps climb without
#: such a dip in both (docs/tuning-results.md)
DAMPED_INTERPOLATION = 0.5
SMALL_DEV_SENTENCES = 500  # measured at 100 (dips undamped) and 1,031 (no dip undamped); the threshold between is a guess


def small_dev_set(n_sentences: int | None) -> bool:
    """Whether a dev set of ``n_sentences`` (None: not known) is one MERT's small-dev defaults are for."""
    return n_sentences is not None and n_sentences < SMALL_DEV_SENTENCES


def default_interpolation(reordering: str, n_sentences: int | None = None) -> float:
    """MERT's interpolation unless one is given: ``DAMPED_INTERPOLATION`` in the ``"mon-swap"`` space or on a dev
    set of fewer than ``SMALL_DEV_SENTENCES`` sentences (None: not known), else 1 (none)."""
    return DAMPED_INTERPOLATION if reordering == "mon-swap" or small_dev_set(n_sentences) else 1.0


class Mert(Tuner):
    """Och's MERT, a tuner (``pbmt.tune.tuner``) of the decode-optimise loop, over its ``pool``.

    restarts: random starting points besides the previous weights (Moses: 20);
    random_directions: random directions (L1 norm 1) line-searched in every round
    besides the coordinate directions, drawn afresh each round; fixed: feature
    names whose weights stay as given (absent names are ignored); tolerance:
    stop a climb when a round improves corpus BLEU (in [0, 1]) by no more
    than this; start_range: random starting weights are uniform in it (as
    in Moses's mert, [0, 1] for every tuned feature); significance and
    resamples: the best random restart replaces the climb from the previous
    weights only if its pool BLEU is higher in at least 1 - significance of
    ``resamples`` paired bootstrap resamples of the pool's sentences (0: it
    replaces it whenever its pool BLEU is higher, as in Moses); max_step: the
    reach of a line search in units of the current point's L1 norm (a zero
    point counts as norm 1), None for Och's unbounded search; keep_signs: no
    tuned weight changes sign, a weight at zero may take either (see the
    module docstring for both); interpolation: Ψ in [0, 1], the weights
    returned are Ψ times the optimum plus 1 - Ψ times the starting weights
    (both L1-normalised over the tuned columns, as MERT's weights are
    scale-free), PRO's damping (1: none).

    Why interpolation: a pool of one decode cannot show what weights far from
    the decoded ones do. In the MON/SWAP search space the first optimum cut
    the LM's and the word penalty's shares to a third and decoded output 17%
    longer than the reference, which no candidate of the pool was
    (``docs/tuning-results.md``); a step part of the way there stays where the
    pool can judge it.

    Why the significance test: the pool BLEU surface is flat over wide regions,
    so random restarts end on points whose pool BLEU differs from the
    previous weights' optimum by hundredths of a point but whose weights put
    most of their mass on features the pool hardly varies (a reordering
    orientation, say) and almost none on the LM; such weights fit the pool
    and decode word salad. Keeping the climb from the previous weights unless
    a restart is significantly better keeps restarts for what they are for,
    escaping a poor local optimum.

    Why no random restarts on a small dev set (``for_search``'s default below
    ``SMALL_DEV_SENTENCES``): the test asks whether the restart's gain holds
    over resamples of the pool's sentences, not whether the pool holds what
    the decoder would find under the restart's weights, and the challenger it
    tests is the best of 20 by pool BLEU on the same sentences. On a pool of
    100 sentences the restarts' optima gain a tenth of a point by changing a
    few sentences' 1-best, from weights far from the decoded ones; one that
    passed put almost no weight on the LMs and the word penalty and decoded
    far below the untuned weights even half-stepped
    (``docs/tuning-results.md``).

    After ``fit``: ``weights_`` float64[n_features] (L1-normalised over the
    tuned columns), ``score_`` the pool's corpus BLEU in [0, 1] under them
    (fixed columns ignored, as in the search), ``n_line_searches_``,
    ``restart_kept_`` (whether a random restart's optimum won).
    Deterministic given the random generator, and the same on any number of ``threads``: a round's line
    searches over the pool (its coordinate and random directions, the random ones drawn before any search, in
    the order the rounds always drew them) run on that many threads, and the best is then picked in direction
    order, the first of equal ones, as one thread picks it.
    """

    name, title, loop, reads = "mert", "MERT", "decode-optimise", ("pool",)
    options = (ITERATIONS, KEEP, DEDUP_OPTION, *MERT_OPTIONS, INTERPOLATION)
    DAMPED_INTERPOLATION, SMALL_DEV_SENTENCES = DAMPED_INTERPOLATION, SMALL_DEV_SENTENCES

    def __init__(self, restarts: int = 20, random_directions: int = 10,
                 fixed: tuple[str, ...] = ("UnknownWordPenalty0",), tolerance: float = 1e-5,
                 start_range: tuple[float, float] = (0.0, 1.0), significance: float = 0.05,
                 resamples: int = 1000, max_step: float | None = 2.0, keep_signs: bool = True,
                 interpolation: float = 1.0, threads: int = 1):
        if not 0.0 <= significance < 1.0:
            raise ValueError(f"significance must be in [0, 1), got {significance}")
        if max_step is not None and not max_step > 0:
            raise ValueError(f"max_step must be positive (or None: unbounded), got {max_step}")
        if not 0.0 <= interpolation <= 1.0:
            raise ValueError(f"interpolation must be in [0, 1], got {interpolation}")
        self.restarts = restarts
        self.random_directions = random_directions
        self.fixed = fixed
        self.tolerance = tolerance
        self.start_range = start_range
        self.significance = significance
        self.resamples = resamples
        self.max_step = max_step
        self.keep_signs = keep_signs
        self.interpolation = interpolation
        self.threads = threads

    @classmethod
    def for_search(cls, params: dict, reordering: str, n_sentences: int | None = None) -> dict:
        """Half steps by default in MON/SWAP and on a small dev set (``default_interpolation``), and on a small dev
        set no random restarts (the class docstring says why); ``params`` given win."""
        defaults = {"interpolation": default_interpolation(reordering, n_sentences)}
        if small_dev_set(n_sentences):
            defaults["restarts"] = 0
        return {**defaults, **params}

    def fit(self, data: TuningData, initial_weights: np.ndarray, rng: np.random.Generator) -> "Mert":
        """Tune on ``data.pool`` from ``initial_weights`` (float64[n_features], pool column order)."""
        pool, initial, free = self.checked_start(data, initial_weights)
        with PoolLines(pool, free, self.threads) as lines:
            return self._optimise(lines, initial, free, rng)

    def _optimise(self, lines: "Lines", initial: np.ndarray, free: np.ndarray, rng: np.random.Generator) -> "Mert":
        """Climb from ``initial`` and from the random restarts over ``lines``; set the fitted attributes.

        initial: float64[n_features]; free: bool[n_features], the tuned columns."""
        self.n_line_searches_ = 0
        signs = np.sign(initial[free]) if self.keep_signs else np.zeros(int(free.sum()))
        orthant = np.where(signs != 0, signs, 1.0)
        climbs = [self._climb(initial[free] if restart == 0
                              else orthant * rng.uniform(*self.start_range, size=int(free.sum())),
                              lines, rng, signs) for restart in range(self.restarts + 1)]
        best_point, best_score = climbs[0]
        self.restart_kept_ = False
        challenger, challenger_score = max(climbs[1:], key=lambda climb: climb[1], default=(None, -np.inf))
        if challenger_score > best_score and (self.significance == 0.0 or paired_bootstrap(
                lines.sentence_stats(best_point), lines.sentence_stats(challenger),
                rng, self.resamples) >= 1.0 - self.significance):
            best_point, best_score = challenger, challenger_score
            self.restart_kept_ = True
        if self.interpolation < 1.0:
            best_point = toward(best_point, initial[free], self.interpolation)
            best_score = float(bleu(lines.sentence_stats(best_point).sum(axis=0)))
        weights = initial.copy()
        weights[free] = l1_normalised(best_point)
        self.weights_ = weights
        self.score_ = best_score
        return self

    def _climb(self, point, lines, rng, signs) -> tuple[np.ndarray, float]:
        """Moses's rounds from ``point``: the best of all directions' line optima, until no gain.

        signs: float64[dim] of -1, 0, +1: a weight of non-zero sign may not cross zero."""
        score = float(bleu(lines.sentence_stats(point).sum(axis=0)))
        while len(point):
            best_point, best_score = self._round(point, score, lines, rng, signs)
            improved = best_score - score
            point, score = best_point, best_score
            if improved <= self.tolerance:
                break
        return point, score

    def _round(self, point, score, lines, rng, signs) -> tuple[np.ndarray, float]:
        """One round from ``point`` (whose corpus BLEU is ``score``): every coordinate direction's and
        ``random_directions`` random directions' line optima over ``lines``; the best point and its BLEU
        (``point`` and ``score`` if none is higher)."""
        dim = len(point)
        lines.at(point)
        norm = np.abs(point).sum()
        reach = np.inf if self.max_step is None else self.max_step * (norm if norm > 0 else 1.0)
        searches = []
        for j in range(dim + self.random_directions):
            if j < dim:
                direction = np.zeros(dim)
                direction[j] = 1.0
            else:
                direction = rng.standard_normal(dim)
                direction /= np.abs(direction).sum()
            searches.append((direction, j if j < dim else None, *_segment(point, direction, signs, reach)))
        found = lines.search_all(searches)
        self.n_line_searches_ += len(searches)
        best_point, best_score = point, score
        for (direction, *_), (gamma, bleu_found) in zip(searches, found):
            if bleu_found > best_score:
                best_point, best_score = point + gamma * direction, bleu_found
        return best_point, best_score


class Lines(Protocol):
    """What MERT's search needs of the translations it optimises over (an n-best pool, lattices): for a point
    ``w`` (float64[dim], the tuned weights), each sentence's 1-best, and along a line from it, the best step.
    """

    def sentence_stats(self, point: np.ndarray) -> np.ndarray:
        """BLEU statistics int64[n_sent, 10] of each sentence's 1-best at ``point``."""

    def at(self, point: np.ndarray) -> None:
        """Make ``point`` the origin of the following ``search`` calls."""

    def search(self, direction: np.ndarray, coordinate: int | None, low: float, high: float) -> tuple[float, float]:
        """``best_step`` along ``direction`` (float64[dim]; the unit vector of ``coordinate`` if not None)
        from the point of ``at``, within (low, high)."""

    def search_all(self, searches: list[tuple[np.ndarray, int | None, float, float]]) -> list[tuple[float, float]]:
        """``search(*s)`` of each of ``searches`` (a round's, all from the point of ``at``), in their order: one
        after the other unless a class runs them at once (``PoolLines``)."""
        return [self.search(*s) for s in searches]


class PoolLines(Lines):
    """``Lines`` of an n-best pool: each sentence's candidates (``line_search``); ``search_all`` runs several
    searches from one point on ``threads`` threads (the kernels release the GIL). A context manager: leaving
    it stops the threads."""

    def __init__(self, pool: Pool, free: np.ndarray, threads: int = 1):
        self.pool = pool
        self.features = np.ascontiguousarray(pool.features[:, free])
        self.columns = np.ascontiguousarray(self.features.T)
        self.executor = ThreadPoolExecutor(threads, thread_name_prefix="pbmt-mert") if threads > 1 else None

    def __enter__(self) -> "PoolLines":
        return self

    def __exit__(self, *exc) -> None:
        if self.executor is not None:
            self.executor.shutdown()

    def sentence_stats(self, point: np.ndarray) -> np.ndarray:
        return self.pool.stats[argmax_by_sentence(project(self.features, point), self.pool.offsets)]

    def at(self, point: np.ndarray) -> None:
        self.a = project(self.features, point)

    def search(self, direction: np.ndarray, coordinate: int | None, low: float, high: float) -> tuple[float, float]:
        slopes = self.columns[coordinate] if coordinate is not None else project(self.features, direction)
        return line_search(self.a, slopes, self.pool.offsets, self.pool.stats, low, high)

    def search_all(self, searches: list[tuple[np.ndarray, int | None, float, float]]) -> list[tuple[float, float]]:
        """``search(*s)`` of each of ``searches``, in their order, on the threads."""
        if self.executor is None or len(searches) < 2:
            return super().search_all(searches)
        return list(self.executor.map(lambda s: self.search(*s), searches))

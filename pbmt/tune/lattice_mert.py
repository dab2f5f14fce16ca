"""MERT over the search graphs (lattice MERT; Macherey, Och, Thayer & Uszkoreit, 2008).

Och's line search needs, for each sentence, the upper envelope of its
translations' lines ``w . F + gamma * d . F``. n-best MERT takes it over the
pool's candidates; lattice MERT over every complete path of the sentence's
search graph (``pbmt.search.lattice``): Macherey et al.'s sweep over the
graph's nodes in topological order, where each node keeps the envelope of
the paths reaching it (``_lattice_kernels.envelopes``). A sentence's graph
holds thousands of edges and exponentially many paths, against the pool's
hundred candidates per decode: a line search sees every translation the
last search kept, not only the few the last weights ranked best.

Everything around the envelope is ``pbmt.tune.mert``'s: the merged
breakpoints and interval scoring (``best_step``), the bounded steps, kept
signs, random directions and restarts, the significance test on restarts
and the L1 normalisation; ``LatticeMert`` takes ``Mert``'s parameters.
Each line search also drops, at every node, the lines that are highest only
outside the segment it may step into (an exact pruning: their extensions
can never be highest inside it), which keeps the envelopes small when
steps are bounded.

**Rounds near the point.** A climb's round line-searches every coordinate
and some random directions from one point, and each line search over all
the graphs reads every edge (4.3 million for 300 dev sentences) although
the steps a round keeps move few sentences' best paths far. So each round
searches only the edges on paths within ``margin`` (a share of the point's
L1 norm) of their sentence's best path at the point (``Lattices.near``,
one forward and one backward Viterbi pass), and a step is kept only if
the corpus BLEU of every path's best at the new point (read off the
edges near that point, which the next round then searches) is higher.
When a round finds no such step, one more round searches the paths within
``WIDEN`` times the margin before the climb ends. The paths near the
point are a small share of the graphs (docs/tuning-results.md measures
how many, and a whole climb's cost and BLEU with and without them);
``margin=None`` searches every path in every round.

Only the current iteration's graphs are searched (the tuning loop passes
them; ``pbmt.tune.loop``): one decode's graphs of a dev set hold millions of
edges (docs/tuning-results.md, "Lattice MERT on the first step", gives their
memory and line-search time), so keeping every iteration's, or
merging them as Macherey et al. do, would multiply memory and line-search
time by the number of iterations, while a single graph already holds
exponentially many translations around the decoded weights, against the
pool's 100 a decode.
"""

from __future__ import annotations

import copy

import numpy as np

from pbmt.base.errors import PbmtError
from pbmt.metrics.bleu import bleu, segment_stats_ids
from pbmt.search.lattice import COORDINATE_ROUNDS, Lattices
from pbmt.tune.mert import Lines, Mert, best_step
from pbmt.tune.options import MERT, number_or_none
from pbmt.tune.pool import References
from pbmt.tune.tuner import Option, TuningData


#: the paths a round of a climb searches: those within this share of the point's L1 norm of each sentence's best
#: model score at the point (``LatticeMert``)
NEAR_MARGIN = 0.2
#: how much wider the margin of a climb's last try is, when the paths near the point gave no step
WIDEN = 4.0


class LatticeLines(Lines):
    """``pbmt.tune.mert.Lines`` of the dev set's lattices: each sentence's envelope over all its paths.

    lattices: one per dev sentence, in order; references: the dev references
    (``References``; the paths' words are counted against them as the
    pool's texts are); free: bool[n_features], the tuned columns (the
    others take no part: their weight counts as 0); threads: how many threads a line search runs its blocks of
    sentences on (None: the cores available; the envelopes do not depend on it).
    """

    def __init__(self, lattices: Lattices, references: References, free: np.ndarray, threads: int | None = None):
        if lattices.n_sentences != references.n_sentences:
            raise PbmtError(f"{lattices.n_sentences} search graphs for {references.n_sentences} dev references")
        self.lattices = lattices
        self.references = references.compiled
        self.free = free
        self.threads = threads
        self.word_ids = references.vocab.ids(lattices.words.tolist()).astype(np.int32)
        self.no_slope = np.zeros(lattices.joined.n_edges)

    @property
    def n_edges(self) -> int:
        return self.lattices.joined.n_edges

    def _vector(self, point: np.ndarray) -> np.ndarray:
        vector = np.zeros(len(self.free))
        vector[self.free] = point
        return vector

    def _stats(self, envelopes) -> np.ndarray:
        sentence = np.repeat(np.arange(self.lattices.n_sentences), np.diff(envelopes.line_offsets))
        return segment_stats_ids(envelopes.word_offsets, envelopes.words, sentence, self.references)

    def sentence_stats(self, point: np.ndarray) -> np.ndarray:
        a = self.lattices.scores(self._vector(point), self.threads)
        envelopes = self.lattices.envelopes(a, self.no_slope, self.word_ids, threads=self.threads)
        return self._stats(envelopes)

    def at(self, point: np.ndarray) -> None:
        self.a = self.lattices.scores(self._vector(point), self.threads)

    def near(self, point: np.ndarray, margin: float) -> "LatticeLines":
        """These lines over only the edges on paths within ``margin`` of each sentence's best at ``point``
        (``Lattices.near``)."""
        near = copy.copy(self)
        near.lattices = self.lattices.near(self.lattices.scores(self._vector(point), self.threads), margin,
                                           self.threads)
        near.no_slope = np.zeros(near.lattices.joined.n_edges)
        return near

    def search(self, direction: np.ndarray, coordinate: int | None, low: float, high: float) -> tuple[float, float]:
        slopes = self.lattices.scores(self._vector(direction), self.threads)
        envelopes = self.lattices.envelopes(self.a, slopes, self.word_ids, low, high, self.threads,
                                            rounds=0 if coordinate is None else COORDINATE_ROUNDS)
        offsets = envelopes.line_offsets
        successive = np.ones(len(envelopes.intercept) - 1, dtype=bool) if len(envelopes.intercept) else \
            np.zeros(0, dtype=bool)
        successive[offsets[1:-1] - 1] = False  # no breakpoint between one sentence's last line and the next's first
        old = np.flatnonzero(successive)
        new = old + 1
        gamma = (envelopes.intercept[old] - envelopes.intercept[new]) / (envelopes.slope[new] - envelopes.slope[old])
        return best_step(offsets[:-1], gamma, old, new, self._stats(envelopes), low, high)


class LatticeMert(Mert):
    """MERT whose line searches cover every path of the dev set's search graphs (module docstring).

    Parameters and fitted attributes are ``Mert``'s, and so are the defaults
    but one: no random restarts; progress: a progress bar of the line searches; threads: the threads each
    line search runs on (None: the cores available; the result does not depend on it). Why: a climb makes about a hundred line
    searches, each over all the dev set's graphs (far dearer than a line
    search over the pool), so Mert's 20 restarts would multiply an
    iteration's optimisation by 21 for starting points whose optimum must
    also pass the significance test against the climb from the decoded
    weights, the one point the graphs were searched from. ``score_`` is the
    corpus BLEU in [0, 1] of the graphs' best paths under ``weights_``.
    ``fit`` reads the graphs of the loop's last decode (``data.lattices``)
    and the dev ``references``; ``data.pool`` gives the layout and fixed
    columns. margin: each round searches the paths within this share of the point's L1 norm of their
    sentence's best model score (module docstring; None: every path, Mert's climb over the whole graphs).
    """

    name, title, reads = "lattice-mert", "lattice MERT", ("pool", "lattices", "references")
    options = (*Mert.options, Option(
        ("--lattice-margin",), "lattice-mert: each round of a climb line-searches only the paths whose model score is "
        "within this share of the weights' L1 norm of their sentence's best, and keeps a step only as every path "
        "scores it ('none': every path, far slower)", "margin", MERT,
        type=number_or_none, metavar="X", dest="lattice_margin"))

    def __init__(self, restarts: int = 0, random_directions: int = 10,
                 fixed: tuple[str, ...] = ("UnknownWordPenalty0",), tolerance: float = 1e-5,
                 start_range: tuple[float, float] = (0.0, 1.0), significance: float = 0.05,
                 resamples: int = 1000, max_step: float | None = 2.0, keep_signs: bool = True,
                 interpolation: float = 1.0, progress: bool = False, threads: int | None = None,
                 margin: float | None = NEAR_MARGIN):
        super().__init__(restarts, random_directions, fixed, tolerance, start_range, significance, resamples,
                         max_step, keep_signs, interpolation)
        if margin is not None and not margin > 0:
            raise ValueError(f"margin must be positive (or None: every path), got {margin}")
        self.progress, self.threads, self.margin = progress, threads, margin

    def fit(self, data: TuningData, initial_weights: np.ndarray, rng: np.random.Generator) -> "LatticeMert":
        """Tune on ``data.lattices`` (one per dev sentence, decoded with ``initial_weights``:
        float64[n_features], pool column order) against ``data.references``."""
        pool, initial, free = self.checked_start(data, initial_weights)
        if not data.lattices:
            raise PbmtError("lattice MERT needs the dev set's search graphs and references")
        lattices, references = data.lattices, data.references
        lines = LatticeLines(Lattices.concatenate(list(lattices)), references, free, self.threads)
        if not self.progress:
            return self._optimise(lines, initial, free, rng)
        from tqdm import tqdm

        with tqdm(desc="lattice MERT", unit=" line searches", leave=False, disable=None) as bar:
            return self._optimise(_Counted(lines, bar), initial, free, rng)

    def _climb(self, point, lines, rng, signs) -> tuple[np.ndarray, float]:
        """Mert's climb, each round's line searches over the paths near the round's point (class docstring)."""
        if self.margin is None:
            return super()._climb(point, lines, rng, signs)
        margin = self.margin
        near = _near(lines, point, margin)
        score = float(bleu(near.sentence_stats(point).sum(axis=0)))  # near holds every best path at point
        while len(point):
            found_point, predicted = self._round(point, score, near, rng, signs)
            if predicted - score > self.tolerance:
                around = _near(lines, found_point, self.margin)
                found = float(bleu(around.sentence_stats(found_point).sum(axis=0)))
                if found - score > self.tolerance:
                    point, score, near, margin = found_point, found, around, self.margin
                    continue
            # no step that every path confirms: one more round over the paths within WIDEN times the margin
            if margin > self.margin or near.n_edges == lines.n_edges:
                break
            margin *= WIDEN
            near = _near(lines, point, margin)
        return point, score


def _near(lines, point: np.ndarray, margin: float):
    """``lines.near`` with the margin in units of the point's L1 norm (model scores scale with the weights)."""
    norm = np.abs(point).sum()
    return lines.near(point, margin * (norm if norm > 0 else 1.0))


class _Counted(Lines):
    """``Lines`` that tick a progress bar per line search and show the best BLEU found so far (a fit makes a
    few hundred, seconds each, and their number is not known beforehand)."""

    def __init__(self, lines, bar, best: list[float] | None = None):
        self.lines, self.bar, self.best = lines, bar, [0.0] if best is None else best  # shared with its near lines

    def sentence_stats(self, point: np.ndarray) -> np.ndarray:
        return self.lines.sentence_stats(point)

    @property
    def n_edges(self) -> int:
        return self.lines.n_edges

    def at(self, point: np.ndarray) -> None:
        self.lines.at(point)

    def near(self, point: np.ndarray, margin: float) -> "_Counted":
        return _Counted(self.lines.near(point, margin), self.bar, self.best)

    def search(self, direction: np.ndarray, coordinate: int | None, low: float, high: float) -> tuple[float, float]:
        gamma, found = self.lines.search(direction, coordinate, low, high)
        self.best[0] = max(self.best[0], found)
        self.bar.set_postfix_str(f"best BLEU on the graphs {100 * self.best[0]:.2f}", refresh=False)
        self.bar.update(1)
        return gamma, found

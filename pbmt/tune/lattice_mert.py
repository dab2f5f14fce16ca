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

import numpy as np

from pbmt.base.errors import PbmtError
from pbmt.metrics.bleu import segment_stats_ids
from pbmt.search.lattice import Lattices
from pbmt.tune.mert import Mert, best_step
from pbmt.tune.pool import References
from pbmt.tune.tuner import TuningData


class LatticeLines:
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

    def search(self, direction: np.ndarray, coordinate: int | None, low: float, high: float) -> tuple[float, float]:
        slopes = self.lattices.scores(self._vector(direction), self.threads)
        envelopes = self.lattices.envelopes(self.a, slopes, self.word_ids, low, high, self.threads)
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
    columns.
    """

    name, title, reads = "lattice-mert", "lattice MERT", ("pool", "lattices", "references")

    def __init__(self, restarts: int = 0, random_directions: int = 10,
                 fixed: tuple[str, ...] = ("UnknownWordPenalty0",), tolerance: float = 1e-5,
                 start_range: tuple[float, float] = (0.0, 1.0), significance: float = 0.05,
                 resamples: int = 1000, max_step: float | None = 2.0, keep_signs: bool = True,
                 interpolation: float = 1.0, progress: bool = False, threads: int | None = None):
        super().__init__(restarts, random_directions, fixed, tolerance, start_range, significance, resamples,
                         max_step, keep_signs, interpolation)
        self.progress, self.threads = progress, threads

    def fit(self, data: TuningData, initial_weights: np.ndarray, rng: np.random.Generator) -> "LatticeMert":
        """Tune on ``data.lattices`` (one per dev sentence, decoded with ``initial_weights``:
        float64[n_features], pool column order) against ``data.references``."""
        pool, initial, free = self._pool_start(data, initial_weights)
        if not data.lattices:
            raise PbmtError("lattice MERT needs the dev set's search graphs and references")
        lattices, references = data.lattices, data.references
        lines = LatticeLines(Lattices.concatenate(list(lattices)), references, free, self.threads)
        if not self.progress:
            return self._optimise(lines, initial, free, rng)
        from tqdm import tqdm

        with tqdm(desc="lattice MERT", unit=" line searches", leave=False, disable=None) as bar:
            return self._optimise(_Counted(lines, bar), initial, free, rng)


class _Counted:
    """``Lines`` that tick a progress bar per line search and show the best BLEU found so far (a fit makes a
    few hundred, seconds each, and their number is not known beforehand)."""

    def __init__(self, lines, bar):
        self.lines, self.bar, self.best = lines, bar, 0.0

    def sentence_stats(self, point: np.ndarray) -> np.ndarray:
        return self.lines.sentence_stats(point)

    def at(self, point: np.ndarray) -> None:
        self.lines.at(point)

    def search(self, direction: np.ndarray, coordinate: int | None, low: float, high: float) -> tuple[float, float]:
        gamma, found = self.lines.search(direction, coordinate, low, high)
        self.best = max(self.best, found)
        self.bar.set_postfix_str(f"best BLEU on the graphs {100 * self.best:.2f}", refresh=False)
        self.bar.update(1)
        return gamma, found

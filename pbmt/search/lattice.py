"""A search graph's complete paths as a lattice with per-edge dense features.

The nodes are the recombination classes on some path from the empty start to
the final class; hypothesis ``h`` is an edge from its parent's class to its
own. Recombination makes an edge's features independent of the path that
reaches its source node (``_lattice_kernels``), so a path's dense features
are the sum of its edges', and every complete path is a translation the
decoder could output: n-best lists are the best few of them, lattice MERT
(``pbmt.tune.lattice_mert``) takes all. Unreachable edges (beam-rejected
hypotheses, classes never expanded) are dropped.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from pbmt.base.parallel import available_cores
from pbmt.base.projection import project
from pbmt.model.model import TranslationModel
from pbmt.search._lattice_kernels import edge_scores, envelopes, hypothesis_transitions, live_edges, near_edges
from pbmt.search.decoder import SearchGraph
from pbmt.search.options import TranslationOptions
from pbmt.search.transitions import transitions


@dataclass(frozen=True)
class Lattice:
    """One sentence's lattice; ``e`` edges sorted by target node, ``k`` options.

    source, target: int32[e] nodes (0 the start, ``n_nodes - 1`` the final
    node; source < target); option: int32[e], the edge's option, an index
    into the option arrays below; transition: float64[e, c], the values the
    model's transition features give the edge's block after its source
    node's (with the sentence end on edges into the final node; natural log)
    in the feature columns ``columns`` (int64[c]). Options: local
    float64[k, n_features] option-local features (natural log), start, end
    int32[k] source spans, word_offsets int64[k + 1] and words (str[...])
    their output words (as n-best entries print them), sentence_option
    int32[k] their numbers in the sentence's ``TranslationOptions``.
    """

    source: np.ndarray
    target: np.ndarray
    option: np.ndarray
    transition: np.ndarray
    n_nodes: int
    local: np.ndarray
    start: np.ndarray
    end: np.ndarray
    word_offsets: np.ndarray
    words: np.ndarray
    sentence_option: np.ndarray
    columns: np.ndarray

    @property
    def n_edges(self) -> int:
        return len(self.source)

    def features(self) -> np.ndarray:
        """The dense features each edge adds, float64[e, n_features] (natural log)."""
        out = self.local[self.option]
        out[:, self.columns] += self.transition
        return out


@dataclass(frozen=True)
class Envelopes:
    """Every sentence's upper envelope of its complete paths along a line ``w + gamma * d``.

    line_offsets: int64[n_sent+1] (CSR: sentence s's envelope is lines
    ``line_offsets[s]:line_offsets[s+1]``, in increasing slope, which is the
    order in which they are highest as gamma grows); intercept, slope:
    float64[k] (the path's model score ``w . F`` and ``d . F``); the path of
    line i outputs ``words[word_offsets[i]:word_offsets[i+1]]`` (int32 ids,
    as given to ``Lattices.envelopes``).
    """

    line_offsets: np.ndarray
    intercept: np.ndarray
    slope: np.ndarray
    word_offsets: np.ndarray
    words: np.ndarray


@dataclass(frozen=True)
class Lattices:
    """Many sentences' lattices joined into one, so that one kernel call covers all of them.

    edge_offsets, node_offsets, option_offsets: int64[n_sent+1] (CSR by
    sentence: sentence s owns edges ``edge_offsets[s]:edge_offsets[s+1]``,
    and so on); joined: a ``Lattice`` of all edges and options, its edges'
    source and target numbered within their sentence, option global
    (int64), word_offsets global.
    """

    edge_offsets: np.ndarray
    node_offsets: np.ndarray
    option_offsets: np.ndarray
    joined: Lattice

    @classmethod
    def concatenate(cls, lattices: list[Lattice]) -> "Lattices":
        """The lattices of sentences 0 .. n-1 (at least one), in order."""
        def offsets(sizes):
            return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

        def joined(name):
            return np.concatenate([getattr(x, name) for x in lattices])
        option_offsets = offsets([len(x.start) for x in lattices])
        word_counts = offsets([len(x.words) for x in lattices])
        shift = np.repeat(option_offsets[:-1], [x.n_edges for x in lattices])
        word_offsets = np.concatenate([[0]] + [x.word_offsets[1:] + word_counts[i] for i, x in enumerate(lattices)])
        node_offsets = offsets([x.n_nodes for x in lattices])
        return cls(offsets([x.n_edges for x in lattices]), node_offsets, option_offsets, Lattice(
            joined("source"), joined("target"), joined("option").astype(np.int64) + shift, joined("transition"),
            int(node_offsets[-1]), joined("local"), joined("start"), joined("end"), word_offsets.astype(np.int64),
            joined("words"), joined("sentence_option"), lattices[0].columns))

    @property
    def n_sentences(self) -> int:
        return len(self.edge_offsets) - 1

    @property
    def words(self) -> np.ndarray:
        """Every option's output words, concatenated (str[...])."""
        return self.joined.words

    def scores(self, vector: np.ndarray, threads: int | None = None) -> np.ndarray:
        """What each edge adds to a path's ``F . vector``, float64[e] (vector: float64[n_features]); on ``threads``
        threads (default: the cores available), each a block of edges."""
        x = self.joined
        local, rows = self._used_options
        vector = np.ascontiguousarray(vector, dtype=np.float64)
        option_scores, weights = project(local, vector), np.ascontiguousarray(vector[x.columns])
        out = np.empty(x.n_edges)
        bounds = np.linspace(0, x.n_edges, _threads(threads, max(1, x.n_edges // MIN_BLOCK)) + 1).astype(np.int64)
        _map(lambda block: edge_scores(option_scores, rows, x.transition, weights, *block, out),
             list(zip(bounds[:-1], bounds[1:])))
        return out

    @cached_property
    def _used_options(self) -> tuple[np.ndarray, np.ndarray]:
        """``(local float64[u, n_features], rows int64[e])``: the local features of the u options some edge uses
        and each edge's row among them. The lattices ``near`` keeps share every option of the whole though their
        edges use few (about a tenth near the point), so ``scores`` computes only those options' local scores;
        when every option is used, the joined arrays themselves."""
        x = self.joined
        used = np.zeros(len(x.local), dtype=np.bool_)
        used[x.option] = True
        if used.all():
            return x.local, x.option
        return np.ascontiguousarray(x.local[used]), (np.cumsum(used) - 1)[x.option]

    def near(self, a: np.ndarray, margin: float, threads: int | None = None) -> "Lattices":
        """The lattices of the edges on some complete path whose score is within ``margin`` of its sentence's best,
        where an edge adds ``a`` (float64[e], e.g. ``scores(w)``) to a path's score; every sentence keeps its best
        paths under ``a``. The options are shared, not copied (``option`` keeps its numbers). On ``threads``
        threads, each a block of sentences."""
        x = self.joined
        keep = np.empty(x.n_edges, dtype=np.bool_)
        source, target = np.empty(x.n_edges, dtype=np.int32), np.empty(x.n_edges, dtype=np.int32)
        counts = np.empty((self.n_sentences, 2), dtype=np.int64)
        a = np.ascontiguousarray(a, dtype=np.float64)
        _map(lambda block: near_edges(self.edge_offsets, self.node_offsets, x.source, x.target, a, float(margin),
                                      *block, keep, source, target, counts), self._sentence_blocks(threads))
        kept = np.flatnonzero(keep)
        node_offsets = np.concatenate([[0], np.cumsum(counts[:, 0])]).astype(np.int64)
        return Lattices(np.concatenate([[0], np.cumsum(counts[:, 1])]).astype(np.int64), node_offsets,
                        self.option_offsets, replace(x, source=source[kept], target=target[kept], option=x.option[kept],
                                                     transition=x.transition[kept], n_nodes=int(node_offsets[-1])))

    def _sentence_blocks(self, threads: int | None) -> list[tuple[int, int]]:
        """Blocks of consecutive sentences of about as many edges, one for each of ``threads`` threads."""
        n = _threads(threads, self.n_sentences)
        bounds = np.searchsorted(self.edge_offsets, np.linspace(0, self.joined.n_edges, n + 1)[1:-1])
        bounds = np.unique(np.concatenate([[0], bounds, [self.n_sentences]]))
        return list(zip(bounds[:-1], bounds[1:]))

    def envelopes(self, a: np.ndarray, b: np.ndarray, word_ids: np.ndarray, low: float = -np.inf,
                  high: float = np.inf, threads: int | None = None, samples: int | None = None,
                  rounds: int = 0) -> Envelopes:
        """Each sentence's upper envelope of ``A + gamma * B`` over its complete paths, where an edge adds
        ``a`` to A and ``b`` to B (float64[e], e.g. ``scores(w)``, ``scores(d)``), for ``low <= gamma <= high``
        (lines highest only outside are dropped; on a bounded segment, so are the lines that stay below the
        best paths at ``samples`` points of it, default ``SAMPLES``, and at the points where ``rounds`` rounds
        split each sentence's segment where its best paths change, ``_lattice_point_kernels``; any number of
        either gives the same envelopes).
        word_ids: int32[len(words)], the ids the paths' words are read out as (``_lattice_kernels.envelopes``).
        On ``threads`` threads (default: the cores available), each a block of sentences of about as many
        edges; the result does not depend on their number."""
        x = self.joined
        a, b = np.ascontiguousarray(a, dtype=np.float64), np.ascontiguousarray(b, dtype=np.float64)
        word_ids = np.asarray(word_ids, dtype=np.int32)
        low, high = float(low), float(high)
        samples = SAMPLES if samples is None else samples
        bounded = np.isfinite(low) and np.isfinite(high) and samples > 0
        gammas = np.linspace(low, high, samples) if bounded else np.zeros(0)
        parts = _map(lambda block: envelopes(self.edge_offsets, self.node_offsets, x.source, x.target, a, b, x.option,
                                             x.word_offsets, word_ids, low, high, gammas, rounds, *block),
                     self._sentence_blocks(threads))
        return Envelopes(_joined_offsets([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
                         np.concatenate([p[2] for p in parts]), _joined_offsets([p[3] for p in parts]),
                         np.concatenate([p[4] for p in parts]))


#: the fewest edges worth a thread of their own in ``Lattices.scores``
MIN_BLOCK = 100_000

#: sample points of a bounded segment at which a line search finds every node's best completion, to drop the
#: lines that cannot reach the envelope before sweeping (``_lattice_kernels.envelopes``; 0: no pruning)
SAMPLES = 5
#: along a coordinate direction, rounds of splitting each sentence's segment where its best paths change
#: (``_lattice_point_kernels``): the segment in a climb is long (up to ``max_step`` in one weight, whose slope
#: is a raw feature), so that the best paths change often between points far apart and most lines survive
#: the pruning at ``SAMPLES`` points alone; a random direction's short segment prunes well without
#: (docs/tuning-results.md)
COORDINATE_ROUNDS = 2


def _threads(threads: int | None, items: int) -> int:
    return max(1, min(available_cores() if threads is None else threads, items))


def _map(work, blocks: list) -> list:
    """``[work(block) for block in blocks]``, each on its own thread when there are several (the kernels
    release the GIL)."""
    if len(blocks) == 1:
        return [work(blocks[0])]
    with ThreadPoolExecutor(len(blocks), thread_name_prefix="pbmt-lattice") as pool:
        return list(pool.map(work, blocks))


def _joined_offsets(parts: list[np.ndarray]) -> np.ndarray:
    """CSR offsets of consecutive blocks (each int64[n_i + 1] from 0) as one array."""
    shifts = np.cumsum([0] + [p[-1] for p in parts[:-1]])
    return np.concatenate([[0]] + [p[1:] + shift for p, shift in zip(parts, shifts)]).astype(np.int64)


def graph_transitions(graph: SearchGraph, options: TranslationOptions, model: TranslationModel
                      ) -> tuple[np.ndarray, np.ndarray]:
    """``(transition float64[n, c], columns int64[c])``: the values every hypothesis's block adds in the columns
    of the model's transition features (``hypothesis_transitions``; the sparse ones left out, as
    ``score_derivation`` leaves them)."""
    tr = transitions(model, options, sparse=False)
    columns = np.array(sorted({c for slot in (*tr.stateful, *tr.stateless)
                               for c in range(slot.col, slot.col + slot.n_cols)}), dtype=np.int64)
    values = hypothesis_transitions(tr, graph.parent, graph.option, graph.klass, graph.final_class, options.start,
                                    options.end, model.layout.size)
    return values[:, columns], columns


def hypothesis_features(graph: SearchGraph, options: TranslationOptions, model: TranslationModel) -> np.ndarray:
    """The dense features each hypothesis adds to its parent's, float64[n, n_features] (row 0, the start: zero).

    ``model.weights @`` their sums along parent pointers is the graph's
    ``score`` for a model without sparse features.
    """
    values, columns = graph_transitions(graph, options, model)
    out = options.local[graph.option]
    out[:, columns] += values
    out[0] = 0.0
    return out


def graph_lattice(graph: SearchGraph, options: TranslationOptions, model: TranslationModel) -> Lattice:
    """The lattice of a search graph with a complete hypothesis (``graph.final_class >= 0``), options
    restricted to those its edges use. A sentence of no words is one node and no edge."""
    values, columns = graph_transitions(graph, options, model)
    hyp, source, target, n_nodes = live_edges(graph.parent, graph.option, graph.klass, graph.final_class,
                                              options.start, options.end)
    option = graph.option[hyp]
    used = np.unique(option)
    lengths = np.diff(options.tgt_offsets)[used]
    word_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    ids = (np.concatenate([options.target(o) for o in used]) if len(used) else np.zeros(0, np.int64))
    words = np.array(options.vocab.words(ids), dtype=str)
    return Lattice(source, target, np.searchsorted(used, option).astype(np.int32), values[hyp], int(n_nodes),
                   options.local[used], options.start[used], options.end[used], word_offsets, words,
                   used.astype(np.int32), columns)

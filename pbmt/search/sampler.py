"""Gibbs sampling over derivations, and decoding by sampling and annealing.

The sampler of Arun et al. (2009) as SampleRank uses it (Haddow, Arun & Koehn
2011, §2.2). A chain always holds one complete derivation of the sentence. A
step picks an operator and a place at random, lists the operator's
neighbourhood there (the current derivation is one of its members) and moves
to a member drawn with probability ∝ exp(score / T):

- MERGE-SPLIT at the boundary before source word i: if i is inside a block,
  that block whole or split at i; if two blocks meet at i and are adjacent and
  monotone in the target, those two or their merge; otherwise the two blocks
  in place. Every block involved takes every option of its span.
- REORDER of the blocks at two target positions: as they are, or swapped.
- RETRANS of one block with every option of its span.

Each neighbourhood is the same set from each of its members and the place is
drawn uniformly from a set (source boundaries, target positions or pairs of
them) that its moves do not change, so every operator leaves exp(score / T)
invariant. Members that break the decoder's distortion rules (Moses's, as in
``pbmt.search.decoder``) are left out, so chains stay in the decoder's space.

Every member comes with its feature delta vector (dense features computed in
numba from what changed, then any global features), which is what SampleRank
updates with. Global (sentence- or document-level) features are
``pbmt.search.hypothesis.DocumentFeature`` objects (``pbmt.features``
implements them): the decoders cannot use them, the sampler scores them as
extra feature columns after the model's dense ones, from their incremental
``delta``, and shows them a neighbourhood as ``NeighbourhoodCandidates``. A
chain's global values are those of its document
(``pbmt.search.hypothesis.DocumentScores``): a document of its sentence
alone, or one shared by the chains of a document's sentences
(``pbmt.search.document_decoder``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cached_property
from enum import IntEnum
from typing import Sequence

import numpy as np

from pbmt.base.errors import PbmtError
from pbmt.model.lm import LMCache
from pbmt.model.model import TranslationModel
from pbmt.search import _sampler_kernels as k
from pbmt.search._neighbour_kernels import neighbour_words
from pbmt.search.decoder import ScoredDerivation, decode
from pbmt.search.derivation import Derivation, score_derivation, sparse_score
from pbmt.search.hypothesis import DocumentFeature, DocumentScores, Hypothesis, score_document
from pbmt.search.options import TranslationOptions
from pbmt.search.transitions import transitions

SPARSE_COLUMN = "Sparse0"  # the weighted sparse features' column, when the model has sparse features
_CHUNK = 1 << 16  # steps per kernel call: bounds the memory of uniforms and recorded samples
DECISIONS = ("best", "max-derivation", "max-translation")


class Operator(IntEnum):
    """The sampler's operators (values are the kernels')."""

    MERGE_SPLIT = k.MERGE_SPLIT
    REORDER = k.REORDER
    RETRANS = k.RETRANS


@dataclass(frozen=True, eq=False)
class Neighbourhood:
    """The derivations one operator application can move to, with their feature deltas.

    Candidate ``c`` is ``base`` with its blocks at target positions
    ``lo .. hi - 1`` replaced by option ``first[c]`` alone when
    ``second[c] < 0``, else by ``first[c]``, ``base``'s blocks
    ``mid_lo .. mid_hi - 1`` and ``second[c]``. ``delta[c]``
    (``float64[n_candidates, n_features]``, natural log; the model's dense
    features, then ``Sparse0``, its weighted sparse features, when it has
    them, then the global ones) is its feature vector minus ``base``'s;
    ``score[c] = delta[c] @ weights``. ``current`` is the index of ``base``
    itself (its delta is zero). ``operator`` is None when the drawn operator
    could not apply (then ``base`` is the only candidate).
    """

    operator: Operator | None
    base: Derivation
    lo: int
    hi: int
    mid_lo: int
    mid_hi: int
    first: np.ndarray
    second: np.ndarray
    delta: np.ndarray
    score: np.ndarray
    current: int
    options: TranslationOptions = field(repr=False)
    chain_moves: int = field(repr=False)
    candidates: NeighbourhoodCandidates | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.first)

    def derivation(self, c: int) -> Derivation:
        """Candidate ``c`` as a ``Derivation``."""
        if c == self.current:
            return self.base
        base = self.base.option
        new = [self.first[c]]
        if self.second[c] >= 0:
            new += [*base[self.mid_lo:self.mid_hi], self.second[c]]
        return Derivation.from_options(self.options, np.concatenate([base[:self.lo], new, base[self.hi:]]))

    def derivations(self) -> list[Derivation]:
        """Every candidate, in index order."""
        return [self.derivation(c) for c in range(len(self))]

    @cached_property
    def target_words(self) -> tuple[np.ndarray, np.ndarray]:
        """Every candidate's target words as CSR: (``int64[len + 1]`` offsets, ``int32`` word ids)."""
        return neighbour_words(self.base.option, self.lo, self.hi, self.mid_lo, self.mid_hi, self.first,
                               self.second, self.options.tgt_offsets, self.options.tgt_words)


class NeighbourhoodCandidates:
    """The members of a neighbourhood as global features see them (``pbmt.search.hypothesis.Candidates``).

    ``current``: the index of the unchanged member. Member ``c`` is the
    current derivation with the blocks of options ``removed`` (the same for
    every member) replaced by the blocks of options ``added(c)``; both cover
    the same source words.
    """

    def __init__(self, neighbourhood: Neighbourhood, model: TranslationModel):
        self.neighbourhood = neighbourhood
        self.model = model
        self.options = neighbourhood.options
        self.current = neighbourhood.current
        nb = neighbourhood
        base = nb.base.option
        kept = set(range(nb.mid_lo, nb.mid_hi))
        self.removed = np.array([base[b] for b in range(nb.lo, nb.hi) if b not in kept], np.int32)
        self._hypotheses: dict[int, Hypothesis] = {}

    def __len__(self) -> int:
        return len(self.neighbourhood)

    def added(self, c: int) -> np.ndarray:
        """Options (``int32[1 or 2]``) member ``c`` puts in place of ``removed``."""
        nb = self.neighbourhood
        if c == nb.current:
            return self.removed
        return np.array([nb.first[c]] if nb.second[c] < 0 else [nb.first[c], nb.second[c]], np.int32)

    def hypothesis(self, c: int) -> Hypothesis:
        """Member ``c`` in full (built once)."""
        if c not in self._hypotheses:
            self._hypotheses[c] = Hypothesis.of(self.neighbourhood.derivation(c), self.options, self.model)
        return self._hypotheses[c]

    def target_words(self) -> tuple[np.ndarray, np.ndarray]:
        """Every member's target words as CSR: (``int64[len + 1]`` offsets, ``int32`` word ids)."""
        return self.neighbourhood.target_words


class Chain:
    """One Markov chain: its current derivation and feature vector, and the kernels' caches.

    Mutable; made by ``Sampler.start`` and moved by ``Sampler.apply`` and
    ``Sampler.run``. ``moves`` counts the moves applied. ``document`` holds
    the global features' values of its document, whose sentence ``index`` it
    is (None without global features).
    """

    def __init__(self, sampler: "Sampler", arrays: k.ChainArrays, document: DocumentScores | None, index: int):
        self._sampler = sampler
        self._arrays = arrays
        self.document = document
        self.index = index
        self.moves = 0

    @property
    def global_values(self) -> np.ndarray:
        """Its document's global feature values, ``float64[sampler.n_features - dense]``."""
        return self.document.values if self.document is not None else np.zeros(0)

    @property
    def derivation(self) -> Derivation:
        """The current derivation."""
        size = int(self._arrays.size[0])
        a = self._arrays
        return Derivation(a.start[:size], a.end[:size], a.option[:size])

    @property
    def features(self) -> np.ndarray:
        """Its features, ``float64[sampler.n_features]``: dense (natural log) then its document's global ones."""
        return np.concatenate([self._arrays.features, self.global_values])

    @property
    def score(self) -> float:
        """Its model score, ``features @ sampler.weights`` (natural log)."""
        return float(self.features @ self._sampler.weights)


@dataclass(frozen=True, eq=False)
class SampleRun:
    """What ``Sampler.run`` collected.

    ``samples`` (``int32[u, n_words]``): the distinct derivations recorded
    (after burn-in, every ``thin``-th step), as options in target order padded
    with -1; ``counts`` (``int64[u]``) how often each was recorded. ``best``
    is the highest-scoring derivation the chain visited (its start included)
    and ``best_score`` its score (from scratch, natural log). With
    ``trace_every`` k > 0, ``trace_steps`` (``int64[t]``: 0, k, 2k, ... and the
    last step) and ``trace_options`` (``int32[t, n_words]``, padded with -1)
    hold the chain's derivation after that many steps, in order (else empty).
    """

    samples: np.ndarray
    counts: np.ndarray
    best: Derivation
    best_score: float
    options: TranslationOptions = field(repr=False)
    trace_steps: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)
    trace_options: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int32), repr=False)

    def trace(self) -> list[tuple[int, Derivation]]:
        """(steps done, the chain's derivation then) of every traced step, in order."""
        return [(int(step), Derivation.from_options(self.options, row[row >= 0]))
                for step, row in zip(self.trace_steps, self.trace_options)]

    def derivations(self) -> list[tuple[Derivation, int]]:
        """(derivation, count) of every distinct sample, most frequent first."""
        order = np.argsort(-self.counts, kind="stable")
        return [(self._derivation(i), int(self.counts[i])) for i in order]

    def max_derivation(self) -> Derivation:
        """The most frequently sampled derivation (Arun et al.'s max-derivation decision)."""
        if not len(self.counts):
            raise ValueError("no samples were recorded (burn-in covers the whole run)")
        return self._derivation(int(np.argmax(self.counts)))

    def max_translation(self) -> Derivation:
        """The most frequent derivation of the most frequently sampled target string."""
        if not len(self.counts):
            raise ValueError("no samples were recorded (burn-in covers the whole run)")
        by_text: dict[bytes, list] = {}
        for i in range(len(self.counts)):
            d = self._derivation(i)
            entry = by_text.setdefault(d.target_words(self.options).tobytes(), [0, -1, None])
            entry[0] += int(self.counts[i])
            if self.counts[i] > entry[1]:
                entry[1:] = [int(self.counts[i]), d]
        return max(by_text.values(), key=lambda e: e[0])[2]

    def _derivation(self, i: int) -> Derivation:
        row = self.samples[i]
        return Derivation.from_options(self.options, row[row >= 0])


class Sampler:
    """Gibbs sampler over the derivations of one sentence under one model.

    ``global_features`` (``pbmt.features``) add columns after the model's
    dense features, weighted by ``global_weights`` (``float64[total
    columns]``, default zeros).
    ``distortion_limit`` defaults to the model's (-1: none).
    ``operator_weights``: relative frequencies of MERGE-SPLIT, REORDER and
    RETRANS. ``lm_cache``: a cache of LM scores to share among the samplers of
    one model (default: a new one). ``weights``
    (``float64[n_features]``) and ``feature_names`` cover dense columns, then
    ``Sparse0`` when the model has sparse features (``pbmt.model.sparse``, both
    families: their weighted sum, weight 1, kept up to date in numba like the
    dense ones, from the decoders' transition form and the block family's
    option-local scores), then global columns.
    """

    def __init__(self, model: TranslationModel, options: TranslationOptions,
                 global_features: Sequence[DocumentFeature] = (), global_weights: np.ndarray | None = None,
                 distortion_limit: int | None = None, operator_weights=(1.0, 1.0, 1.0),
                 lm_cache: LMCache | None = None):
        self.model = model
        self.options = options
        self.global_features = tuple(global_features)
        width = sum(f.size for f in self.global_features)
        global_weights = np.zeros(width) if global_weights is None else np.asarray(global_weights, np.float64)
        if global_weights.shape != (width,):
            raise ValueError(f"expected {width} global weights, got shape {global_weights.shape}")
        layout = model.layout
        sparse = () if model.sparse is None else ((SPARSE_COLUMN, 1),)
        self._dense = layout.size + len(sparse)
        self.weights = np.concatenate([model.weights, np.ones(len(sparse)), global_weights])
        self.feature_names = tuple(f"{name}_{i}" if size > 1 else name
                                   for name, size in [*zip(layout.names, layout.sizes), *sparse,
                                                      *((f.names[0], f.size) for f in self.global_features)]
                                   for i in range(size))
        self.distortion_limit = model.settings.distortion_limit if distortion_limit is None else int(distortion_limit)
        operator_weights = np.asarray(operator_weights, dtype=np.float64)
        if operator_weights.shape != (3,) or operator_weights.min() < 0 or operator_weights.sum() <= 0:
            raise ValueError(f"operator_weights must be 3 non-negative numbers, not all zero; got {operator_weights}")
        self._op_cum = np.cumsum(operator_weights / operator_weights.sum())
        self._n = options.n_words
        local = np.hstack([options.local, np.zeros((len(options), len(sparse)))])
        if model.block_scores is not None:
            local[:, -1] = options.block_scores(model)[0]
        self._opts = k.OptionArrays(options.start, options.end, options.tgt_offsets, options.tgt_words,
                                    np.ascontiguousarray(local), options.span_offsets, int(options.max_length))
        tr = transitions(model, options, lm_cache or LMCache.new(), sparse_col=layout.size if sparse else -1)
        self._scoring = k.Scoring(tr, self.distortion_limit, np.ascontiguousarray(self.weights[:self._dense]))
        self._width, self._n_stateful = len(tr.begin), len(tr.stateful_cols)
        widest = int(np.diff(options.span_offsets).max()) if len(options.span_offsets) > 1 else 1
        cap = widest * widest + widest + 2
        size = max(self._n, 1)
        self._ws = k.Workspace(np.zeros(cap, np.int32), np.zeros(cap, np.int32), np.zeros((cap, self._dense)),
                               np.zeros(cap), np.zeros(cap), np.zeros(7, np.int64), np.zeros((2, 4), np.int64),
                               np.zeros((3, self._width), np.int64),
                               np.zeros((1 << k.MEMO_BITS, self._width), np.int64),
                               np.zeros((1 << k.MEMO_BITS, self._n_stateful)), np.zeros(self._dense),
                               np.zeros(self._dense), np.zeros(self._dense), np.zeros(size, np.int64),
                               np.zeros(1, np.int64), np.zeros(size, np.int32))

    @property
    def n_features(self) -> int:
        """Number of feature columns: the model's dense ones, its weighted sparse score if any, the global ones."""
        return len(self.weights)

    def features(self, derivation: Derivation) -> np.ndarray:
        """Every feature of ``derivation`` (as a document of its own) from scratch, ``float64[n_features]``
        (natural log)."""
        values = score_document([derivation], [self.options], self.model, self.global_features)
        if self.model.sparse is None:
            return values
        size = self.model.layout.size
        return np.concatenate([values[:size], [self._sparse_score(derivation)], values[size:]])

    def _dense_features(self, derivation: Derivation) -> np.ndarray:
        """The columns the kernels keep up to date, from scratch: the model's dense features, then ``Sparse0``."""
        dense = score_derivation(derivation, self.options, self.model)
        return dense if self.model.sparse is None else np.append(dense, self._sparse_score(derivation))

    def _sparse_score(self, derivation: Derivation) -> float:
        """The weighted sparse features of ``derivation``, from scratch (natural log)."""
        return sparse_score(derivation, self.options, self.model)

    def hypothesis(self, derivation: Derivation) -> Hypothesis:
        """``derivation`` as global features see it."""
        return Hypothesis.of(derivation, self.options, self.model)

    def start(self, derivation: Derivation, document: DocumentScores | None = None, index: int = 0) -> Chain:
        """A chain at ``derivation``, which must be one the decoder could produce (ValueError if not).

        ``document``: the global features' state of the document the chain is
        sentence ``index`` of (its hypothesis there must be ``derivation``'s);
        default: a document of this sentence alone.
        """
        self._check(derivation)
        size = max(self._n, 1)
        arrays = k.ChainArrays(np.zeros(size, np.int32), np.zeros(size, np.int32), np.zeros(size, np.int32),
                               np.zeros((size + 1, self._width), np.int64), np.zeros((size, self._n_stateful)),
                               np.zeros(size, np.int32), np.zeros(size, np.int32),
                               np.array([len(derivation)], np.int64), np.zeros(self._n_stateful),
                               self._dense_features(derivation))
        blocks = len(derivation)
        arrays.start[:blocks], arrays.end[:blocks], arrays.option[:blocks] = (
            derivation.src_start, derivation.src_end, derivation.option)
        k.init_chain(arrays, self._opts, self._scoring, self._ws, self._n)
        if document is None and self.global_features:
            document, index = DocumentScores(self.global_features, [self.hypothesis(derivation)]), 0
        return Chain(self, arrays, document, index)

    def neighbourhood(self, chain: Chain, operator: Operator, a: int, b: int = 0) -> Neighbourhood:
        """The neighbourhood of ``operator`` at a place of the chain's derivation.

        MERGE_SPLIT: the boundary before source word ``a`` (0 < a < n_words);
        REORDER: the blocks at target positions ``a < b``; RETRANS: the block
        at target position ``a``.
        """
        operator = Operator(operator)
        blocks, n = int(chain._arrays.size[0]), self._n
        if operator == Operator.MERGE_SPLIT and not 0 < a < n:
            raise ValueError(f"MERGE_SPLIT needs a source boundary 0 < a < {n}, got {a}")
        if operator == Operator.REORDER and not 0 <= a < b < blocks:
            raise ValueError(f"REORDER needs target positions 0 <= a < b < {blocks}, got {a}, {b}")
        if operator == Operator.RETRANS and not 0 <= a < blocks:
            raise ValueError(f"RETRANS needs a target position 0 <= a < {blocks}, got {a}")
        ws = self._ws
        count = k.neighbourhood(chain._arrays, self._opts, self._scoring, ws, n, int(operator), a, b)
        region = ws.region
        lo, hi, mid_lo, mid_hi, current = (int(x) for x in region[k.LO:k.CURRENT + 1])
        nb = Neighbourhood(operator, chain.derivation, lo, hi, mid_lo, mid_hi, ws.first[:count].copy(),
                           ws.second[:count].copy(), ws.delta[:count].copy(), ws.score[:count].copy(), current,
                           self.options, chain.moves)
        if chain.document is None:
            return nb
        candidates = NeighbourhoodCandidates(nb, self.model)
        extra = chain.document.delta(chain.index, candidates)
        extra[current] = 0.0
        return dataclasses.replace(nb, delta=np.hstack([nb.delta, extra]),
                                   score=nb.score + extra @ self.weights[nb.delta.shape[1]:], candidates=candidates)

    def propose(self, chain: Chain, rng: np.random.Generator) -> Neighbourhood:
        """A neighbourhood at a random operator and place (the operators' relative weights as given)."""
        u = rng.random(2)
        return self._propose(chain, u[0], u[1])

    def apply(self, chain: Chain, neighbourhood: Neighbourhood, c: int) -> None:
        """Move ``chain`` to candidate ``c`` of a neighbourhood listed at its current derivation."""
        if neighbourhood.chain_moves != chain.moves:
            raise ValueError("the neighbourhood was listed before the chain's last move")
        if c == neighbourhood.current:
            return
        ws, dense = self._ws, self._dense
        ws.region[:] = (neighbourhood.operator, neighbourhood.lo, neighbourhood.hi, neighbourhood.mid_lo,
                        neighbourhood.mid_hi, -1, 1)
        ws.first[0], ws.second[0] = neighbourhood.first[c], neighbourhood.second[c]
        ws.delta[0] = neighbourhood.delta[c, :dense]
        k.apply(chain._arrays, self._opts, self._scoring, ws, self._n, 0)
        if chain.document is not None:
            chain.document.move(chain.index, neighbourhood.candidates, c, neighbourhood.delta[c, dense:])
        chain.moves += 1

    def run(self, chain: Chain, rng: np.random.Generator, iterations: int, temperature=1.0,
            burn_in: int = 0, thin: int = 1, trace_every: int = 0) -> SampleRun:
        """Run ``chain`` for ``iterations`` steps; record the derivation after every ``thin``-th step past ``burn_in``.

        ``temperature``: a number or ``float64[iterations]`` (a schedule, see
        ``anneal``); 0 moves greedily to the best member of each
        neighbourhood. Without global features the whole loop runs in numba;
        with them, in Python (the same moves for the same generator state).
        ``trace_every`` k > 0 also keeps the chain's derivation at step 0 and
        after every k-th step (``SampleRun.trace``); the moves are the same.
        """
        # a writeable contiguous copy: the kernel is compiled for one array type
        temperature = np.array(np.broadcast_to(np.asarray(temperature, dtype=np.float64), (iterations,)))
        if thin < 1 or burn_in < 0 or trace_every < 0:
            raise ValueError(f"thin must be >= 1, burn_in and trace_every >= 0, got {thin}, {burn_in}, {trace_every}")
        steps = np.arange(iterations)
        record = (steps >= burn_in) & ((steps - burn_in) % thin == 0)
        best = np.full(max(self._n, 1), -1, np.int32)
        size = int(chain._arrays.size[0])
        best[:size] = chain._arrays.option[:size]
        track = np.array([chain.score, chain.score])
        kept = []
        # kernel calls end at chunk boundaries and traced steps; uniforms are drawn in the same order either way
        traced_steps = sorted(set(range(0, iterations, trace_every)) | {iterations}) if trace_every else []
        cuts = sorted(set(range(0, iterations, _CHUNK)) | set(traced_steps) | {iterations})
        traced = np.full((len(traced_steps), max(self._n, 1)), -1, np.int32)
        if trace_every:
            k.copy_options(chain._arrays, traced[0])
        for lo, hi in zip(cuts[:-1], cuts[1:]):
            u = rng.random((hi - lo, 3))
            trace = np.empty((int(record[lo:hi].sum()), max(self._n, 1)), np.int32)
            if chain.document is not None:
                self._run_python(chain, u, temperature[lo:hi], record[lo:hi], trace, track, best)
            else:
                k.run_chain(chain._arrays, self._opts, self._scoring, self._ws, self._n, self._op_cum, u,
                            temperature[lo:hi], record[lo:hi], trace, track, best)
                chain.moves += 1  # the caches moved: neighbourhoods listed before are stale
            kept.append(np.unique(trace, axis=0, return_counts=True))
            if trace_every and (hi % trace_every == 0 or hi == iterations):
                k.copy_options(chain._arrays, traced[traced_steps.index(hi)])
        rows = np.concatenate([rows for rows, _ in kept]) if kept else np.zeros((0, max(self._n, 1)), np.int32)
        counts = np.concatenate([c for _, c in kept]) if kept else np.zeros(0, np.int64)
        samples, inverse = np.unique(rows, axis=0, return_inverse=True)
        counts = np.bincount(inverse.ravel(), weights=counts, minlength=len(samples)).astype(np.int64)
        best_derivation = Derivation.from_options(self.options, best[best >= 0])
        return SampleRun(samples, counts, best_derivation, float(self.features(best_derivation) @ self.weights),
                         self.options, np.array(traced_steps, np.int64), traced)

    def step(self, chain: Chain, u: np.ndarray, temperature: float) -> float:
        """One Gibbs step driven by three uniforms ``u``: returns the change of the chain's score."""
        nb = self._propose(chain, u[0], u[1])
        c = k.choose(nb.score, len(nb), temperature, u[2], self._ws.weight)
        if c == nb.current:
            return 0.0
        self.apply(chain, nb, c)
        return float(nb.score[c])

    def _run_python(self, chain, u, temperature, record, trace, track, best):
        r = 0
        for t in range(len(u)):
            change = self.step(chain, u[t], temperature[t])
            if change:
                track[0] += change
                if track[0] > track[1]:
                    track[1] = track[0]
                    k.copy_options(chain._arrays, best)
            if record[t]:
                k.copy_options(chain._arrays, trace[r])
                r += 1

    def _propose(self, chain, u_op, u_where):
        op, a, b = k.choose_move(u_op, u_where, self._op_cum, self._n, int(chain._arrays.size[0]))
        if op < 0:
            return Neighbourhood(None, chain.derivation, 0, 0, 0, 0, np.array([-1], np.int32),
                                 np.array([-1], np.int32), np.zeros((1, self.n_features)), np.zeros(1), 0,
                                 self.options, chain.moves)
        return self.neighbourhood(chain, Operator(op), a, b)

    def _check(self, derivation):
        options, n = self.options, self._n
        o = derivation.option
        if len(o) and (o.min() < 0 or o.max() >= len(options)):
            raise ValueError("the derivation's options are not this sentence's")
        if (not np.array_equal(options.start[o], derivation.src_start)
                or not np.array_equal(options.end[o], derivation.src_end) or not derivation.covers(n)):
            raise ValueError("the derivation's spans do not match its options or do not cover the sentence once")
        limit = self.distortion_limit
        covered = np.zeros(n, bool)
        prev_end = 0
        for s, e in zip(derivation.src_start, derivation.src_end):
            gap = int(np.argmin(covered)) if not covered.all() else n
            if limit >= 0 and (abs(s - prev_end) > limit or (s != gap and e - gap > limit)):
                raise ValueError(f"block [{s}, {e}) breaks the distortion limit {limit}")
            covered[s:e] = True
            prev_end = e


def gloss(options: TranslationOptions) -> Derivation:
    """The glossing derivation SampleRank starts from: monotone, each source word's best option.

    Each block takes the option of its span with the best option-local
    weighted score (``options.local_score``). Words are translated alone where
    they have options; elsewhere the monotone segmentation with the most
    blocks is used. Raises PbmtError if no monotone derivation exists.
    """
    n = options.n_words
    blocks = np.full(n + 1, -1, np.int64)
    score = np.full(n + 1, -np.inf)
    back = np.full(n + 1, -1, np.int64)
    blocks[0], score[0] = 0, 0.0
    for j in range(1, n + 1):
        for i in range(max(0, j - options.max_length), j):
            span = options.span(i, j)
            if blocks[i] < 0 or not len(span):
                continue
            o = span.start + int(np.argmax(options.local_score[span.start:span.stop]))
            key = (blocks[i] + 1, score[i] + options.local_score[o])
            if key > (blocks[j], score[j]):
                blocks[j], score[j], back[j] = key[0], key[1], o
    if blocks[n] < 0:
        raise PbmtError("no monotone derivation covers the sentence with the model's phrases")
    chosen = []
    j = n
    while j > 0:
        chosen.append(int(back[j]))
        j = int(options.start[back[j]])
    return Derivation.from_options(options, chosen[::-1])


def initial_derivation(model: TranslationModel, options: TranslationOptions, init: str = "gloss") -> Derivation:
    """Where a chain starts: ``"gloss"`` (see ``gloss``) or ``"decoder"`` (the stack decoder's 1-best)."""
    if init == "gloss":
        return gloss(options)
    if init == "decoder":
        found = decode(model, options)
        if not found:
            raise PbmtError("the decoder found no derivation to start from")
        return found[0].derivation
    raise ValueError(f"init must be 'gloss' or 'decoder', got {init!r}")


def anneal(iterations: int, start: float, end: float) -> np.ndarray:
    """A geometric temperature schedule from ``start`` to ``end`` (both > 0): ``float64[iterations]``."""
    if start <= 0 or end <= 0:
        raise ValueError(f"annealing temperatures must be positive, got {start} and {end}")
    return np.geomspace(start, end, iterations) if iterations > 1 else np.full(iterations, float(end))


def sample_decode(model: TranslationModel, options: TranslationOptions, rng: np.random.Generator,
                  iterations: int = 1000, burn_in: int = 0, temperature=1.0, init: str = "gloss",
                  decision: str = "best", global_features: Sequence[DocumentFeature] = (),
                  global_weights: np.ndarray | None = None, thin: int = 1,
                  lm_cache: LMCache | None = None, trace: list | None = None,
                  trace_every: int = 10) -> ScoredDerivation:
    """Decode one sentence by sampling: a decoder for models with global features.

    Runs one chain from ``init`` for ``iterations`` steps at ``temperature``
    (a number, or a schedule from ``anneal`` for annealed search; 0 is greedy
    hill-climbing). ``decision``: ``"best"``, the highest-scoring derivation
    visited; ``"max-derivation"``, the most frequent sample after
    ``burn_in``; ``"max-translation"``, the most frequent target string's
    most frequent derivation. The score is the model's (dense and global
    features, natural log), from scratch. ``lm_cache``: see ``Sampler``.
    ``trace``: a list to which ``(steps done, derivation, score)`` of the
    chain at step 0 and after every ``trace_every`` steps are appended (the
    result does not change).
    """
    if decision not in DECISIONS:
        raise ValueError(f"decision must be one of {DECISIONS}, got {decision!r}")
    sampler = Sampler(model, options, global_features, global_weights, lm_cache=lm_cache)
    chain = sampler.start(initial_derivation(model, options, init))
    # the best derivation is tracked without recording samples
    run = sampler.run(chain, rng, iterations, temperature, burn_in=iterations if decision == "best" else burn_in,
                      thin=thin, trace_every=trace_every if trace is not None else 0)
    if trace is not None:
        trace.extend((step, d, float(sampler.features(d) @ sampler.weights)) for step, d in run.trace())
    if decision == "best":
        return ScoredDerivation(run.best, run.best_score)
    chosen = run.max_derivation() if decision == "max-derivation" else run.max_translation()
    return ScoredDerivation(chosen, float(sampler.features(chosen) @ sampler.weights))

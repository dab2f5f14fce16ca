"""The operation sequence model (Durrani, Schmid & Fraser 2011; Durrani et al. 2013), Moses's
``OpSequenceModel`` feature.

The model is an n-gram model over the operations that generate a sentence
pair, source and target together, in target order. A *cept* is a minimal
translation unit: a connected component of the word alignment (all the source
and target words linked to one another). The operations are spelt as Moses's
operation corpora spell them, so that a model ``pbmt train --osm`` makes loads
in Moses and one Moses's ``OSM-Train.perl`` makes loads here:

- Generate (X, Y): ``_TRANS_<Y>_TO_<X>``, a cept's target words Y and source
  words X (each side's words in order, joined by ``^_^``); it generates X's
  first word.
- Continue Source Cept: ``_CONT_CEPT_``, each further source word of a cept
  (after the reordering operations that reach it, if its words are apart).
- Generate Identical: ``_TRANS_SLF_``: in training, a one-to-one cept of a word
  and its identical copy whose source word is linked nowhere else in the
  corpus; in decoding, an unknown word passed through.
- Generate Source Only (X): ``_INS_<X>``, a source word linked to nothing.
- Generate Target Only (Y): ``_DEL_<Y>``, a target word linked to nothing.
- Insert Gap: ``_INS_GAP_``, leave the current source position for later.
- Jump Back (n): ``_JMP_BCK_<n>``, to the n-th open gap counted from the
  right (the one closest before the next source word).
- Jump Forward: ``_JMP_FWD_``, from inside a gap to the rightmost source
  position generated so far.

The feature (``OpSequenceModel``, five columns as Moses's): the operations'
log10 probability under the n-gram model (from ``<s>``, no ``</s>``: Moses
scores none; log10, not natural log, as Moses's n-best lists show it), the
gap width (at each Generate and Generate Source Only, the distance from the
first source word not yet generated), the number of generations that open a
gap, the open gaps summed after each generated source word, and the number of
source words generated alone (Moses calls them deletions). ``support-features=no``
on the line keeps the first column alone, as in Moses.

In a phrase-based search each block generates the operations of its phrase
pair's cepts (``Generator.phrase``: Moses's decoder's order, which differs from
the training corpus's only in where a source word linked to nothing at the
start of a phrase is generated). The search kernels (``_osm_kernels``) keep
the n-gram state, the source position, the frontier and a copy of the
coverage as the feature's state; the open gaps follow from them. Its estimate of a
phrase pair for pruning and future costs is Moses's: the pair's operations
alone, from position 0 and the empty n-gram context (``OpSequenceModel.estimate``).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from pbmt.base.config import Feature, MosesConfig
from pbmt.base.errors import FormatError, PbmtError
from pbmt.base.vocab import Vocab
from pbmt.model._osm_kernels import (CONTINUE, GENERATE, MAX_WORDS, SOURCE_ONLY, TARGET_ONLY, WORDS, OSMData,
                                     osm_estimates)
from pbmt.model.features import FeatureFunction, register
from pbmt.model.lm import LMCache, NgramLM
from pbmt.model.phrase_table import PhrasePairs

__all__ = ["CONTINUE", "GENERATE", "SOURCE_ONLY", "TARGET_ONLY", "Generator", "OpSequenceModel", "cepts", "program"]

JOIN = "^_^"  # between the words of one side of a cept
GAP = "_INS_GAP_"
CONTINUE_CEPT = "_CONT_CEPT_"
IDENTICAL = "_TRANS_SLF_"
JUMP_FORWARD = "_JMP_FWD_"


def generate(target: Sequence[str], source: Sequence[str]) -> str:
    """The Generate operation of a cept with ``target`` and ``source`` words (each in sentence order)."""
    return f"_TRANS_{JOIN.join(target)}_TO_{JOIN.join(source)}"


def source_only(word: str) -> str:
    """Generate Source Only: a source word linked to nothing."""
    return f"_INS_{word}"


def target_only(word: str) -> str:
    """Generate Target Only: a target word linked to nothing."""
    return f"_DEL_{word}"


def jump_back(n: int) -> str:
    """Jump Back to the ``n``-th open gap from the right (n >= 1)."""
    return f"_JMP_BCK_{n}"


def cepts(n_src: int, n_tgt: int, links: Iterable[tuple[int, int]]) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """The cepts of an aligned pair: ``(source positions, target positions)``, each sorted, one per connected
    component of the ``(source, target)`` links, ordered by their first target position. Words linked to
    nothing are in none."""
    parent = list(range(n_src + n_tgt))  # union-find over source words, then target words

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    linked = set()
    for i, j in links:
        parent[root(i)] = root(n_src + j)
        linked.update((i, n_src + j))
    members: dict[int, tuple[list[int], list[int]]] = {}
    for x in sorted(linked):
        side = members.setdefault(root(x), ([], []))
        if x < n_src:
            side[0].append(x)
        else:
            side[1].append(x - n_src)
    return sorted(((tuple(s), tuple(t)) for s, t in members.values()), key=lambda cept: cept[1][0])


@dataclass
class Generator:
    """Where the generation of a sentence's source side stands, the operations so far and Moses's four counts.

    ``j``: the next source position; ``frontier``: one past the rightmost position generated (Moses's E);
    ``generated``: the positions generated; ``gaps``: the open gaps (sorted positions); the counts are the
    feature's columns 1 to 4 (module docstring). One definition for the training corpus
    (``pbmt.train.osm.operation_sequence``) and a from-scratch reference of the search kernels (``phrase``).
    """

    j: int = 0
    frontier: int = 0
    generated: set[int] = field(default_factory=set)
    gaps: list[int] = field(default_factory=list)
    operations: list[str] = field(default_factory=list)
    gap_width: int = 0
    gap_count: int = 0
    open_gaps: int = 0
    source_alone: int = 0

    def _open_gap(self) -> None:
        self.operations.append(GAP)
        if self.j not in self.gaps:
            bisect.insort(self.gaps, self.j)

    def move(self, position: int) -> bool:
        """The reordering operations that bring the generation to source ``position``: a gap is left where the
        current position is not generated; forward past the frontier directly, else a jump to the frontier;
        backward, a jump to the closest open gap at or before ``position`` (closed if it is ``position``).
        Returns whether a gap was opened."""
        before = len(self.operations)
        if self.j < position:
            if self.j not in self.generated:
                self._open_gap()
            if self.j == self.frontier:
                self.j = position
            else:
                self.operations.append(JUMP_FORWARD)
                self.j = self.frontier
        if position < self.j:
            if self.j < self.frontier and self.j not in self.generated:
                self._open_gap()
            k = bisect.bisect_right(self.gaps, position) - 1  # the closest open gap at or before position
            self.operations.append(jump_back(len(self.gaps) - k))
            self.j = self.gaps[k]
            if self.j == position:
                del self.gaps[k]
        if self.j < position:
            self._open_gap()
            self.j = position
        return GAP in self.operations[before:]

    def emit(self, operation: str) -> None:
        """Generate the source word at the current position with ``operation``."""
        self.operations.append(operation)
        self.generated.add(self.j)
        self.j += 1
        self.frontier = max(self.frontier, self.j)

    def step(self, position: int, operation: str, kind: int) -> None:
        """Move to ``position`` and generate it with ``operation`` (``kind``: GENERATE, CONTINUE or
        SOURCE_ONLY), counting as Moses's decoder counts."""
        opened = self.move(position)
        if kind != CONTINUE:
            self.gap_width += position - min(set(range(position + 1)) - self.generated)
        self.source_alone += kind == SOURCE_ONLY
        self.emit(operation)
        self.gap_count += opened
        self.open_gaps += len(self.gaps)

    def phrase(self, start: int, src: Sequence[str], tgt: Sequence[str], links: Iterable[tuple[int, int]],
               unknown: bool = False) -> None:
        """The operations of a block: the phrase pair ``src``/``tgt`` (words; ``links`` (source, target)
        positions within it) over source positions ``start`` .. ``start + len(src) - 1``, as Moses's decoder
        generates them: a source word linked to nothing first if it starts the phrase, then each cept in
        target order, each source word linked to nothing right after the word before it, each target word
        linked to nothing after the cept before it. ``unknown``: an unknown word passed through (Generate
        Identical)."""
        for kind, position, operation in program(src, tgt, links, unknown):
            if kind == TARGET_ONLY:
                self.operations.append(operation)
            else:
                self.step(start + position, operation, kind)


def program(src: Sequence[str], tgt: Sequence[str], links: Iterable[tuple[int, int]], unknown: bool = False
            ) -> list[tuple[int, int, str]]:
    """A phrase pair's steps in Moses's decoder's order (``Generator.phrase``): ``(kind, source position in the
    phrase (-1 for TARGET_ONLY), operation)``, the reordering operations between them left to the search."""
    links = list(links)
    units = cepts(len(src), len(tgt), links)
    unlinked_src = set(range(len(src))) - {i for i, _ in links}
    unlinked_tgt = set(range(len(tgt))) - {j for _, j in links}
    steps: list[tuple[int, int, str]] = []
    apart: set[int] = set()  # target words of a cept that are not next to its first ones

    def source_only_run(i: int) -> None:
        while i in unlinked_src:
            steps.append((SOURCE_ONLY, i, source_only(src[i])))
            i += 1

    def target_only_run(t: int) -> None:
        while t in apart:
            t += 1
        while t in unlinked_tgt:
            steps.append((TARGET_ONLY, -1, target_only(tgt[t])))
            t += 1
            while t in apart:
                t += 1

    source_only_run(0)
    target_only_run(0)
    for source, target in units:
        run_end = target[0]
        for t in target[1:]:
            if t == run_end + 1:
                run_end = t
            else:
                apart.add(t)
        first = IDENTICAL if unknown else generate([tgt[t] for t in target], [src[i] for i in source])
        for k, i in enumerate(source):
            steps.append((GENERATE if k == 0 else CONTINUE, i, first if k == 0 else CONTINUE_CEPT))
            source_only_run(i + 1)
        target_only_run(run_end + 1)
    return steps


@register
class OpSequenceModel(FeatureFunction):
    """Moses's ``OpSequenceModel path=FILE`` line: an n-gram model of operations (ARPA, plain or gzip) and
    its five columns (one with ``support-features=no``); see the module docstring."""

    moses_name = "OpSequenceModel"
    scores_transitions = True

    def __init__(self, spec: Feature, config: MosesConfig, vocab: Vocab):
        super().__init__(spec, config, vocab)
        where = config.path or "moses.ini"
        if spec.n_scores not in (1, 5):
            raise FormatError(where, spec.line, f"{spec.name}: an OpSequenceModel has 5 features (1 with "
                              f"support-features=no), not {spec.n_scores}")
        if spec.args.get("support-features", "yes") not in ("yes", "no"):
            raise FormatError(where, spec.line, f"{spec.name}: support-features must be yes or no, not "
                              f"{spec.args['support-features']!r}")
        if (spec.args.get("support-features") == "no") != (spec.n_scores == 1):
            raise FormatError(where, spec.line, f"{spec.name}: support-features=no goes with num-features=1, "
                              "support-features=yes with 5")
        self.operations = Vocab()
        self.lm = NgramLM.load(config.resolve(spec.args["path"]), self.operations)
        self.which = config.features.index(spec)  # its key in the LM score cache
        self.estimate_files = (config.resolve(spec.args["path"]),)
        self.state_width = 3 + WORDS
        ids = self.operations.ids
        self.fixed = ids([GAP, JUMP_FORWARD, CONTINUE_CEPT], add=False)  # _osm_kernels.GAP, FORWARD, CONTINUE_CEPT
        self.jumps = ids([jump_back(n) for n in range(MAX_WORDS + 1)], add=False)
        self._programs: dict[tuple, tuple[list, list, list]] = {}  # a phrase pair's steps (sentence_data)

    def begin_state(self) -> np.ndarray:
        """The n-gram state after ``<s>``, source position and frontier 0, nothing covered."""
        state = np.zeros(self.state_width, dtype=np.int64)
        state[0] = self.lm.begin_state
        return state

    def sentence_data(self, options, cache) -> OSMData:
        """Each option's steps (``program``) with their operations' ids, and the fixed operations' ids."""
        if options.n_words > MAX_WORDS:
            raise PbmtError(f"{self.name}: the operation sequence model takes sentences of up to {MAX_WORDS} "
                            f"words, this one has {options.n_words}")
        words = options.vocab.words
        source = words(options.sentence)
        kinds, positions, ops, offsets = [], [], [], [0]
        for o in range(len(options)):
            start, end = int(options.start[o]), int(options.end[o])
            steps = self._steps(tuple(source[start:end]), tuple(words(options.target(o))),
                                options.align[options.align_offsets[o]:options.align_offsets[o + 1]],
                                options.is_unknown(o))
            kinds += steps[0]
            positions += [start + p if p >= 0 else -1 for p in steps[1]]
            ops += steps[2]
            offsets.append(len(kinds))
        return self._data(cache.entries, offsets, kinds, positions, ops)

    def estimate(self, pairs: PhrasePairs) -> np.ndarray:
        """Moses's estimate of a phrase pair (its ``EvaluateInIsolation``): the pair's steps alone, generated
        from source position 0 with nothing covered and scored from the empty n-gram context (no ``<s>``),
        and the counts they make: ``float64[len(pairs), n_scores]``, the columns' units."""
        src, tgt = pairs.vocab.words(pairs.src_words), pairs.vocab.words(pairs.tgt_words)
        src_at, tgt_at, links_at = (x.tolist() for x in (pairs.src_offsets, pairs.tgt_offsets, pairs.align_offsets))
        kinds, positions, ops, offsets = [], [], [], [0]
        for k in range(len(pairs)):
            steps = self._steps(tuple(src[src_at[k]:src_at[k + 1]]), tuple(tgt[tgt_at[k]:tgt_at[k + 1]]),
                                pairs.align[links_at[k]:links_at[k + 1]], bool(pairs.unknown[k]))
            kinds += steps[0]
            positions += steps[1]
            ops += steps[2]
            offsets.append(len(kinds))
        out = np.zeros((len(pairs), self.n_scores))
        osm_estimates(self._data(LMCache.new().entries, offsets, kinds, positions, ops), self.state_width, out)
        return out

    def _steps(self, src: tuple[str, ...], tgt: tuple[str, ...], links: np.ndarray, unknown: bool
               ) -> tuple[list[int], list[int], list[int]]:
        """A phrase pair's steps (``program``; ``links`` ``int16[m, 2]``) as their kinds, source positions within
        the pair (-1: target only) and operation ids, kept for the next sentences (up to ``_PROGRAMS`` pairs)."""
        key = (src, tgt, links.tobytes(), unknown)
        steps = self._programs.get(key)
        if steps is None:
            made = program(src, tgt, links.tolist(), unknown)
            steps = ([kind for kind, _, _ in made], [position for _, position, _ in made],
                     self.operations.ids([name for _, _, name in made], add=False).tolist())
            if len(self._programs) < _PROGRAMS:
                self._programs[key] = steps
        return steps

    def _data(self, cache: np.ndarray, offsets: list[int], kinds: list[int], positions: list[int],
              ops: list[int]) -> OSMData:
        """The kernels' data of options whose steps are ``offsets`` .. (CSR), scored through ``cache``."""
        return OSMData(self.lm.arrays, cache, self.which, np.array(offsets, dtype=np.int64),
                       np.array(kinds, dtype=np.int8), np.array(positions, dtype=np.int32),
                       np.array(ops, dtype=np.int32), self.fixed, self.jumps, self.n_scores)


_PROGRAMS = 1 << 18  # phrase pairs whose steps a feature keeps, so that a tuning set's decodes make each once

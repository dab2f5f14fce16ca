"""How one sentence was translated, for teaching and debugging.

``explain`` decodes a sentence and keeps everything a reader needs: the
translation options of every span, the future-cost table, the search graph,
the best derivation and each block's feature contributions.
``hypothesis_table`` reads from the search graph where every hypothesis
stood: its coverage, future cost, and whether it was expanded, recombined,
or pruned by the stack size (histogram) or the beam threshold.
``explanation_data`` puts all of it in one JSON-ready dict (what ``pbmt
serve``'s ``/explain`` returns and its page shows); ``pbmt.search.explain_views``
shows it as text, HTML and a Graphviz graph.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pbmt.base.feature_labels import column_labels
from pbmt.base.markup import Markup
from pbmt.model.model import SearchSettings, TranslationModel
from pbmt.search._decoder_kernels import STAT_NAMES
from pbmt.model.moses_features import msd_orientation
from pbmt.search.decoder import ScoredDerivation, SearchGraph, best_paths, search
from pbmt.search.derivation import Derivation, Orientation, score_derivation
from pbmt.search.forced import ForcedDecoder
from pbmt.search.options import UNKNOWN, TranslationOptions
from pbmt.search.output import target_text, word_alignment

MSD_NAMES = ("monotone", "swap", "discontinuous")
# what became of a hypothesis in its stack (HypothesisTable.status)
STATUS_NAMES = ("expanded", "recombined", "histogram-pruned", "beam-pruned", "complete")
# the keys of a stack's counts in ``explanation_data`` (JSON keys are snake_case; the values above are labels)
STAT_KEYS = tuple(name.replace("-", "_") for name in STAT_NAMES)
EXPANDED, RECOMBINED, HISTOGRAM, BEAM, COMPLETE = range(5)


@dataclass(frozen=True)
class Explanation:
    """A decoded sentence with everything ``render_*`` shows.

    ``contributions[b]`` is block ``b``'s share of the features
    (``float64[k, n_features]``, natural log), ``end`` the end-of-sentence
    share (the LM's ``</s>``); they sum to ``features`` = ``score_derivation``
    of the best derivation. ``nbest`` holds the best derivations the search
    graph contains (the first is the 1-best); ``settings`` those the search ran with.
    """

    source: list[str]
    options: TranslationOptions
    graph: SearchGraph
    nbest: list[ScoredDerivation]
    features: np.ndarray
    contributions: np.ndarray
    end: np.ndarray
    settings: SearchSettings

    @property
    def best(self) -> ScoredDerivation:
        return self.nbest[0]


def explain(model: TranslationModel, tokens: list[str], n_best: int = 10,
            settings: SearchSettings | None = None, markup: Markup | None = None) -> Explanation:
    """Decode ``tokens`` (the model's token form) and keep the search's details.

    ``settings`` (stack size, beam threshold, distortion limit) default to the
    model's; ``markup``: what the input's markup says of the tokens
    (``pbmt.base.markup``). Raises ValueError for an empty sentence or when no
    complete hypothesis survived the search.
    """
    if not tokens:
        raise ValueError("cannot explain an empty sentence")
    settings = settings or model.settings
    options = TranslationOptions.of_words(model, list(tokens), markup)
    graph = search(model, options, settings)
    if graph.final_class < 0:
        raise ValueError("no complete translation survived the search (raise the distortion limit or stack size)")
    nbest = list(best_paths(options, graph, n_best))
    best = nbest[0].derivation
    def without_end(k: int) -> np.ndarray:
        prefix = Derivation(best.src_start[:k], best.src_end[:k], best.option[:k])
        return score_derivation(prefix, options, model, complete=False)

    partial = np.array([without_end(k) for k in range(len(best) + 1)])
    features = score_derivation(best, options, model)
    return Explanation(list(tokens), options, graph, nbest, features, np.diff(partial, axis=0),
                       features - partial[-1], settings)


@dataclass(frozen=True)
class HypothesisTable:
    """Where every hypothesis of a search graph stood, recomputed from the graph as the decoder saw it.

    Per hypothesis ``h`` (``SearchGraph`` numbering): ``coverage[h]`` the
    source words covered (bool[H, n]), ``stack[h]`` their number, ``future[h]``
    the future-cost estimate of the rest (natural log, weighted; 0 when
    complete), ``total[h]`` = score + future (what pruning compares),
    ``representative[h]`` the best member of its recombination class (the one
    the decoder kept and expanded), ``rank[h]`` its class's rank by total in
    its stack (0 = best; -1 for a recombined hypothesis), ``status[h]`` one of
    ``STATUS_NAMES``. ``stack_best[s]`` is the best total that entered stack
    ``s`` (the beam threshold is relative to it).
    """

    coverage: np.ndarray
    stack: np.ndarray
    future: np.ndarray
    total: np.ndarray
    representative: np.ndarray
    rank: np.ndarray
    status: np.ndarray
    stack_best: np.ndarray


def hypothesis_table(e: Explanation) -> HypothesisTable:
    """Replay the decoder's pruning over ``e.graph`` (see ``HypothesisTable``).

    A stack's classes are ranked by total (ties: the later class first, as
    the decoder's stable sort over its newest-first class list does); the
    first ``stack_size`` within ``ln(beam threshold)`` of the stack's best
    total are expanded. Extensions the beam rejected before they entered a
    stack are not in the graph; ``graph.stats`` counts them.
    """
    g, o = e.graph, e.options
    n, count = o.n_words, len(g.parent)
    positions = np.arange(n)
    own = (positions >= o.start[:, None]) & (positions < o.end[:, None])
    own = np.vstack([own, np.zeros((1, n), bool)])[np.where(g.option >= 0, g.option, -1)]
    parent = np.where(g.parent >= 0, g.parent, 0)
    coverage = own.copy()
    for _ in range(n):  # parents precede children: after depth-many rounds every hypothesis has its ancestors' words
        coverage = coverage[parent] | own
    stack = coverage.sum(1)
    future = np.zeros(count)
    run_start = np.full(count, -1)
    for j in range(n + 1):
        covered = coverage[:, j] if j < n else np.ones(count, bool)
        closing = covered & (run_start >= 0)
        future[closing] += o.future[run_start[closing], j]
        run_start[closing] = -1
        run_start[~covered & (run_start < 0)] = j
    total = g.score + future
    # the representative: the best member, the first of equals (the decoder replaces it only by a strictly better one)
    by_class = np.lexsort((np.arange(count), -g.score, g.klass))
    first = np.ones(count, bool)
    first[1:] = g.klass[by_class[1:]] != g.klass[by_class[:-1]]
    best_of_class = np.zeros(g.klass.max() + 1, np.int64)
    best_of_class[g.klass[by_class[first]]] = by_class[first]
    representative = best_of_class[g.klass]
    stack_best = np.full(n + 1, -np.inf)
    np.maximum.at(stack_best, stack, total)
    log_beam = math.log(e.settings.beam_threshold) if e.settings.beam_threshold > 0 else -math.inf
    rank = np.full(count, -1)
    status = np.full(count, RECOMBINED, np.int8)
    for s in range(n + 1):
        reps = np.flatnonzero((stack == s) & (representative == np.arange(count)))
        order = reps[np.lexsort((-g.klass[reps], -total[reps]))]
        rank[order] = np.arange(len(order))
        if s == n:
            status[order] = COMPLETE
            continue
        status[order] = HISTOGRAM
        kept = order[:e.settings.stack_size]
        below = np.flatnonzero(total[kept] < stack_best[s] + log_beam)
        cut = below[0] if len(below) else len(kept)
        status[kept[:cut]] = EXPANDED
        status[kept[cut:]] = BEAM
    return HypothesisTable(coverage, stack, future, total, representative, rank, status, stack_best)


def reference_path(e: Explanation, model: TranslationModel, reference: list[str]) -> dict:
    """Where the reference went in ``e``'s search, as a JSON-ready dict.

    Forced decoding (``pbmt.search.forced``, in the search's space) finds the reference's best derivation;
    it is then followed through the search graph, block by block, from each hypothesis's representative
    (a hypothesis recombined into a better one continues through that one, with the same future).
    ``path``: per block, the hypothesis it reached, its stack and status; ``fell_out``: the first stack
    where it did not go on and the rule that dropped it, or None when it reached the last stack.
    ``verdict`` as ``pbmt analyze`` gives it: correct, search error (the reference scores higher than the
    1-best), model error, or unreachable (``why``).
    """
    found = ForcedDecoder(model, e.settings).decode(e.options, reference)
    if not found.reachable:
        return {"reference": " ".join(reference), "verdict": "unreachable", "why": found.why, "path": [],
                "fell_out": None}
    derivation, score = found.found[0].derivation, found.found[0].score
    best = e.best
    if np.array_equal(derivation.target_words(e.options), best.derivation.target_words(e.options)):
        verdict = "correct"
    else:
        verdict = "search error" if score > best.score + 1e-6 else "model error"
    g, table = e.graph, hypothesis_table(e)
    children = {(int(p), int(op)): h for h, (p, op) in enumerate(zip(g.parent, g.option))}
    path, fell_out, h = [], None, 0
    words = e.options.vocab.words
    for b, option in enumerate(derivation.option.tolist()):
        rep = int(table.representative[h])
        child = children.get((rep, option))
        span = [int(e.options.start[option]), int(e.options.end[option])]
        if child is None:
            fell_out = _fell_out(e, table, rep, b, span, " ".join(words(e.options.target(option))))
            break
        path.append({"block": b, "source": span, "target": " ".join(words(e.options.target(option))),
                     "hypothesis": child, "stack": int(table.stack[child]), "status": STATUS_NAMES[table.status[child]],
                     "rank": int(table.rank[table.representative[child]]) + 1})
        h = child
    return {"reference": " ".join(reference), "verdict": verdict, "score": score, "best_score": best.score,
            "why": "", "path": path, "fell_out": fell_out}


def _listed(reference: dict | None) -> list[int]:
    """The hypotheses a ``reference_path`` names."""
    if reference is None:
        return []
    fell = reference["fell_out"]
    return [step["hypothesis"] for step in reference["path"]] + ([fell["hypothesis"]] if fell else [])


def _fell_out(e: Explanation, table: HypothesisTable, rep: int, block: int, span: list[int], target: str) -> dict:
    """Why the reference's path stops at hypothesis ``rep``, which the search never extended by its next block."""
    s, settings = int(table.stack[rep]), e.settings
    status, rank = int(table.status[rep]), int(table.rank[rep]) + 1
    where = {"block": block, "source": span, "target": target, "hypothesis": rep}
    if status == HISTOGRAM:
        return {**where, "stack": s, "rule": "stack size",
                "why": f"its partial translation ranked {rank} in stack {s}, beyond the stack size "
                       f"{settings.stack_size}, so it was never extended"}
    if status == BEAM:
        return {**where, "stack": s, "rule": "beam threshold",
                "why": f"its partial translation (total {table.total[rep]:.3f}) fell below stack {s}'s best "
                       f"{table.stack_best[s]:.3f} + ln({settings.beam_threshold:g}), so it was never extended"}
    t = s + span[1] - span[0]
    if settings.search == "cube":
        return {**where, "stack": t, "rule": "pop limit",
                "why": f"cube pruning did not create its extension by [{span[0]}-{span[1] - 1}] '{target}' among "
                       f"the {settings.pop_limit} it popped for stack {t} (or the beam rejected it there)"}
    return {**where, "stack": t, "rule": "beam threshold",
            "why": f"its extension by [{span[0]}-{span[1] - 1}] '{target}' scored below stack {t}'s beam "
                   "before it entered the stack"}


def explanation_data(e: Explanation, model: TranslationModel, hypotheses_per_stack: int = 50,
                     reference: dict | None = None) -> dict:
    """Everything about one sentence's search as a JSON-ready dict (the ``/explain`` answer of ``pbmt serve``).

    Scores are natural logs; ``features`` name the dense columns (readable
    labels, ``pbmt.base.feature_labels``) in the order of every vector here.
    Spans are ``[start, end)`` source word positions. ``stacks[s]`` lists up
    to ``hypotheses_per_stack`` hypotheses of stack ``s`` (best total
    first), plus every hypothesis on an n-best path and every ancestor of a
    listed one; its counts cover them all. Each n-best entry names its
    ``path`` through the search graph: one hypothesis per block, and with
    ``via`` the representative it continued from when the entry runs
    through a recombined hypothesis. ``reference``: a ``reference_path`` of this search, returned as the
    ``reference`` entry (None without), whose hypotheses are listed too.
    """
    o, w = e.options, model.weights
    layout = model.layout
    table = hypothesis_table(e)
    words = o.vocab.words

    def target(option: int) -> str:
        return " ".join(words(o.target(option)))

    def vector(values: np.ndarray) -> list[float]:
        return [float(v) for v in values]

    def part(values: np.ndarray) -> dict:
        return {"features": vector(values), "weighted": vector(values * w), "score": float(values @ w)}

    best = e.best.derivation
    chosen = set(best.option.tolist())
    bounds = best.target_boundaries(o)
    blocks = []
    prev_start = prev_end = 0
    orientations = best.orientations()
    for b, option in enumerate(best.option.tolist()):
        start, end = int(best.src_start[b]), int(best.src_end[b])
        blocks.append({"source": [start, end], "source_words": " ".join(e.source[start:end]),
                       "target": target(option), "target_span": [int(bounds[b]), int(bounds[b + 1])],
                       "option": option, "orientation": Orientation(orientations[b]).name,
                       "msd": MSD_NAMES[msd_orientation(prev_start, prev_end, start, end)],
                       "jump": start - prev_end, **part(e.contributions[b])})
        prev_start, prev_end = start, end
    estimate = o.local_score + o.lm_estimate
    spans = []
    for i in range(o.n_words):
        for j in range(i + 1, min(o.n_words, i + o.max_length) + 1):
            span = sorted(o.span(i, j), key=lambda k: -estimate[k])
            if span:
                spans.append({"span": [i, j], "source_words": " ".join(e.source[i:j]), "options": [
                    {"option": k, "target": target(k), "local": vector(o.local[k]),
                     "score": float(o.local_score[k]), "estimate": float(estimate[k]),
                     "unknown": bool(o.candidate[k] == UNKNOWN), "markup": o.is_markup(k),
                     "chosen": k in chosen} for k in span]})
    nbest = [_nbest_entry(k, sd, e, model, table) for k, sd in enumerate(e.nbest)]
    return {
        "source": e.source,
        "settings": {"stack_size": e.settings.stack_size, "beam_threshold": e.settings.beam_threshold,
                     "distortion_limit": e.settings.distortion_limit, "reordering": e.settings.reordering,
                     "search": e.settings.search, "pop_limit": e.settings.pop_limit},
        "features": [{"label": label, "weight": float(weight)}
                     for label, weight in zip(column_labels(layout.names, layout.sizes, layout.types), w)],
        "translation": target_text(best, o, model),
        "score": e.best.score,
        "alignment": [list(link) for link in word_alignment(best, o, model)],
        "blocks": blocks,
        "end": part(e.end),
        "total": part(e.features),
        "options": spans,
        "zones": o.zones.tolist(),
        "walls": [{"position": w, "within": [lo, hi]} for w, lo, hi in o.walls.tolist()],
        "future_cost": [[float(o.future[i, j]) if j > i else None for j in range(o.n_words + 1)]
                        for i in range(o.n_words)],
        "stacks": _stacks(e, model, table, [h for entry in nbest for h in entry["path"]] + _listed(reference),
                          hypotheses_per_stack),
        "nbest": nbest,
        "reference": reference,
        "lm_order": max(lm.order for lm in model.lms),
    }


def _nbest_entry(k: int, sd: ScoredDerivation, e: Explanation, model: TranslationModel,
                 table: HypothesisTable) -> dict:
    g, o, d = e.graph, e.options, sd.derivation
    children = {(int(p), int(op)): h for h, (p, op) in enumerate(zip(g.parent, g.option))}
    path, via = [], []
    h = 0
    for option in d.option.tolist():
        rep = int(table.representative[h])
        via.append(rep if rep != h else None)
        h = children[(rep, option)]
        path.append(h)
    bounds = d.target_boundaries(o)
    return {"rank": k + 1, "score": sd.score, "text": target_text(d, o, model), "path": path, "via": via,
            "segments": [{"source": [int(s), int(t)], "source_words": " ".join(e.source[s:t]),
                          "target": " ".join(o.vocab.words(o.target(op))),
                          "target_span": [int(bounds[b]), int(bounds[b + 1])]}
                         for b, (s, t, op) in enumerate(zip(d.src_start, d.src_end, d.option))]}


def _stacks(e: Explanation, model: TranslationModel, table: HypothesisTable, on_paths: list[int],
            per_stack: int) -> list[dict]:
    g = e.graph
    shown = set(on_paths)
    for s in range(e.options.n_words + 1):
        members = np.flatnonzero(table.stack == s)
        shown.update(members[np.argsort(-table.total[members], kind="stable")][:per_stack].tolist())
    for h in list(shown):
        while h > 0:
            shown.add(h)
            h = int(g.parent[h])
    shown.add(0)
    log_beam = math.log(e.settings.beam_threshold) if e.settings.beam_threshold > 0 else -math.inf
    stacks = []
    for s in range(e.options.n_words + 1):
        members = table.stack == s
        listed = sorted((h for h in shown if table.stack[h] == s), key=lambda h: -table.total[h])
        stats = dict(zip(STAT_KEYS, (int(v) for v in g.stats[s])))
        stacks.append({
            "stack": s, **stats,
            "histogram_pruned": int(np.sum(members & (table.status == HISTOGRAM))),
            "beam_pruned": int(np.sum(members & (table.status == BEAM))),
            "best_total": float(table.stack_best[s]), "beam_floor": float(table.stack_best[s] + log_beam),
            "hypotheses": [_hypothesis(h, e, model, table) for h in listed],
        })
    return stacks


def _hypothesis(h: int, e: Explanation, model: TranslationModel, table: HypothesisTable) -> dict:
    g, o, settings = e.graph, e.options, e.settings
    chain = []
    x = h
    while x > 0:
        chain.append(int(g.option[x]))
        x = int(g.parent[x])
    target = [w for option in reversed(chain) for w in o.vocab.words(o.target(option))]
    status = int(table.status[h])
    rep = int(table.representative[h])
    rank = int(table.rank[h])
    if status == EXPANDED:
        why = f"expanded: rank {rank + 1} in its stack, within the stack size and the beam"
    elif status == COMPLETE:
        why = "complete: the best translation found" if rank == 0 else "complete"
    elif status == RECOMBINED:
        why = (f"recombined into #{rep} (same covered words, LM state and last phrase, so the same future; "
               f"{float(g.score[rep] - g.score[h]):.3f} worse): kept only for n-best lists")
    elif status == HISTOGRAM:
        why = f"pruned by the stack size: rank {rank + 1} > {settings.stack_size}"
    else:
        why = (f"pruned by the beam: total {table.total[h]:.3f} < best {table.stack_best[table.stack[h]]:.3f} "
               f"+ ln({settings.beam_threshold:g})")
    option = int(g.option[h])
    return {
        "id": h, "parent": int(g.parent[h]), "option": option,
        "source": [int(o.start[option]), int(o.end[option])] if option >= 0 else None,
        "phrase": " ".join(o.vocab.words(o.target(option))) if option >= 0 else "",
        "coverage": "".join("■" if c else "□" for c in table.coverage[h]),
        "target": " ".join(target), "lm_context": " ".join((["<s>"] + target)[-(max(lm.order for lm in model.lms) - 1):]),
        "score": float(g.score[h]), "future": float(table.future[h]), "total": float(table.total[h]),
        "class": int(g.klass[h]), "representative": rep, "rank": rank, "status": STATUS_NAMES[status], "why": why,
    }

"""How one sentence was translated, for teaching and debugging.

``explain`` decodes a sentence and keeps everything a reader needs: the
translation options of every span, the future-cost table, the search graph
with per-stack counts, the best derivation and each block's feature
contributions. ``render_text``, ``render_dot`` and ``render_html`` show it.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

import numpy as np

from pbmt.model.model import TranslationModel
from pbmt.search._decoder_kernels import STAT_NAMES
from pbmt.search._scoring_kernels import msd_orientation
from pbmt.search.decoder import ScoredDerivation, SearchGraph, best_paths, search
from pbmt.search.derivation import Derivation, Orientation, score_derivation
from pbmt.search.options import TranslationOptions
from pbmt.search.output import target_text, word_alignment

MSD_NAMES = ("monotone", "swap", "discontinuous")


@dataclass(frozen=True)
class Explanation:
    """A decoded sentence with everything ``render_*`` shows.

    ``contributions[b]`` is block ``b``'s share of the features
    (``float64[k, n_features]``, natural log), ``end`` the end-of-sentence
    share (the LM's ``</s>``); they sum to ``features`` = ``score_derivation``
    of the best derivation. ``nbest`` holds the best derivations the search
    graph contains (the first is the 1-best).
    """

    source: list[str]
    options: TranslationOptions
    graph: SearchGraph
    nbest: list[ScoredDerivation]
    features: np.ndarray
    contributions: np.ndarray
    end: np.ndarray

    @property
    def best(self) -> ScoredDerivation:
        return self.nbest[0]


def explain(model: TranslationModel, tokens: list[str], n_best: int = 10) -> Explanation:
    """Decode ``tokens`` (the model's token form) and keep the search's details."""
    if not tokens:
        raise ValueError("cannot explain an empty sentence")
    options = TranslationOptions.build(model, model.vocab.ids(tokens))
    graph = search(model, options)
    nbest = list(best_paths(options, graph, n_best))
    best = nbest[0].derivation
    lm_col = model.layout.columns_of_type("KENLM").start

    def without_end(k: int) -> np.ndarray:
        prefix = Derivation(best.src_start[:k], best.src_end[:k], best.option[:k])
        f = score_derivation(prefix, options, model)
        f[lm_col] -= math.log(10) * model.lm.score_tokens(prefix.target_words(options))[-1]
        return f

    partial = np.array([without_end(k) for k in range(len(best) + 1)])
    features = score_derivation(best, options, model)
    return Explanation(list(tokens), options, graph, nbest, features, np.diff(partial, axis=0),
                       features - partial[-1])


def _block_rows(e: Explanation, model: TranslationModel) -> list[dict]:
    d = e.best.derivation
    rows = []
    prev_start = prev_end = 0
    for b, o in enumerate(d.option):
        start, end = int(d.src_start[b]), int(d.src_end[b])
        rows.append({
            "source": f"{start}-{end - 1}", "source_words": " ".join(e.source[start:end]),
            "target": " ".join(model.vocab.words(e.options.target(o))),
            "orientation": Orientation(d.orientations()[b]).name,
            "msd": MSD_NAMES[msd_orientation(prev_start, prev_end, start, end)],
            "jump": int(start - prev_end), "score": float(e.contributions[b] @ model.weights),
        })
        prev_start, prev_end = start, end
    return rows


def render_text(e: Explanation, model: TranslationModel, options_per_span: int = 5) -> str:
    """A plain-text report (natural-log scores, weighted unless said otherwise)."""
    out = []
    n = len(e.source)
    out.append("SOURCE")
    out.append("  " + "  ".join(f"{i}:{w}" for i, w in enumerate(e.source)))
    out.append("")
    out.append(f"TRANSLATION OPTIONS ({len(e.options)} in all; best {options_per_span} per span; "
               "score = weighted option-local features, future = score + weighted LM estimate)")
    future_est = e.options.local_score + model.lm_weight_ln * e.options.lm_inside
    for i in range(n):
        for j in range(i + 1, min(n, i + e.options.max_length) + 1):
            span = e.options.span(i, j)
            if not len(span):
                continue
            ranked = sorted(span, key=lambda o: -future_est[o])
            out.append(f"  [{i}-{j - 1}] {' '.join(e.source[i:j])}  ({len(span)} options)")
            for o in ranked[:options_per_span]:
                tag = "  (unknown word)" if e.options.candidate[o] < 0 else ""
                out.append(f"      {' '.join(model.vocab.words(e.options.target(o))):<40} "
                           f"score {e.options.local_score[o]:9.3f}  future {future_est[o]:9.3f}{tag}")
    out.append("")
    out.append("FUTURE COST (best estimated score of translating source words i..j; rows i, columns j)")
    width = e.options.max_length
    out.append("       " + "".join(f"{'+' + str(k):>9}" for k in range(width)))
    for i in range(n):
        cells = [f"{e.options.future[i, i + k + 1]:9.2f}" if i + k < n else " " * 9 for k in range(width)]
        out.append(f"  {i:>4} " + "".join(cells))
    out.append("")
    out.append(f"BEST DERIVATION  (model score {e.best.score:.4f})")
    out.append("  " + target_text(e.best.derivation, e.options, model))
    for b, row in enumerate(_block_rows(e, model)):
        out.append(f"  block {b}: source [{row['source']}] {row['source_words']!r} -> {row['target']!r}  "
                   f"orientation {row['orientation']} (msd {row['msd']}), jump {row['jump']}, "
                   f"weighted {row['score']:.4f}")
        out.append("      " + _features(e.contributions[b], model))
    out.append(f"  end of sentence: weighted {e.end @ model.weights:.4f}  " + _features(e.end, model))
    out.append("  total: " + _features(e.features, model))
    out.append("")
    out.append("SEARCH (per stack = number of source words covered)")
    out.append("  stack " + " ".join(f"{name:>14}" for name in STAT_NAMES))
    for s, row in enumerate(e.graph.stats):
        out.append(f"  {s:>5} " + " ".join(f"{v:>14}" for v in row))
    out.append(f"  hypotheses kept in the search graph: {len(e.graph.parent)}; "
               f"pruned when expanded: {int((e.graph.stats[:, 0] - e.graph.stats[:, 1]).sum())}")
    out.append("")
    out.append(f"{len(e.nbest)}-BEST")
    for k, sd in enumerate(e.nbest):
        out.append(f"  {k + 1:>3}. {sd.score:10.4f}  {target_text(sd.derivation, e.options, model)}")
    return "\n".join(out) + "\n"


def _features(vector: np.ndarray, model: TranslationModel) -> str:
    return "  ".join(f"{name}= " + " ".join(f"{v:.4g}" for v in values)
                     for name, values in model.layout.as_dict(vector).items() if any(values))


def _graph_nodes(e: Explanation) -> list[int]:
    """Hypotheses on the n-best paths, their recombined rivals, back to the start."""
    g = e.graph
    keep: set[int] = set()
    finals = np.flatnonzero(g.klass == g.final_class)
    for h in finals[np.argsort(-g.score[finals])][:len(e.nbest)]:
        while h > 0 and h not in keep:
            keep.add(int(h))
            h = g.parent[h]
    rivals = {int(m) for m in np.flatnonzero(np.isin(g.klass, g.klass[list(keep)])) if m not in keep}
    for h in sorted(rivals)[:200]:
        while h > 0 and h not in keep:
            keep.add(int(h))
            h = g.parent[h]
    return [0] + sorted(keep)


def render_dot(e: Explanation, model: TranslationModel) -> str:
    """The search graph around the n-best paths in Graphviz's DOT language.

    Nodes are hypotheses (label: accumulated score); solid edges extend a
    hypothesis by a phrase; dashed edges join a recombined hypothesis to the
    best of its class.
    """
    g = e.graph
    nodes = _graph_nodes(e)
    on_best = set()
    h = int(np.flatnonzero(g.klass == g.final_class)[np.argmax(g.score[g.klass == g.final_class])])
    while h > 0:
        on_best.add(h)
        h = int(g.parent[h])
    lines = ["digraph search {", "  rankdir=LR;", '  node [shape=box, fontname="Helvetica"];',
             '  0 [label="start"];']
    reps = {}
    for h in nodes[1:]:
        reps.setdefault(int(g.klass[h]), []).append(h)
        style = ", style=bold, color=blue" if h in on_best else ""
        lines.append(f'  {h} [label="{g.score[h]:.2f}"{style}];')
        o = int(g.option[h])
        label = _dot_escape(f"[{e.options.start[o]}-{e.options.end[o] - 1}] "
                            + " ".join(model.vocab.words(e.options.target(o))))
        lines.append(f'  {int(g.parent[h])} -> {h} [label="{label}"{style}];')
    for members in reps.values():
        best = max(members, key=lambda m: g.score[m])
        for m in members:
            if m != best:
                lines.append(f"  {m} -> {best} [style=dashed, arrowhead=none];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _dot_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def render_html(e: Explanation, model: TranslationModel, options_per_span: int = 5) -> str:
    """One self-contained HTML page: alignment grid, derivation, options and search graph."""
    esc = html.escape
    d = e.best.derivation
    target = model.vocab.words(d.target_words(e.options))
    links = set(word_alignment(d, e.options, model))
    grid = ["<table class='grid'><tr><th></th>" + "".join(f"<th class='v'>{esc(w)}</th>" for w in e.source) + "</tr>"]
    for t, word in enumerate(target):
        cells = "".join("<td class='on'></td>" if (s, t) in links else "<td></td>" for s in range(len(e.source)))
        grid.append(f"<tr><th>{esc(word)}</th>{cells}</tr>")
    grid.append("</table>")
    blocks = ["<table><tr><th>#</th><th>source</th><th>words</th><th>target</th><th>orientation</th>"
              "<th>msd</th><th>jump</th><th>weighted</th><th>features</th></tr>"]
    for b, row in enumerate(_block_rows(e, model)):
        blocks.append(f"<tr><td>{b}</td><td>{row['source']}</td><td>{esc(row['source_words'])}</td>"
                      f"<td>{esc(row['target'])}</td><td>{row['orientation']}</td><td>{row['msd']}</td>"
                      f"<td>{row['jump']}</td><td>{row['score']:.4f}</td>"
                      f"<td class='f'>{esc(_features(e.contributions[b], model))}</td></tr>")
    blocks.append(f"<tr><td></td><td colspan='6'>end of sentence</td><td>{e.end @ model.weights:.4f}</td>"
                  f"<td class='f'>{esc(_features(e.end, model))}</td></tr></table>")
    future_est = e.options.local_score + model.lm_weight_ln * e.options.lm_inside
    opts = ["<table><tr><th>span</th><th>source</th><th>target</th><th>score</th><th>future</th></tr>"]
    n = len(e.source)
    for i in range(n):
        for j in range(i + 1, min(n, i + e.options.max_length) + 1):
            for o in sorted(e.options.span(i, j), key=lambda o: -future_est[o])[:options_per_span]:
                chosen = " class='chosen'" if o in set(d.option.tolist()) else ""
                opts.append(f"<tr{chosen}><td>{i}-{j - 1}</td><td>{esc(' '.join(e.source[i:j]))}</td>"
                            f"<td>{esc(' '.join(model.vocab.words(e.options.target(o))))}</td>"
                            f"<td>{e.options.local_score[o]:.3f}</td><td>{future_est[o]:.3f}</td></tr>")
    opts.append("</table>")
    stats = ["<table><tr><th>stack</th>" + "".join(f"<th>{n_}</th>" for n_ in STAT_NAMES) + "</tr>"]
    stats += [f"<tr><td>{s}</td>" + "".join(f"<td>{v}</td>" for v in row) + "</tr>" for s, row in enumerate(e.graph.stats)]
    stats.append("</table>")
    nbest = "".join(f"<li>{sd.score:.4f} {esc(target_text(sd.derivation, e.options, model))}</li>" for sd in e.nbest)
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>pbmt explain</title>
<style>
body {{ font-family: sans-serif; margin: 2em; }} table {{ border-collapse: collapse; margin-bottom: 1.5em; }}
td, th {{ border: 1px solid #ccc; padding: 2px 6px; font-size: 90%; }} .grid td {{ width: 1.2em; height: 1.2em; }}
.grid td.on {{ background: #2b6cb0; }} th.v {{ writing-mode: vertical-rl; }} tr.chosen {{ background: #e6f0ff; }}
td.f {{ font-family: monospace; font-size: 80%; }}
</style></head><body>
<h1>{esc(' '.join(e.source))}</h1>
<h2>Translation (model score {e.best.score:.4f})</h2><p>{esc(' '.join(target))}</p>
<h2>Word alignment</h2>{''.join(grid)}
<h2>Derivation</h2>{''.join(blocks)}
<h2>Search: hypotheses per stack</h2>{''.join(stats)}
<h2>{len(e.nbest)}-best from the search graph</h2><ol>{nbest}</ol>
<h2>Translation options (best {options_per_span} per span; chosen ones highlighted)</h2>{''.join(opts)}
</body></html>
"""

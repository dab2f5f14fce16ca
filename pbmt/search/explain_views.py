"""An explanation shown: ``render_text`` (plain text), ``render_html`` (the notebook's and ``pbmt explain
--html``'s page: option tables, stacks, the best derivation's alignment grid), ``render_dot`` (the search graph,
for Graphviz) and ``render_reference`` (where a reference fell out of the search), all from
``pbmt.search.explain``'s data. A protected token's space or angle bracket, which its token form carries as a
private-use character (``pbmt.base.protected.encode``), is shown as itself: ``<a href="x">``, not ``<ahref="x">``."""

from __future__ import annotations

import html

import numpy as np

from pbmt.base.protected import decode
from pbmt.model.model import TranslationModel
from pbmt.search._decoder_kernels import STAT_NAMES
from pbmt.search.explain import STAT_KEYS, Explanation, explanation_data, hypothesis_table


def render_reference(where: dict) -> str:
    """A plain-text report of ``reference_path``: the reference's path through the stacks, where it fell out."""
    out = [f"THE REFERENCE: {where['reference']}"]
    if where["verdict"] == "unreachable":
        return "\n".join(out + [f"  unreachable: no derivation produces it ({where['why']})"]) + "\n"
    out.append(f"  its best derivation scores {where['score']:.4f} against the 1-best's {where['best_score']:.4f}: "
               f"{where['verdict']}")
    for step in where["path"]:
        s, t = step["source"]
        out.append(f"  block {step['block']}: [{s}-{t - 1}] {_quoted(step['target'])} -> hypothesis #{step['hypothesis']} "
                   f"in stack {step['stack']}, {step['status']} (its class ranked {step['rank']})")
    fell = where["fell_out"]
    if fell is None:
        out.append("  it reached the last stack")
    else:
        s, t = fell["source"]
        out.append(f"  block {fell['block']}: [{s}-{t - 1}] {_quoted(fell['target'])}: fell out at stack {fell['stack']} "
                   f"by the {fell['rule']}: {fell['why']}")
    return decode("\n".join(out) + "\n")


def render_text(e: Explanation, model: TranslationModel, options_per_span: int = 5) -> str:
    """A plain-text report of ``explanation_data`` (natural-log scores, weighted unless said otherwise)."""
    data = explanation_data(e, model, hypotheses_per_stack=0)
    labels = [f["label"] for f in data["features"]]
    n = len(e.source)
    out = ["SOURCE", "  " + "  ".join(f"{i}:{w}" for i, w in enumerate(e.source)), ""]
    out.append(f"TRANSLATION OPTIONS ({len(e.options)} in all; best {options_per_span} per span; "
               "score = weighted option-local features, future = score + weighted LM estimate)")
    for span in data["options"]:
        i, j = span["span"]
        out.append(f"  [{i}-{j - 1}] {span['source_words']}  ({len(span['options'])} options)")
        for option in span["options"][:options_per_span]:
            tag = "  (unknown word)" if option["unknown"] else "  (given by the markup)" if option["markup"] else ""
            out.append(f"      {option['target']:<40} score {option['score']:9.3f}  future {option['estimate']:9.3f}{tag}")
    out.append("")
    if data["zones"] or data["walls"]:
        out.append("REORDERING CONSTRAINTS")
        out += [f"  zone [{i}-{j - 1}] {' '.join(e.source[i:j])}: translated as a unit" for i, j in data["zones"]]
        out += [f"  wall before {w['position']}:{e.source[w['position']]}: words {w['within'][0]}..{w['position'] - 1} "
                f"before words {w['position']}..{w['within'][1] - 1}" for w in data["walls"]]
        out.append("")
    out.append("FUTURE COST (best estimated score of translating source words i..j; rows i, columns j)")
    out.append("      " + "".join(f"{j:>9}" for j in range(n)))
    for i, row in enumerate(data["future_cost"]):
        out.append(f"  {i:>4}" + "".join(f"{row[j + 1]:9.2f}" if row[j + 1] is not None else " " * 9
                                         for j in range(n)))
    out.append("")
    out.append(f"BEST DERIVATION  (model score {data['score']:.4f})")
    out.append("  " + data["translation"])
    for b, block in enumerate(data["blocks"]):
        s, t = block["source"]
        out.append(f"  block {b}: source [{s}-{t - 1}] {_quoted(block['source_words'])} -> {_quoted(block['target'])}  "
                   f"orientation {block['orientation']} (msd {block['msd']}), jump {block['jump']}, "
                   f"weighted {block['score']:.4f}")
        out.append("      " + _labelled(block["features"], labels))
    out.append(f"  end of sentence: weighted {data['end']['score']:.4f}  " + _labelled(data["end"]["features"], labels))
    out.append("  total: " + _labelled(data["total"]["features"], labels))
    out.append("")
    out.append("SEARCH (per stack = number of source words covered)")
    out.append("  stack " + " ".join(f"{name:>14}" for name in STAT_NAMES + ("histogram", "beam-pruned")))
    for stack in data["stacks"]:
        out.append(f"  {stack['stack']:>5} " + " ".join(f"{stack[key]:>14}" for key in STAT_KEYS)
                   + f" {stack['histogram_pruned']:>14} {stack['beam_pruned']:>14}")
    out.append(f"  hypotheses kept in the search graph: {len(e.graph.parent)}")
    out.append("")
    out.append(f"{len(data['nbest'])}-BEST (with the segmentation: [source span] target phrase)")
    for entry in data["nbest"]:
        out.append(f"  {entry['rank']:>3}. {entry['score']:10.4f}  {entry['text']}")
        out.append("       " + " ".join(f"[{seg['source'][0]}-{seg['source'][1] - 1}] {seg['target']} |"
                                        for seg in entry["segments"]))
    return decode("\n".join(out) + "\n")


def _quoted(text: str) -> str:
    """Token text in quotes (``repr``), decoded first: ``repr`` writes a private-use character as ``\\ue020``."""
    return repr(decode(text))


def _escape(text: str) -> str:
    """Token text for an HTML page: decoded (``pbmt.base.protected.decode``), then escaped."""
    return html.escape(decode(text))


def _labelled(values: list[float], labels: list[str]) -> str:
    return "  ".join(f"{label}= {v:.4g}" for label, v in zip(labels, values) if v)


def _graph_nodes(e: Explanation) -> list[int]:
    """Hypotheses on the n-best paths, the 20 recombined rivals closest to their class's best, back to the start."""
    g = e.graph
    keep: set[int] = set()
    finals = np.flatnonzero(g.klass == g.final_class)
    for h in finals[np.argsort(-g.score[finals])][:len(e.nbest)]:
        while h > 0 and h not in keep:
            keep.add(int(h))
            h = g.parent[h]
    rivals = {int(m) for m in np.flatnonzero(np.isin(g.klass, g.klass[list(keep)])) if m not in keep}
    class_best = np.full(g.klass.max() + 1, -np.inf)
    np.maximum.at(class_best, g.klass, g.score)
    # the closest rivals only: a picture a reader can take in
    for h in sorted(rivals, key=lambda m: class_best[g.klass[m]] - g.score[m])[:20]:
        while h > 0 and h not in keep:
            keep.add(int(h))
            h = g.parent[h]
    return [0] + sorted(keep)


def render_dot(e: Explanation, model: TranslationModel) -> str:
    """The search graph around the n-best paths in Graphviz's DOT language.

    Nodes are hypotheses (label: covered source words, the last target
    words, accumulated score); solid edges extend a hypothesis by a phrase;
    dashed edges join a recombined hypothesis to the best of its class.
    """
    g = e.graph
    table = hypothesis_table(e)
    nodes = _graph_nodes(e)
    on_best = set()
    h = int(np.flatnonzero(g.klass == g.final_class)[np.argmax(g.score[g.klass == g.final_class])])
    while h > 0:
        on_best.add(h)
        h = int(g.parent[h])
    lines = ["digraph search {", "  rankdir=LR;", '  node [shape=box, fontname="Helvetica", fontsize=10];',
             '  edge [fontname="Helvetica", fontsize=9];', '  0 [label="start"];']
    reps = {}
    for h in nodes[1:]:
        reps.setdefault(int(g.klass[h]), []).append(h)
        style = ", style=bold, color=blue" if h in on_best else ""
        cover = "".join("■" if c else "□" for c in table.coverage[h])
        tail = " ".join(e.options.vocab.words(e.options.target(int(g.option[h])))[-2:])
        lines.append(f'  {h} [label="{cover}\\n…{_dot_escape(tail)}\\n{g.score[h]:.2f}"{style}];')
        o = int(g.option[h])
        label = _dot_escape(f"[{e.options.start[o]}-{e.options.end[o] - 1}] "
                            + " ".join(e.options.vocab.words(e.options.target(o))))
        lines.append(f'  {int(g.parent[h])} -> {h} [label="{label}"{style}];')
    for members in reps.values():
        best = max(members, key=lambda m: g.score[m])
        for m in members:
            if m != best:
                lines.append(f"  {m} -> {best} [style=dashed, arrowhead=none];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _dot_escape(text: str) -> str:
    return decode(text).replace("\\", "\\\\").replace('"', '\\"')


def render_html(e: Explanation, model: TranslationModel, options_per_span: int = 5) -> str:
    """One self-contained HTML page of ``explanation_data``: translation, alignment grid with the phrase
    blocks, derivation with named feature columns, future costs, stacks, n-best with segmentations, options."""
    esc = _escape
    data = explanation_data(e, model, hypotheses_per_stack=0)
    labels = [f["label"] for f in data["features"]]
    grid = alignment_grid(e.source, data["translation"].split(), data["alignment"],
                          [(*block["source"], *block["target_span"]) for block in data["blocks"]])
    used = [k for k in range(len(labels)) if any(block["features"][k] for block in data["blocks"])
            or data["end"]["features"][k]]
    head = "".join(f"<th>{esc(labels[k])}</th>" for k in used)
    blocks = ["<table><tr><th>#</th><th>source</th><th>words</th><th>target</th><th>orientation</th>"
              f"<th>msd</th><th>jump</th><th>weighted</th>{head}</tr>"]
    for b, block in enumerate(data["blocks"]):
        s, t = block["source"]
        blocks.append(f"<tr><td>{b}</td><td>{s}-{t - 1}</td><td>{esc(block['source_words'])}</td>"
                      f"<td>{esc(block['target'])}</td><td>{block['orientation']}</td><td>{block['msd']}</td>"
                      f"<td>{block['jump']}</td><td>{block['score']:.4f}</td>"
                      + "".join(f"<td class='f'>{round(block['weighted'][k], 3) + 0.0:.3f}</td>" for k in used) + "</tr>")
    for name, part in (("end of sentence", data["end"]), ("total", data["total"])):
        blocks.append(f"<tr><td></td><td colspan='6'>{name}</td><td>{part['score']:.4f}</td>"
                      + "".join(f"<td class='f'>{round(part['weighted'][k], 3) + 0.0:.3f}</td>" for k in used) + "</tr>")
    blocks.append("</table><p class='note'>Feature columns are weighted (value × weight); "
                  "the weights: " + esc(", ".join(f"{f['label']} {f['weight']:g}" for f in data["features"]))
                  + ".</p>")
    n = len(e.source)
    future = ["<table><tr><th>from \\ to</th>" + "".join(f"<th>{j}</th>" for j in range(n)) + "</tr>"]
    for i, row in enumerate(data["future_cost"]):
        future.append(f"<tr><th>{i} {esc(e.source[i])}</th>" + "".join(
            f"<td>{row[j + 1]:.2f}</td>" if row[j + 1] is not None else "<td></td>" for j in range(n)) + "</tr>")
    future.append("</table>")
    opts = ["<table><tr><th>span</th><th>source</th><th>target</th><th>score</th><th>future</th></tr>"]
    for span in data["options"]:
        i, j = span["span"]
        more = len(span["options"]) - options_per_span
        for option in span["options"][:options_per_span]:
            chosen = " class='chosen'" if option["chosen"] else ""
            opts.append(f"<tr{chosen}><td>{i}-{j - 1}</td><td>{esc(span['source_words'])}</td>"
                        f"<td>{esc(option['target'])}</td><td>{option['score']:.3f}</td>"
                        f"<td>{option['estimate']:.3f}</td></tr>")
        if more > 0:
            opts.append(f"<tr><td></td><td colspan='4' class='note'>… {more} more options of this span</td></tr>")
    opts.append("</table>")
    columns = STAT_KEYS + ("histogram_pruned", "beam_pruned")
    stats = ["<table><tr><th>stack</th>" + "".join(f"<th>{c.replace('_', ' ')}</th>" for c in columns) + "</tr>"]
    stats += [f"<tr><td>{stack['stack']}</td>" + "".join(f"<td>{stack[c]}</td>" for c in columns) + "</tr>"
              for stack in data["stacks"]]
    stats.append("</table>")
    nbest = "".join(f"<li>{entry['score']:.4f} {esc(entry['text'])}<br><span class='seg'>"
                    + " ".join(f"[{esc(seg['source_words'])} → {esc(seg['target'])}]" for seg in entry["segments"])
                    + "</span></li>" for entry in data["nbest"])
    return html_page("pbmt explain", f"""<h1>{esc(' '.join(e.source))}</h1>
<h2>Translation (model score {data['score']:.4f})</h2><p>{esc(data['translation'])}</p>
<h2>Word alignment (phrase blocks outlined)</h2>{grid}
<h2>Derivation</h2>{''.join(blocks)}
<h2>Future cost of translating source words i..j (weighted, natural log)</h2>{''.join(future)}
<h2>Search: hypotheses per stack</h2>{''.join(stats)}
<h2>{len(data['nbest'])}-best from the search graph, with their segmentations</h2><ol>{nbest}</ol>
<h2>Translation options (best {options_per_span} per span; chosen ones highlighted)</h2>{''.join(opts)}
""")


PAGE_STYLE = """
body { font-family: sans-serif; margin: 2em; } table { border-collapse: collapse; margin-bottom: 1.5em; }
td, th { border: 1px solid #ccc; padding: 2px 6px; font-size: 90%; } .grid td { width: 1.2em; height: 1.2em; }
.grid td.blk { background: #eef4fb; } .grid td.on { background: #2b6cb0; }
.grid td.bl { border-left: 2px solid #c05621; } .grid td.br { border-right: 2px solid #c05621; }
.grid td.bt { border-top: 2px solid #c05621; } .grid td.bb { border-bottom: 2px solid #c05621; }
th.v { writing-mode: vertical-rl; } tr.chosen { background: #e6f0ff; }
td.f { font-family: monospace; text-align: right; } .note, .seg { color: #555; font-size: 85%; }
"""


def html_page(title: str, body: str) -> str:
    """A self-contained HTML page (the style of ``pbmt explain --html``) around ``body``."""
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>\n"
            f"<style>{PAGE_STYLE}</style></head><body>\n{body}</body></html>\n")


def alignment_grid(source: list[str], target: list[str], links, blocks) -> str:
    """An HTML table of the word alignment ``links`` ((source, target) positions): source words across, target
    words down, linked cells filled and each phrase block of ``blocks`` ((source start, source end, target start,
    target end), ends exclusive) outlined."""
    esc = _escape
    links = {tuple(link) for link in links}
    block_of = {}
    for b, (s0, s1, t0, t1) in enumerate(blocks):
        for t in range(t0, t1):
            for s in range(s0, s1):
                block_of[s, t] = b
    grid = ["<table class='grid'><tr><th></th>" + "".join(f"<th class='v'>{esc(w)}</th>" for w in source) + "</tr>"]
    for t, word in enumerate(target):
        cells = []
        for s in range(len(source)):
            b = block_of.get((s, t))
            edges = "" if b is None else " ".join(
                side for side, (ds, dt) in (("bl", (-1, 0)), ("br", (1, 0)), ("bt", (0, -1)), ("bb", (0, 1)))
                if block_of.get((s + ds, t + dt)) != b)
            on = " on" if (s, t) in links else ""
            cells.append(f"<td class='{('blk ' + edges) if b is not None else ''}{on}'></td>")
        grid.append(f"<tr><th>{esc(word)}</th>{''.join(cells)}</tr>")
    grid.append("</table>")
    return "".join(grid)

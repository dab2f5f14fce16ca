"""Figures of tuning runs and sampler chains, and the logs they are drawn from.

Tab-separated formats, each with a header line naming its columns:

- a tuner's ``log.tsv``, one line per iteration, epoch or pass: each tuner
  declares its columns and which of them a figure draws as a ``LogFormat``
  beside its code (``pbmt.tune.loop.LOOP_LOG``, ``pbmt.tune.samplerank``,
  ``pbmt.tune.relevant_set``, ``pbmt.tune.block_training``), and
  ``read_tuning_log`` reads a log of any of the formats it is given;
- a sampler trace (``TRACE_COLUMNS``; ``pbmt sample --trace``): one line per
  recorded step of each sentence's chain, its temperature, model score
  (natural log) and sentence BLEU+1 (percent, ``-`` without references).

Weights are written as moses.ini weight lines (``LM0= 0.5 TranslationModel0=
0.2 0.2 ...``); a feature with several values gives one weight per value,
named ``TranslationModel0[1]`` and so on (0-based).

The figure functions return ``matplotlib.figure.Figure`` objects (no pyplot
state, any backend); ``save_png`` writes one atomically. matplotlib is
imported only when a figure is made.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np

from pbmt.base.errors import FormatError, PbmtError
from pbmt.base.feature_labels import readable
from pbmt.base.files import atomic_write, parse_finite, parse_int, read_lines
from pbmt.base.nbest import parse_features

if TYPE_CHECKING:  # matplotlib's import costs start-up time: it is imported where a figure is drawn
    from matplotlib.figure import Figure

TRACE_COLUMNS = ("sentence", "step", "temperature", "model_score", "bleu")
MISSING = "-"  # a value that was not measured


@dataclass(frozen=True)
class LogFormat:
    """A tuner's ``log.tsv`` as a figure reads it: ``algorithm`` names it; ``columns`` is its header, the first
    column the step (``"iteration"``, ``"epoch"`` or ``"pass"``); ``bleu`` the BLEU column drawn (percent; its
    legend ``bleu_label``); ``weights`` the column of the weights that BLEU was measured with (None: none
    logged); ``pool`` a second BLEU column drawn with ``--pool`` (legend ``pool_label``; None: none); a
    ``held_out_bleu`` column is drawn when there is one; ``starts_untuned``: the first line decodes the weights
    the run started from (a figure's untuned baseline)."""

    algorithm: str
    columns: tuple[str, ...]
    bleu: str = "dev_bleu"
    bleu_label: str = "dev BLEU"
    weights: str | None = "decoded_weights"
    pool: str | None = None
    pool_label: str = ""
    starts_untuned: bool = False


@dataclass(frozen=True)
class TuningLog:
    """A tuning run's log, of ``format``.

    ``steps`` int64[n]: iteration, epoch or pass numbers; ``dev_bleu``
    float64[n] (percent, NaN where not measured; block training: the training
    subset's corpus BLEU); ``pool_bleu`` float64[n] (percent; the loop's pool
    under the weights its optimiser proposed, or the relevant sets under the
    decoded weights, else None); ``held_out_bleu`` float64[n] (percent, NaN
    where not measured; SampleRank's held-out sentences, else None);
    ``weights`` float64[n, d], the weights whose
    BLEU ``dev_bleu`` is (SampleRank: the averaged ones; block training logs
    none, d = 0), columns named by ``weight_names``.
    """

    path: Path
    format: LogFormat
    steps: np.ndarray
    dev_bleu: np.ndarray
    pool_bleu: np.ndarray | None
    weight_names: tuple[str, ...]
    weights: np.ndarray
    held_out_bleu: np.ndarray | None = None

    @property
    def algorithm(self) -> str:
        return self.format.algorithm

    @property
    def step_name(self) -> str:
        """What a line is: ``"iteration"``, ``"epoch"`` or ``"pass"``."""
        return self.format.columns[0]

    @property
    def bleu_name(self) -> str:
        """What ``dev_bleu`` measures, for a legend."""
        return self.format.bleu_label


@dataclass(frozen=True)
class SamplerTrace:
    """A sampler trace: per recorded step, ``sentence`` (1-based line number, int64[n]), ``step``
    (steps done, int64[n]), ``temperature``, ``model_score`` (natural log) and ``bleu`` (sentence
    BLEU+1 in percent, NaN without references), all float64[n], in file order."""

    path: Path
    sentence: np.ndarray
    step: np.ndarray
    temperature: np.ndarray
    model_score: np.ndarray
    bleu: np.ndarray


def read_tuning_log(path: str | Path, formats: Sequence[LogFormat]) -> TuningLog:
    """Read a tuner's ``log.tsv`` of one of ``formats`` (``pbmt.tune.registry.LOG_FORMATS``: every tuner's), or
    the one in the run folder ``path`` (``pbmt tune --out``).

    A file of another format, a malformed line or a log without lines raises
    FormatError naming the file and the line.
    """
    path = Path(path)
    if path.is_dir() and (path / "log.tsv").is_file():
        path = path / "log.tsv"
    rows = _rows(path, {f.columns: f for f in formats})
    header, log_format = rows.pop(0)
    if not rows:
        raise FormatError(path, None, "the log has no iterations yet")
    steps, dev, pool, held_out, weights = [], [], [], [], []
    names: tuple[str, ...] | None = None
    weight_column = log_format.weights
    dev_column = header.index(log_format.bleu)
    pool_name = log_format.pool
    for number, fields in rows:
        steps.append(_number(fields[0], path, number, header[0], int))
        dev.append(_number(fields[dev_column], path, number, "dev_bleu", float))
        if pool_name:
            pool.append(_number(fields[header.index(pool_name)], path, number, pool_name, float))
        if "held_out_bleu" in header:
            held_out.append(_number(fields[header.index("held_out_bleu")], path, number, "held_out_bleu", float))
        row_names, values = _weights(fields[header.index(weight_column)], path, number) if weight_column else ((), [])
        if names is not None and row_names != names:
            raise FormatError(path, number, f"the weights are of other features than line {rows[0][0]}'s")
        names = row_names
        weights.append(values)
    steps = np.array(steps, np.int64)
    if np.any(np.diff(steps) <= 0):
        raise FormatError(path, None, f"{header[0]} numbers do not increase: {steps.tolist()}")
    return TuningLog(path, log_format, steps, np.array(dev, np.float64),
                     np.array(pool, np.float64) if pool_name else None, names, np.array(weights).reshape(len(steps), -1),
                     np.array(held_out, np.float64) if "held_out_bleu" in header else None)


def read_trace(path: str | Path) -> SamplerTrace:
    """Read a sampler trace (``pbmt sample --trace``); malformed lines raise FormatError."""
    path = Path(path)
    rows = _rows(path, {TRACE_COLUMNS: "trace"})[1:]
    if not rows:
        raise FormatError(path, None, "the trace has no steps")
    kinds = (int, int, float, float, float)
    columns = list(zip(*[[_number(fields[c], path, number, TRACE_COLUMNS[c], kind) for c, kind in enumerate(kinds)]
                         for number, fields in rows]))
    return SamplerTrace(path, np.array(columns[0], np.int64), np.array(columns[1], np.int64),
                        *(np.array(c, np.float64) for c in columns[2:]))


def _rows(path: Path, formats: dict[tuple[str, ...], str]) -> list:
    """[(header, format name)] followed by (line number, fields) for every non-empty line."""
    if path.is_dir():
        raise PbmtError(f"{path}: is a directory, expected a log (or a run folder holding a log.tsv)")
    if not path.is_file():
        raise PbmtError(f"{path}: no such file")
    lines = read_lines(path)
    first = next(lines, None)
    header = tuple(first[1].split("\t")) if first else ()
    if header not in formats:
        expected = "; or ".join("\t".join(columns).replace("\t", " <tab> ") for columns in formats)
        found = first[1][:80] if first else "an empty file"
        raise FormatError(path, 1, f"not a log this command reads: expected the header {expected}; found {found!r}")
    rows: list = [(header, formats[header])]
    for number, line in lines:
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != len(header):
            raise FormatError(path, number, f"{len(fields)} tab-separated fields, the header has {len(header)}")
        rows.append((number, fields))
    return rows


def _number(text: str, path: Path, number: int, column: str, kind: type) -> float:
    """An int or a finite float of a log's field; ``MISSING`` (not measured) is nan, the one nan a plot
    leaves out on purpose; a written nan, an infinity (1e999) or other text is a FormatError naming the line."""
    if text.strip() == MISSING and kind is float:
        return math.nan
    try:
        return parse_int(text) if kind is int else parse_finite(text)
    except ValueError:
        raise FormatError(path, number, f"{column} {text!r} is not {'an integer' if kind is int else 'a finite number'}") \
            from None


def _weights(text: str, path: Path, number: int) -> tuple[tuple[str, ...], list[float]]:
    names, values = [], []
    for name, vector in parse_features(text, path, number).items():
        if not vector:
            raise FormatError(path, number, f"weight {name} has no value")
        names += [name] if len(vector) == 1 else [f"{name}[{i}]" for i in range(len(vector))]
        values += vector
    if not names:
        raise FormatError(path, number, "no weights")
    return tuple(names), values


COLLAPSE_FRACTION = 0.5  # a dev BLEU below this fraction of its run's median is a collapse, marked, not scaled to
_LINE_STYLES = ("-", "--", ":", "-.")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X")


def line_style(k: int) -> dict:
    """Colour, line style and marker of the ``k``-th line: with 10 colours, 4 styles and 7 markers, the first 140
    lines differ from each other in at least two of the three."""
    from matplotlib import colormaps

    return {"color": colormaps["tab10"](k % 10), "linestyle": _LINE_STYLES[k % 4], "marker": _MARKERS[k % 7]}


def untuned_bleu(logs: Sequence[TuningLog]) -> float | None:
    """Dev BLEU (percent) under the untuned weights: the first line of the first log whose format
    ``starts_untuned`` (the n-best loop's), which decodes with the weights the run started from; None without
    such a log."""
    for log in logs:
        if log.format.starts_untuned and not math.isnan(log.dev_bleu[0]):
            return float(log.dev_bleu[0])
    return None


def collapsed(values: np.ndarray) -> np.ndarray:
    """Which values (BLEU, percent; NaN: not measured) collapsed: below ``COLLAPSE_FRACTION`` of their median."""
    measured = values[~np.isnan(values)]
    if len(measured) < 3:
        return np.zeros(len(values), bool)
    with np.errstate(invalid="ignore"):
        return values < COLLAPSE_FRACTION * np.median(measured)


def below_untuned(values: np.ndarray, baseline: float) -> np.ndarray:
    """Which values (BLEU, percent; NaN: not measured) lie below ``baseline``, the untuned weights' BLEU, by
    more than the 0.005 its two-decimal printing hides."""
    with np.errstate(invalid="ignore"):
        return values < baseline - 0.005


def tuning_figure(logs: Sequence[TuningLog], labels: Sequence[str] | None = None, pool: bool = False,
                  title: str | None = None, baseline: float | None = None) -> "Figure":
    """Dev BLEU (percent) per iteration or epoch, one line per log, in one axes.

    A SampleRank log's held-out BLEU is drawn beside its dev BLEU (same
    colour, hollow markers). ``labels`` name the runs in the legend (default: each log's folder name);
    ``pool`` adds each loop log's pool BLEU under its new weights as a dashed
    line. ``baseline``: dev BLEU of the untuned weights, drawn as a
    horizontal line (default: ``untuned_bleu(logs)``). Every other dev BLEU
    below that line is ringed in red and labelled with its distance below it
    (``below_untuned``): a tuner that decodes worse than where it started
    should be seen at a glance. Collapsed iterations
    (``collapsed``) are left out of the axis range and marked at its bottom
    edge with their value, so one collapse does not flatten every curve. A
    log without any measured dev (or held-out) BLEU raises PbmtError.
    """
    if not logs:
        raise PbmtError("no tuning logs to plot")
    labels = list(labels) if labels is not None else [log.path.parent.name or str(log.path) for log in logs]
    if len(labels) != len(logs):
        raise PbmtError(f"{len(labels)} labels for {len(logs)} logs")
    baseline = untuned_bleu(logs) if baseline is None else baseline
    figure = _figure((9, 4.5))
    axes = figure.add_subplot()
    kept_values, marks, below = [], [], []
    for k, (log, label) in enumerate(zip(logs, labels)):
        style = line_style(k)
        curves = [(log.dev_bleu, log.bleu_name, "dev", {})]
        if log.held_out_bleu is not None and not np.all(np.isnan(log.held_out_bleu)):
            curves.append((log.held_out_bleu, "held-out BLEU", "held-out",
                           {"markerfacecolor": "white", "linewidth": 1}))
        curves = [curve for curve in curves if not np.all(np.isnan(curve[0]))]
        if not curves:
            raise PbmtError(f"{log.path}: no dev BLEU in this log (a SampleRank run tuned with --no-dev-bleu and "
                            "without --held-out)")
        for values, name, kind, changed in curves:
            down = collapsed(values)
            axes.plot(log.steps, np.where(down, np.nan, values), label=f"{label}: {name}", **{**style, **changed})
            kept_values.append(values[~down])
            marks += [(x, y, style["color"], kind) for x, y in zip(log.steps[down], values[down])]
            if kind == "dev" and baseline is not None:
                under = ~down & below_untuned(values, baseline)
                below += list(zip(log.steps[under], values[under]))
        if pool and log.pool_bleu is not None:
            down = collapsed(log.pool_bleu)
            axes.plot(log.steps, np.where(down, np.nan, log.pool_bleu), color=style["color"], linestyle=(0, (1, 3)),
                      marker="x", alpha=0.7, label=f"{label}: {log.format.pool_label}")
            kept_values.append(log.pool_bleu[~down])
            marks += [(x, y, style["color"], "pool") for x, y in zip(log.steps[down], log.pool_bleu[down])]
    if baseline is not None:
        axes.axhline(baseline, color="0.3", linestyle="--", linewidth=1, label=f"untuned weights: {baseline:.2f}")
        kept_values.append(np.array([baseline]))
    values = np.concatenate(kept_values)
    values = values[~np.isnan(values)]
    low, high = float(values.min()), float(values.max())
    margin = max(0.05 * (high - low), 0.25)
    bottom = low - (3 if marks else 1) * margin
    axes.set_ylim(bottom, high + margin)
    at: dict[tuple, list[str]] = {}
    for x, y, color, kind in marks:
        at.setdefault((x, color), []).append(f"{y:.1f}" + (f" ({kind})" if pool or kind == "held-out" else ""))
    for (x, color), values in at.items():
        axes.scatter([x], [bottom + 0.5 * margin], marker="v", s=80, color=color, zorder=3)
        axes.annotate("collapsed: " + ", ".join(values), (x, bottom + 0.5 * margin), textcoords="offset points",
                      xytext=(6, 2), fontsize="x-small", color=color)
    if below:
        xs, ys = zip(*below)
        axes.scatter(xs, ys, s=160, facecolors="none", edgecolors="red", linewidths=1.5, zorder=4,
                     label="below the untuned weights")
        for x, y in below:
            axes.annotate(f"{y - baseline:+.2f}", (x, y), textcoords="offset points", xytext=(7, -10),
                          fontsize="x-small", color="red")
    kinds = sorted({log.step_name for log in logs})
    axes.set_xlabel(" / ".join(kinds))
    axes.set_ylabel("BLEU (%)")
    axes.xaxis.get_major_locator().set_params(integer=True)
    axes.grid(alpha=0.3)
    axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    if title:
        axes.set_title(title)
    figure.tight_layout()
    return figure


def weights_figure(log: TuningLog, title: str | None = None, initial: dict[str, Sequence[float]] | None = None,
                   all_weights: bool = False) -> "Figure":
    """Each weight's value per iteration or epoch (SampleRank: the averaged weights), one line per weight.

    Lines are named readably (``pbmt.base.feature_labels.readable``) and differ in
    colour, style and marker (``line_style``). ``initial``: the untuned
    weights by feature name (a moses.ini's ``[weight]``), drawn at step 0.
    Weights that never change (not tuned) are left out and listed under the
    axes unless ``all_weights``.
    """
    if not log.weight_names:
        raise PbmtError(f"{log.path}: this log has no weights (a binary block feature run: its weights are in "
                        "pass<l>/sparse-weights.txt beside the log)")
    steps, weights = log.steps, log.weights
    if initial is not None:
        start = []
        for name in log.weight_names:
            feature, _, index = name.partition("[")
            if feature not in initial:
                raise PbmtError(f"the initial weights have no {feature} (the log's weights are "
                                f"{', '.join(log.weight_names)})")
            start.append(initial[feature][int(index[:-1]) if index else 0])
        steps, weights = np.concatenate([[0], steps]), np.vstack([start, weights])
    sizes = {}
    for name in log.weight_names:
        feature = name.partition("[")[0]
        sizes[feature] = sizes.get(feature, 0) + 1
    labels = [readable(name, sizes[name.partition("[")[0]]) for name in log.weight_names]
    fixed = np.all(weights == weights[0], axis=0)
    figure = _figure((9, 5))
    axes = figure.add_subplot()
    drawn = 0
    for column, label in enumerate(labels):
        if fixed[column] and not all_weights:
            continue
        axes.plot(steps, weights[:, column], markersize=4, label=label, **line_style(drawn))
        drawn += 1
    if initial is not None:
        axes.axvline(0, color="0.3", linestyle="--", linewidth=1)
        axes.annotate("untuned", (0, 1), xycoords=("data", "axes fraction"), xytext=(3, -12),
                      textcoords="offset points", fontsize="small", color="0.3")
    axes.set_xlabel(log.step_name + (" (0: untuned)" if initial is not None else ""))
    axes.set_ylabel("weight")
    axes.xaxis.get_major_locator().set_params(integer=True)
    axes.grid(alpha=0.3)
    if drawn:
        axes.legend(fontsize="x-small", loc="center left", bbox_to_anchor=(1.0, 0.5))
    left_out = [f"{label} = {weights[0, c]:g}" for c, label in enumerate(labels) if fixed[c] and not all_weights]
    if left_out:
        figure.text(0.01, 0.01, "not tuned (constant, left out): " + ", ".join(left_out), fontsize="x-small",
                    color="0.3")
    axes.set_title(title or f"weights: {log.path}")
    figure.tight_layout(rect=(0, 0.04 if left_out else 0, 1, 1))
    return figure


def trace_figure(trace: SamplerTrace, sentences: Sequence[int] | None = None, title: str | None = None) -> "Figure":
    """Model score (natural log) and, when the trace has it, sentence BLEU+1 (percent) over sampler steps.

    One line per sentence (``sentences``: 1-based line numbers, default all
    in the trace); the upper axes show the score, the lower the BLEU.
    """
    present = list(dict.fromkeys(trace.sentence.tolist()))
    chosen = present if sentences is None else list(sentences)
    missing = [s for s in chosen if s not in present]
    if missing:
        raise PbmtError(f"{trace.path}: no steps of sentence(s) {', '.join(map(str, missing))} "
                        f"(the trace has {', '.join(map(str, present[:10]))}{', ...' if len(present) > 10 else ''})")
    has_bleu = not np.all(np.isnan(trace.bleu))
    figure = _figure((7, 6 if has_bleu else 3.5))
    score_axes = figure.add_subplot(2 if has_bleu else 1, 1, 1)
    bleu_axes = figure.add_subplot(2, 1, 2, sharex=score_axes) if has_bleu else None
    for s in chosen:
        rows = trace.sentence == s
        score_axes.plot(trace.step[rows], trace.model_score[rows], label=f"sentence {s}")
        if bleu_axes is not None:
            bleu_axes.plot(trace.step[rows], trace.bleu[rows], label=f"sentence {s}")
    score_axes.set_ylabel("model score (natural log)")
    for axes in filter(None, (score_axes, bleu_axes)):
        axes.grid(alpha=0.3)
    if bleu_axes is not None:
        bleu_axes.set_ylabel("sentence BLEU+1 (%)")
    (bleu_axes or score_axes).set_xlabel("sampler step")
    if len(chosen) <= 10:
        score_axes.legend(fontsize="small")
    score_axes.set_title(title or f"sampler trace: {trace.path}")
    figure.tight_layout()
    return figure


def save_png(figure: "Figure", path: str | Path, dpi: int = 100) -> None:
    """Write ``figure`` to ``path`` as PNG, atomically."""
    with atomic_write(path, "wb") as handle:
        figure.savefig(handle, format="png", dpi=dpi)


def _figure(size: tuple[float, float]) -> "Figure":
    from matplotlib.figure import Figure

    return Figure(figsize=size)

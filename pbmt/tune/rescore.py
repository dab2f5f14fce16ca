"""n-best rescoring: extra features, learned weights, the weights file.

``read_lists`` reads a Moses-format n-best file (any decoder) into
``NBestLists``; ``with_features`` appends rescoring feature columns
(``pbmt.tune.rescoring_features``); ``to_pool`` makes the ``Pool`` any
optimiser trains on (every entry is a candidate: no deduplication);
``train`` fits any optimiser of the tuning loop's ``OPTIMIZERS`` (ListNet,
MERT, PRO, APRO) and returns a ``RescoringModel``,
whose ``best`` picks each sentence's new 1-best.

Training starts from the decoder's own weights, recovered from the list:
within a sentence every entry's ``total`` is ``features @ w`` plus a
constant (Moses's unknown-word penalty, not printed, is the same for every
entry of a sentence), so least squares on per-sentence centred features and
totals gives ``w`` (``decoder_weights``; to the 6 digits the list prints).
Rescoring columns start at weight 0, so training starts from the decoder's
ranking.

**The weights file** is text: a moses.ini-style ``[weight]`` section with
every column's weight (decoder features and rescoring features, e.g.
``LM1= 0.0123``) in raw feature space, then a ``[rescore]`` section whose
body, to the end of the file, is one JSON object: ``algorithm``,
``parameters`` (the optimiser's, e.g. ListNet's gain and learning rate; a
record of how the weights were learned, not read back),
``normalisation`` ("features", "score" or "none"), ``score_range`` (for
"score"), ``features`` (the rescoring columns: kind, name, argument, e.g. the
LM's absolute path), and for "features" ``minimum``, ``maximum`` (the dev
set's per-feature extremes) and ``scaled_weights`` (the weights on the
normalised features), each a map from feature name to its values. Rescoring
with "features" applies the dev set's map to the test features and the
scaled weights, as the paper does; the ``[weight]`` list ranks identically
(it differs by a constant per list) and is what a moses.ini would take.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Sequence

import numpy as np

from pbmt.base.errors import FormatError, PbmtError
from pbmt.base.files import Outputs, atomic_write, parse_finite, read_lines
from pbmt.model.features import FeatureLayout
from pbmt.tune.listnet import FeatureScaling, ListNet
from pbmt.tune.registry import pool_tuners
from pbmt.tune.tuner import TuningData, fitted_weights
from pbmt.base import csr
from pbmt.base.nbest import NBestText, parse_line, scan_nbest
from pbmt.tune.pool import Pool, References, argmax_by_sentence, scanned_layout
from pbmt.features import FeatureSpec
from pbmt.tune.rescoring_features import NBestLists, compute_features


# without its sources, a list's sentences are 0 to its largest id: at most this many more than its entries (a
# sentence without entries is one output line), so that a wrong id is an error, not a vast offsets array
UNSOURCED_EMPTY = 100_000


def read_lists(path: str | Path, sources: Sequence[str] | None = None, n_sentences: int | None = None) -> NBestLists:
    """The n-best lists of a Moses-format file (plain or gzip), grouped by sentence id.

    sources: the source sentences (sentence id i is ``sources[i]``);
    n_sentences: keep only sentences 0..n_sentences-1 (default: as many as
    ``sources``, else the largest id + 1). Raises FormatError naming the line
    for an entry whose features differ in names or sizes from the first
    entry's or are not finite, or whose sentence id is beyond ``sources`` (or,
    without them, makes more than ``UNSOURCED_EMPTY`` sentences beyond the
    entries).

    The text is read by numba kernels (``pbmt.base.nbest.scan_nbest``); a list
    they do not read whole (text that is not UTF-8, standard input, a line only
    Python reads) or with an entry that does not fit is read line by line, to
    the same lists or the same error.
    """
    limit = n_sentences if n_sentences is not None else (len(sources) if sources is not None else None)
    scanned = scan_nbest(path)
    lists = None if scanned is None else _scanned_lists(scanned, sources, n_sentences, limit)
    return lists if lists is not None else _read_lists_lines(path, sources, n_sentences, limit)


def _scanned_lists(scanned: NBestText, sources: Sequence[str] | None, n_sentences: int | None, limit: int | None
                   ) -> NBestLists | None:
    """``read_lists`` of the entries the kernels read; None when the list is to be read line by line (a line
    they refused, an entry that does not fit the first's features or ``limit``, no entry)."""
    n, sentences = scanned.n_entries, scanned.sentences
    layout, sparse, wrong = scanned_layout(scanned, None)
    kept = np.flatnonzero(sentences < n_sentences) if n_sentences is not None else np.arange(n)
    if scanned.refused is not None or not len(kept) or wrong.any() or (sentences < 0).any() \
            or (limit is not None and (sentences[kept] >= limit).any()) \
            or (limit is None and sentences.max() >= len(kept) + UNSOURCED_EMPTY):
        return None
    features = scanned.values[np.repeat(~sparse, scanned.group_sizes)].reshape(n, layout.size)
    order = kept[np.argsort(sentences[kept], kind="stable")]
    count = limit if limit is not None else int(sentences.max()) + 1
    return NBestLists(layout, features[order], csr.offsets(np.bincount(sentences[kept], minlength=count)),
                      tuple(scanned.hypotheses(order)), scanned.totals[order],
                      None if sources is None else tuple(sources[:count]), alignments=scanned.alignments(order))


def _read_lists_lines(path: str | Path, sources: Sequence[str] | None, n_sentences: int | None, limit: int | None
                      ) -> NBestLists:
    """``read_lists`` through ``parse_line``, line by line."""
    layout, rows, sentences, texts, totals, alignments = None, [], [], [], [], []
    largest = (-1, 0)  # (sentence id, line)
    for number, line in read_lines(path):
        if not line.strip():
            continue
        head = line.split("|||", 1)[0].strip()
        if n_sentences is not None and head.isascii() and head.isdigit() and int(head) >= n_sentences:
            continue
        entry = parse_line(line, path, number)
        if layout is None:
            layout = FeatureLayout(tuple(entry.features), ("",) * len(entry.features),
                                   tuple(len(v) for v in entry.features.values()))
        if tuple(entry.features) != layout.names or any(len(v) != s for v, s in zip(entry.features.values(),
                                                                                    layout.sizes)):
            raise FormatError(path, number, f"features {' '.join(f'{k}({len(v)})' for k, v in entry.features.items())}"
                                            f" differ from the first entry's {' '.join(layout.names)}")
        values = [v for vs in entry.features.values() for v in vs]
        if not all(math.isfinite(v) for v in values) or not math.isfinite(entry.total):
            raise FormatError(path, number, "a feature value or the total is NaN or infinite")
        if entry.sentence < 0 or (limit is not None and entry.sentence >= limit):
            raise FormatError(path, number, f"sentence id {entry.sentence} is outside the {limit} source sentences")
        rows.append(values)
        if entry.sentence > largest[0]:
            largest = (entry.sentence, number)
        sentences.append(entry.sentence)
        texts.append(entry.text)
        totals.append(entry.total)
        alignments.append(np.array(entry.alignment, dtype=np.int32).reshape(-1, 2) if entry.alignment else None)
    if layout is None:
        raise PbmtError(f"{path}: the n-best list has no entries")
    if limit is None and largest[0] >= len(rows) + UNSOURCED_EMPTY:
        raise FormatError(path, largest[1], f"sentence id {largest[0]} makes {largest[0] + 1:,} sentences of "
                                            f"{len(rows):,} entries: give the source sentences (--src) if there "
                                            "are that many")
    sentences = np.array(sentences, dtype=np.int64)
    order = np.argsort(sentences, kind="stable")
    count = limit if limit is not None else int(sentences.max()) + 1
    offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.bincount(sentences, minlength=count), out=offsets[1:])
    return NBestLists(layout, np.array(rows, dtype=np.float64).reshape(len(rows), layout.size)[order], offsets,
                      tuple(texts[i] for i in order), np.array(totals, dtype=np.float64)[order],
                      None if sources is None else tuple(sources[:count]),
                      alignments=None if any(a is None for a in alignments) else tuple(alignments[i] for i in order))


def with_features(lists: NBestLists, specs: Sequence[FeatureSpec]) -> NBestLists:
    """``lists`` with the columns of ``specs`` appended (named as the specs say)."""
    extra, values = compute_features(lists, list(specs))
    clash = set(extra.names) & set(lists.layout.names)
    if clash:
        raise PbmtError(f"rescoring feature(s) {', '.join(sorted(clash))} are already in the n-best list")
    layout = FeatureLayout(lists.layout.names + extra.names, lists.layout.types + extra.types,
                           lists.layout.sizes + extra.sizes)
    return replace(lists, layout=layout, features=np.concatenate([lists.features, values], axis=1))


def to_pool(lists: NBestLists, references: References) -> Pool:
    """The pool of every entry of ``lists`` with its BLEU statistics against ``references``
    (one per sentence); raises PbmtError when the counts differ or a sentence has no entry."""
    if references.n_sentences != lists.n_sentences:
        raise PbmtError(f"the n-best lists cover {lists.n_sentences} sentences but there are "
                        f"{references.n_sentences} references")
    pool = Pool(lists.layout, lists.features, references.stats(lists.texts, lists.sentence), lists.offsets,
                np.arange(lists.n_candidates, dtype=np.uint64), lists.texts)
    pool.check_complete()
    return pool


def decoder_weights(features: np.ndarray, totals: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """float64[n_features]: the weights that best explain the totals (float64[n_cand]) of entries
    with ``features`` (float64[n_cand, n_features]) up to a constant per sentence of ``offsets``
    (int64[n_sent+1]): least squares on per-sentence centred values, minimum norm where a
    column is constant within every sentence."""
    lengths = np.diff(offsets)
    starts = offsets[:-1][lengths > 0]
    sizes = lengths[lengths > 0]
    centred = features - np.repeat(np.add.reduceat(features, starts) / sizes[:, None], sizes, axis=0)
    target = totals - np.repeat(np.add.reduceat(totals, starts) / sizes, sizes)
    return np.linalg.lstsq(centred, target, rcond=None)[0]


@dataclass(frozen=True)
class RescoringModel:
    """Weights for rescoring n-best lists and how to apply them.

    layout: every column (decoder then rescoring features); weights:
    float64[layout.size], raw feature space; features: the rescoring columns
    to compute; algorithm: the optimiser's name; normalisation: "features",
    "score" or "none"; score_range: ``r`` of "score"; scaling,
    scaled_weights: the feature map and the weights on mapped features
    (None unless "features"); parameters: the optimiser's parameters, JSON
    values (``Tuner.params``), kept for the record.
    """

    layout: FeatureLayout
    weights: np.ndarray
    features: tuple[FeatureSpec, ...]
    algorithm: str
    normalisation: str = "none"
    score_range: float | None = None
    scaling: FeatureScaling | None = None
    scaled_weights: np.ndarray | None = None
    parameters: dict = field(default_factory=dict)

    def scores(self, lists: NBestLists) -> np.ndarray:
        """float64[n_cand]: the model score of every entry of ``lists`` (which must have this
        model's columns: ``with_features(lists, self.features)``)."""
        if lists.layout.names != self.layout.names or lists.layout.sizes != self.layout.sizes:
            raise PbmtError(f"the n-best lists have features {' '.join(lists.layout.names)} but the weights are "
                            f"for {' '.join(self.layout.names)}")
        if self.scaling is not None:
            return self.scaling.transform(lists.features) @ self.scaled_weights
        scores = lists.features @ self.weights
        if self.normalisation == "score":
            lengths = np.diff(lists.offsets)
            filled = np.append(lists.offsets[:-1][lengths > 0], lists.offsets[-1])
            top = np.maximum.reduceat(np.abs(scores), filled[:-1]) if len(scores) else np.zeros(0)
            scale = np.where(top > 0, self.score_range / np.where(top > 0, top, 1.0), 1.0)
            scores = scores * np.repeat(scale, lengths[lengths > 0])
        return scores

    def best(self, lists: NBestLists) -> np.ndarray:
        """int64[n_sent]: each sentence's highest-scoring entry (the first on ties), -1 for none."""
        lengths = np.diff(lists.offsets)
        chosen = np.full(lists.n_sentences, -1, dtype=np.int64)
        if lists.n_candidates:
            filled = np.append(lists.offsets[:-1][lengths > 0], lists.offsets[-1])
            chosen[lengths > 0] = argmax_by_sentence(self.scores(lists), filled)
        return chosen

    def write(self, path: str | Path, outputs: Outputs | None = None) -> None:
        """Write the weights file (module docstring), atomically (into ``outputs``, one run's files renamed
        together, when given: it refuses a path naming a file the run reads)."""
        lines = ["# pbmt rescore weights: [weight] in raw feature space; [rescore] (JSON to the end of the file)",
                 "# says how they were learned and, for feature normalisation, the dev set's feature range.",
                 "[weight]"]
        lines += [f"{name}= " + " ".join(repr(float(v)) for v in values)
                  for name, values in self.layout.as_dict(self.weights).items()]
        settings = {"algorithm": self.algorithm, "parameters": self.parameters, "normalisation": self.normalisation,
                    "score_range": self.score_range,
                    "features": [{"kind": s.kind, "name": s.name, "argument": s.argument} for s in self.features]}
        if self.scaling is not None:
            settings.update({"minimum": _named(self.layout, self.scaling.minimum),
                             "maximum": _named(self.layout, self.scaling.maximum),
                             "scaled_weights": _named(self.layout, self.scaled_weights)})
        lines += ["", "[rescore]", json.dumps(settings, indent=1)]
        if outputs is not None:
            outputs.open(path).write("\n".join(lines) + "\n")
            return
        with atomic_write(path) as handle:
            handle.write("\n".join(lines) + "\n")

    @classmethod
    def read(cls, path: str | Path) -> "RescoringModel":
        """Read a weights file; raises FormatError (file, line, what) when it is malformed."""
        lines = list(read_lines(path))
        section, weights, json_start = None, {}, None
        for number, line in lines:
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            if text in ("[weight]", "[rescore]"):
                section = text
                if text == "[rescore]":
                    json_start = number
                    break
                continue
            if section != "[weight]" or "=" not in text:
                raise FormatError(path, number, f"expected [weight], [rescore] or 'Name= values', got {text!r}")
            name, values = text.split("=", 1)
            try:
                weights[name.strip()] = tuple(parse_finite(v) for v in values.split())
            except ValueError:
                raise FormatError(path, number, f"weights of {name.strip()} are not numbers: {values.strip()!r}")
        if json_start is None or not weights:
            raise PbmtError(f"{path}: a weights file needs a [weight] and a [rescore] section")
        body = "\n".join(line for number, line in lines if number > json_start)
        try:
            settings = json.loads(body)
            layout = FeatureLayout(tuple(weights), tuple("" for _ in weights), tuple(len(v) for v in weights.values()))
            specs = tuple(FeatureSpec(f["kind"], f["name"], f["argument"]) for f in settings["features"])
            scaling = scaled = None
            if settings["normalisation"] == "features":
                minimum, maximum, scaled = (_vector(layout, settings[k]) for k in ("minimum", "maximum",
                                                                                     "scaled_weights"))
                scaling = FeatureScaling(minimum, maximum)
            return cls(layout, np.array([v for vs in weights.values() for v in vs]), specs, settings["algorithm"],
                       settings["normalisation"], settings["score_range"], scaling, scaled,
                       settings.get("parameters", {}))
        except json.JSONDecodeError as err:
            raise FormatError(path, json_start + err.lineno, f"[rescore] is not valid JSON: {err.msg}") from None
        except (KeyError, TypeError, ValueError) as err:
            raise FormatError(path, json_start, f"[rescore] lacks or mangles an entry: {err}") from None


def _named(layout: FeatureLayout, vector: np.ndarray) -> dict[str, list[float]]:
    return {name: [float(v) for v in values] for name, values in layout.as_dict(vector).items()}


def _vector(layout: FeatureLayout, named: dict[str, list[float]]) -> np.ndarray:
    if list(named) != list(layout.names) or any(len(named[n]) != s for n, s in zip(layout.names, layout.sizes)):
        raise ValueError(f"features {list(named)} differ from the [weight] list's {list(layout.names)}")
    return np.array([v for n in layout.names for v in named[n]], dtype=np.float64)


def train(lists: NBestLists, references: References, specs: Sequence[FeatureSpec], algorithm: str,
          rng: np.random.Generator, **params) -> RescoringModel:
    """Fit the tuner ``algorithm`` (a name in ``pbmt.tune.registry.pool_tuners()``, built with
    ``params``) on ``lists``, whose last columns are those of ``specs``, starting from the
    decoder's weights (``decoder_weights``) and 0 for the rescoring columns."""
    known = pool_tuners()
    if algorithm not in known:
        raise PbmtError(f"unknown rescoring algorithm {algorithm!r}; known: {', '.join(known)}")
    optimizer = known[algorithm](**params)
    pool = to_pool(lists, references)
    sizes = dict(zip(lists.layout.names, lists.layout.sizes))
    n_decoder = lists.layout.size - sum(sizes[s.name] for s in specs)
    initial = np.zeros(lists.layout.size)
    initial[:n_decoder] = decoder_weights(lists.features[:, :n_decoder], lists.totals, lists.offsets)
    weights = fitted_weights(optimizer, TuningData(pool=pool), initial, rng)
    parameters = {k: list(v) if isinstance(v, tuple) else v for k, v in optimizer.params().items()}
    if isinstance(optimizer, ListNet):
        return RescoringModel(lists.layout, weights, tuple(specs), algorithm, optimizer.normalisation,
                              optimizer.score_range if optimizer.normalisation == "score" else None,
                              optimizer.scaling_, optimizer.scaled_weights_ if optimizer.scaling_ is not None else None,
                              parameters)
    return RescoringModel(lists.layout, weights, tuple(specs), algorithm, parameters=parameters)

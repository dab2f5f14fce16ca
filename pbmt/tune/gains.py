"""The gains tuners maximise, as metric objects with one interface (as sacrebleu's metrics are).

A gain scores BLEU statistics (``pbmt.metrics.bleu``: int64[..., 10], hypothesis
and reference length, matches and totals of orders 1..4): ``gain.score(stats)``
maps every row to a value, float64[...], and what a row holds is the gain's
``level``:

- ``"corpus"``: a whole set's summed statistics (``bleu``: corpus BLEU, what MERT
  maximises and what the loops log as dev BLEU);
- ``"sentence"``: one candidate's statistics (``bleu+1``, Lin & Och's BLEU+1 of
  PRO, APRO, ListNet, Costmargin and the perceptron; ``bleu+1-unclipped``, the
  same with the unclipped brevity penalty of Nakov et al., 2012);
- ``"batch"``: a batch's summed statistics with one sentence's hypothesis
  swapped (``batch-bleu``, SampleRank's smoothed batch BLEU; and
  ``batch-bleu-unclipped``).

A gain of single sentences rewards short hypotheses (a short one keeps its
precision and pays only its own brevity penalty, which the smoothing softens),
so tuners ranking by plain BLEU+1 learn translations shorter than the
references and corpus BLEU pays the brevity penalty; without the clip, a
longer hypothesis is rewarded as a shorter one is punished.

``GAINS`` holds one of each by name; ``gain_of(name, level)`` is how a tuner
takes its ``gain`` parameter (a name, so it prints in a checkpoint's
fingerprint and on the command line).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pbmt.metrics.bleu import bleu

LEVELS = ("corpus", "sentence", "batch")


@dataclass(frozen=True)
class Gain:
    """A gain: its ``name`` (the ``--gain`` value), ``level`` (one of ``LEVELS``: what a row of statistics is),
    BLEU's ``smoothing`` and its constant ``add`` (``pbmt.metrics.bleu.SMOOTHING``), and whether the brevity
    penalty is ``clipped`` at 1 (unclipped: above 1 for a hypothesis longer than its reference)."""

    name: str
    level: str
    smoothing: str
    add: float | None = None
    clipped: bool = True

    def score(self, stats: np.ndarray) -> np.ndarray:
        """The gain of every row of ``stats`` (int64[..., 10]), float64[...]; in [0, 1] when clipped."""
        return bleu(stats, self.smoothing, self.add, self.clipped)

    def corpus_score(self, stats: np.ndarray) -> float:
        """The gain of the summed rows of ``stats`` (int64[n, 10]), as sacrebleu's ``corpus_score``."""
        return float(self.score(np.asarray(stats).sum(axis=0)))

    def __str__(self) -> str:
        return self.name


GAINS = {gain.name: gain for gain in (
    Gain("bleu", "corpus", "exp"),
    Gain("bleu+1", "sentence", "add-k", 1.0),
    Gain("bleu+1-unclipped", "sentence", "add-k", 1.0, clipped=False),
    Gain("batch-bleu", "batch", "add-all", 0.01),
    Gain("batch-bleu-unclipped", "batch", "add-all", 0.01, clipped=False),
)}


def names_of(level: str) -> tuple[str, ...]:
    """The names of the gains of ``level``, in ``GAINS``'s order."""
    return tuple(name for name, gain in GAINS.items() if gain.level == level)


def gain_of(name: str, level: str) -> Gain:
    """The gain called ``name``, which must be of ``level``; ValueError naming the gains of that level."""
    known = names_of(level)
    if name not in known:
        raise ValueError(f"gain must be one of {known}, got {name!r}")
    return GAINS[name]

"""Every tuner of pbmt (``pbmt.tune.tuner``'s contract), in the order ``pbmt tune --help`` lists them.

``TUNERS`` holds the classes; ``ALGORITHMS`` their ``--algorithm`` names; ``tuner_class(name, features)`` the
class that tunes ``features`` ("dense", "binary", "boundary" or "distortion") under that name; ``POOL_TUNERS`` the tuners
whose ``fit`` reads a pool alone, which ``pbmt optimize`` and ``pbmt rescore`` run on n-best lists;
``LOG_FORMATS`` the formats of their ``log.tsv`` files, which ``pbmt plot`` reads.
"""

from __future__ import annotations

from pbmt.base.errors import UsageError
from pbmt.tune.apro import Apro
from pbmt.tune.block_training import BLOCK_TRAINING_LOG, BlockTraining
from pbmt.tune.lattice_mert import LatticeMert
from pbmt.tune.listnet import ListNet
from pbmt.tune.mert import Mert
from pbmt.tune.mira import Mira
from pbmt.tune.pro import Pro
from pbmt.tune.loop import LOOP_LOG
from pbmt.tune.relevant_set import RELEVANT_SET_LOG, Costmargin, Perceptron
from pbmt.tune.samplerank import SAMPLERANK_LOG, SampleRank
from pbmt.tune.tuner import Tuner

TUNERS: tuple[type[Tuner], ...] = (Mert, LatticeMert, Pro, Apro, ListNet, Mira, Costmargin, Perceptron, SampleRank,
                                   BlockTraining)
ALGORITHMS = tuple(dict.fromkeys(t.name for t in TUNERS))
POOL_TUNERS = {t.name: t for t in TUNERS if t.loop == "decode-optimise" and t.reads == ("pool",)}
LOG_FORMATS = (LOOP_LOG, SAMPLERANK_LOG, RELEVANT_SET_LOG, BLOCK_TRAINING_LOG)  # every tuner's log.tsv


def tuner_class(name: str, features: str = "dense") -> type[Tuner]:
    """The tuner called ``name`` that tunes ``features``; UsageError naming the tuners of ``features``."""
    for tuner in TUNERS:
        if tuner.name == name and features in tuner.features:
            return tuner
    able = [t.name for t in TUNERS if features in t.features]
    if name not in ALGORITHMS:
        raise UsageError(f"unknown tuning algorithm {name!r}; known: {', '.join(ALGORITHMS)}")
    tunes = " or ".join(f for t in TUNERS if t.name == name for f in t.features)
    raise UsageError(f"--features {features} is tuned by --algorithm {' or '.join(able)}; {name} tunes {tunes}")

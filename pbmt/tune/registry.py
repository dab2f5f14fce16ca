"""Every tuner of pbmt (``pbmt.tune.tuner``'s contract), in the order ``pbmt tune --help`` lists them.

``TUNERS`` holds the classes; ``ALGORITHMS`` their ``--algorithm`` names; ``tuner_class(name, features)`` the
class that tunes ``features`` ("dense", "binary", "boundary" or "distortion") under that name; ``POOL_TUNERS`` the tuners
whose ``fit`` reads a pool alone, which ``pbmt optimize`` and ``pbmt rescore`` run on n-best lists;
``LOG_FORMATS`` the formats of their ``log.tsv`` files, which ``pbmt plot`` reads.

Tuners of one's own (``docs/writing-a-tuner.md``) join them for ``pbmt tune``, ``optimize`` and ``rescore``
through ``add_tuner`` (``--plugins FILE``: ``pbmt.commands.plugins``); ``tuners()``, ``algorithms()`` and
``pool_tuners()`` are the constants above with those added, ``algorithm_names()`` the names by class name.
"""

from __future__ import annotations

import inspect

from pbmt.base.errors import UsageError
from pbmt.tune.apro import Apro
from pbmt.tune.block_training import BLOCK_TRAINING_LOG, BlockTraining
from pbmt.tune.lattice_mert import LatticeMert
from pbmt.tune.listnet import ListNet
from pbmt.tune.mert import Mert
from pbmt.tune.mira import Mira
from pbmt.tune.options import DEDUP_OPTION, ITERATIONS, KEEP
from pbmt.tune.pro import Pro
from pbmt.tune.loop import LOOP_LOG
from pbmt.tune.relevant_set import RELEVANT_SET_LOG, Costmargin, Perceptron
from pbmt.tune.samplerank import SAMPLERANK_LOG, SampleRank
from pbmt.tune.tuner import Option, Tuner

TUNERS: tuple[type[Tuner], ...] = (Mert, LatticeMert, Pro, Apro, ListNet, Mira, Costmargin, Perceptron, SampleRank,
                                   BlockTraining)
ALGORITHMS = tuple(dict.fromkeys(t.name for t in TUNERS))
POOL_TUNERS = {t.name: t for t in TUNERS if t.loop == "decode-optimise" and t.reads == ("pool",)}
LOG_FORMATS = (LOOP_LOG, SAMPLERANK_LOG, RELEVANT_SET_LOG, BLOCK_TRAINING_LOG)  # every tuner's log.tsv
# what the decode-optimise loop gives a tuner's fit (pbmt.tune.loop), and the options it reads itself
LOOP_READS = ("pool", "lattices", "references")
LOOP_OPTIONS = (ITERATIONS, KEEP, DEDUP_OPTION)

_ADDED: dict[str, type[Tuner]] = {}  # name -> a tuner of one's own, in the order add_tuner was given them


def tuners() -> tuple[type[Tuner], ...]:
    """``TUNERS``, then the tuners ``add_tuner`` was given."""
    return TUNERS + tuple(_ADDED.values())


def algorithms() -> tuple[str, ...]:
    """The ``--algorithm`` names of ``tuners()``."""
    return tuple(dict.fromkeys(t.name for t in tuners()))


def algorithm_names() -> dict[str, str]:
    """The ``--algorithm`` name of each of ``tuners()`` by its class name (the name a checkpoint of an older pbmt
    keeps its tuner by: ``pbmt.tune.loop.tune``)."""
    return {t.__name__: t.name for t in tuners()}


def pool_tuners() -> dict[str, type[Tuner]]:
    """``POOL_TUNERS`` and the tuners added whose ``fit`` reads the pool alone, by name."""
    return {**POOL_TUNERS, **{name: t for name, t in _ADDED.items() if t.reads == ("pool",)}}


def add_tuner(cls: type[Tuner], where: str) -> None:
    """Make ``cls``, a tuner of one's own defined in ``where`` (its file), a tuner of ``pbmt tune`` (and, when its
    ``fit`` reads the pool alone, of ``pbmt optimize`` and ``pbmt rescore``), with the decode-optimise loop's
    options (``--iterations``, ``--keep``, ``--dedup``) before its own ``options``. The loop is the only one
    open to it: the others call methods of pbmt's own tuners. UsageError, naming ``where``, for a class that
    breaks the contract (``pbmt.tune.tuner``) in a way the command line would only find later."""
    problem = broken_tuner(cls)
    if problem is not None:
        raise UsageError(f"{where}: tuner class {cls.__qualname__} has {problem}")
    cls.options = (*[o for o in LOOP_OPTIONS if o not in cls.options], *cls.options)
    _ADDED[cls.name] = cls


def broken_tuner(cls: type[Tuner]) -> str | None:
    """What ``cls``, a tuner class of one's own, has that ``add_tuner`` and ``pbmt.api.Model.tune`` refuse (said
    after "tuner class NAME has"), or None."""
    name = vars(cls).get("name")
    if not isinstance(name, str) or not name:
        return "no name (its --algorithm value)"
    if not name.isprintable() or len(name.split()) != 1 or name.startswith("-"):
        return f"the name {name!r}, which is not one word without a leading '-'"
    if name in ALGORITHMS:
        return f"the name {name!r} of pbmt's own {next(t.title for t in TUNERS if t.name == name)}"
    if _ADDED.get(name, cls) is not cls:
        return f"the name {name!r} of {_ADDED[name].__qualname__} too"
    if not isinstance(getattr(cls, "title", None), str):
        return "no title (its name in prose)"
    if getattr(cls, "loop", None) != "decode-optimise":
        return f"loop {getattr(cls, 'loop', None)!r}: a tuner of one's own runs in the decode-optimise loop"
    reads = getattr(cls, "reads", None)
    if not isinstance(reads, tuple) or "pool" not in reads or not set(reads) <= set(LOOP_READS):
        return f"reads {reads!r}: the decode-optimise loop gives fit the pool and, if asked, lattices and references"
    if tuple(cls.features) != ("dense",):
        return f"features {cls.features!r}: a tuner of one's own tunes the model's dense weights"
    if cls.fit is Tuner.fit:
        return "no fit method of its own"
    try:
        inspect.signature(cls.fit).bind(None, "data", "initial_weights", "rng")
    except TypeError:
        return f"fit{inspect.signature(cls.fit)}, which does not take (self, data, initial_weights, rng)"
    parameters = cls.parameters()
    missing = [name for name, default in parameters.items() if default is inspect.Parameter.empty]
    if missing:
        return (f"constructor parameters without a default ({', '.join(missing)}): a tuner's settings are keyword "
                "arguments with defaults, which the command line's options default to")
    for option in cls.options:
        if not isinstance(option, Option):
            return f"an option {option!r} that is not a pbmt.tune.tuner.Option"
        if option.parameter is not None and option.parameter not in parameters:
            return (f"option {'/'.join(option.flags)} setting {option.parameter!r}, which its constructor does not "
                    f"take (it takes {', '.join(parameters) or 'nothing'})")
    return None


def tuner_class(name: str, features: str = "dense") -> type[Tuner]:
    """The tuner called ``name`` (of ``tuners()``) that tunes ``features``; UsageError naming the tuners of
    ``features``."""
    for tuner in tuners():
        if tuner.name == name and features in tuner.features:
            return tuner
    able = [t.name for t in tuners() if features in t.features]
    if name not in algorithms():
        raise UsageError(f"unknown tuning algorithm {name!r}; known: {', '.join(algorithms())}")
    tunes = " or ".join(f for t in tuners() if t.name == name for f in t.features)
    raise UsageError(f"--features {features} is tuned by --algorithm {' or '.join(able)}; {name} tunes {tunes}")

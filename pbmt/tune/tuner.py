"""The tuner contract: every tuning algorithm is a class of it, and ``pbmt.tune.registry`` holds them all.

A tuner is built with its settings as constructor parameters (keyword
arguments with defaults; the command line's defaults are read from them) and
fitted by the loop its class declares, on the data that loop gathers::

    tuner.fit(data, initial_weights, rng) -> tuner      # sets tuner.weights_

``data`` is a ``TuningData``; the class declares which of its fields ``fit``
reads (``reads``), and the loop fills those (``TuningData.check`` refuses a
call that lacks one). The loops (``loop``), and what they provide:

- ``"decode-optimise"`` (``pbmt.tune.loop``): decode the dev set, pool the
  n-best lists, fit on the whole ``pool`` (MERT, PRO, APRO, ListNet, batch
  MIRA); lattice MERT also reads the last decode's search graphs
  (``lattices``) and the ``references``;
- ``"relevant-set"`` (``pbmt.tune.relevant_set``): decode, add each 1-best to
  its sentence's relevant set, the ``pool``, and fit on it from zero
  (Costmargin, the perceptron);
- ``"block"`` (``pbmt.tune.block_training``): the same on binary block features
  of a training subset, whose relevant sets are ``blocks``;
- ``"sampler"`` (``pbmt.tune.samplerank``): no decoder; ``fit`` walks the
  Gibbs sampler over the dev set's batches itself (``sampler``).

``initial_weights`` is float64[n_features] in the data's column order (the
weights the last decode used; SampleRank: the model's dense then sparse
weights); ``rng`` a ``numpy.random.Generator``, the tuner's only source of
randomness (loops checkpoint its state, so a resumed run draws what an
uninterrupted run draws). A tuner that damps its step (PRO's Psi) does so
inside ``fit``: the previous weights are ``initial_weights``.

``params()`` are the constructor's parameters as set (scikit-learn's
``get_params``): a resumed run must have the same ones (they are part of its
checkpoint's fingerprint), but ``progress``, which shows the work and does not
change it. Fitted attributes end in ``_``.

``options`` lists the command-line options that set a tuner's parameters or
its loop's settings (``Option``): ``pbmt tune``, ``pbmt optimize`` and ``pbmt
rescore`` build their parsers from them, so an option's help sits beside the
parameter it sets and its default is the constructor's.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Sequence

import numpy as np

from pbmt.base.errors import PbmtError
from pbmt.tune.pool import checked_weights, tuned_weights

LOOPS = ("decode-optimise", "relevant-set", "block", "sampler")


def l1_normalised(weights: np.ndarray, measured: np.ndarray | None = None) -> np.ndarray:
    """``weights`` divided by the L1 norm of those ``measured`` (bool mask; default all) (as they are when
    that is zero): one scale for weights whose scale the search ignores, so that two of them can be
    interpolated by direction (MERT's and MIRA's Psi)."""
    norm = np.abs(weights if measured is None else weights[measured]).sum()
    return weights / norm if norm > 0 else weights


def toward(answer: np.ndarray, start: np.ndarray, psi: float, measured: np.ndarray | None = None) -> np.ndarray:
    """A step the share ``psi`` of the way from ``start`` to a tuner's ``answer``, by direction (both
    ``l1_normalised`` by the norm of the weights ``measured``, default all): ``psi l1(answer) + (1 - psi)
    l1(start)``, of L1 norm 1 over ``measured`` when their signs agree."""
    return psi * l1_normalised(answer, measured) + (1.0 - psi) * l1_normalised(start, measured)

def check_min_sentences(min_sentences: int) -> None:
    """ValueError unless ``min_sentences``, a sparse tuner's cut-off (``Tuner.min_sentences``), is a count >= 1."""
    if isinstance(min_sentences, bool) or not isinstance(min_sentences, (int, np.integer)) or min_sentences < 1:
        raise ValueError(f"min_sentences must be a whole number >= 1, got {min_sentences!r}")

#: an ``Option``'s default: its parameter's default in the constructor of the first tuner listing it
CONSTRUCTOR = object()
#: an ``Option``'s default: not given (argparse: None), so each tuner takes its own constructor's default
TUNER_DEFAULT = object()


@dataclass(frozen=True)
class Group:
    """A titled group of options in ``--help``; ``description`` says what the tuners of the group do."""

    title: str
    description: str | None = None


@dataclass(frozen=True)
class Option:
    """A command-line option of the tuners that list it in their ``options``.

    flags: its spellings; help: its help text, where ``{Class.parameter}``
    stands for that tuner class's default (the command line fills it in);
    parameter: the constructor
    parameter it sets (None: a setting of the tuner's loop, which reads it
    by its argparse destination), also its destination unless ``dest`` says
    otherwise; group: its ``Group`` in the
    help (None: among the common options); default: ``CONSTRUCTOR`` (the
    parameter's default in the constructor of the first tuner listing the
    option), ``TUNER_DEFAULT`` (not given: the chosen tuner's constructor
    default; its help then names each tuner's) or a value (a loop setting's
    default). type, choices,
    metavar: argparse's; boolean: a ``--flag/--no-flag`` pair.
    """

    flags: tuple[str, ...]
    help: str
    parameter: str | None = None
    group: Group | None = None
    default: Any = CONSTRUCTOR
    type: Callable | None = None
    choices: Sequence | None = None
    metavar: str | None = None
    boolean: bool = False
    dest: str | None = None

    @property
    def destination(self) -> str:
        return self.dest or self.parameter or self.flags[-1].lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class TuningData:
    """What a loop gives a tuner's ``fit``; the tuner's class declares the fields it reads (``Tuner.reads``).

    pool: a ``pbmt.tune.pool.Pool`` (the decode-optimise loop's accumulated
    n-best pool, or the relevant sets); lattices: ``pbmt.search.lattice.Lattice``
    of each dev sentence, from the last decode; references: the dev references
    (``pbmt.tune.pool.References``); blocks: the binary block features'
    ``pbmt.tune.block_training.BlockSets``; sampler: SampleRank's
    ``pbmt.tune.samplerank.SamplerTask`` (the model and the dev set it samples).
    """

    pool: Any = None
    lattices: Sequence[Any] | None = None
    references: Any = None
    blocks: Any = None
    sampler: Any = None

    def check(self, tuner: "Tuner") -> None:
        """PbmtError naming the fields ``tuner`` reads that this data lacks."""
        missing = [name for name in tuner.reads if getattr(self, name) is None]
        if missing:
            raise PbmtError(f"{tuner.name} reads {' and '.join(missing)}, which its loop did not provide")


def fitted_weights(tuner: "Tuner", data: TuningData, initial_weights: np.ndarray,
                   rng: np.random.Generator) -> np.ndarray:
    """``tuner.fit(data, initial_weights, rng).weights_`` as float64[len(initial_weights)], checked: ``fit``
    returns a fitted tuner whose ``weights_`` are as many as ``initial_weights`` and finite. PbmtError, one
    line naming the tuner's class and file, otherwise: a tuner of one's own that breaks the contract."""
    fitted = tuner.fit(data, initial_weights, rng)
    weights = getattr(fitted, "weights_", None)
    problem = ("returned None, not the tuner (end fit with `return self`)" if fitted is None else
               "set no weights_" if weights is None else None)
    if problem is None:
        try:
            weights = np.array(weights, dtype=np.float64)
        except (TypeError, ValueError):
            problem = f"set weights_ to a {type(weights).__name__}, not numbers"
    if problem is None and weights.shape != np.shape(initial_weights):
        problem = (f"set weights_ of shape {weights.shape}, not {np.shape(initial_weights)}: one weight per column "
                   "of the pool, in the order of initial_weights")
    if problem is None and not np.isfinite(weights).all():
        problem = f"set weights_ with {np.count_nonzero(~np.isfinite(weights))} that are not finite"
    if problem is not None:
        cls = type(tuner)
        try:
            where = f" ({inspect.getsourcefile(cls)}:{inspect.getsourcelines(cls.fit)[1]})"
        except (OSError, TypeError):
            where = ""
        raise PbmtError(f"{cls.__name__}.fit{where} {problem}")
    return weights


class Tuner:
    """The base of every tuner (module docstring). A subclass sets ``name`` (its ``--algorithm`` value),
    ``title`` (its name in prose), ``loop`` (one of ``LOOPS``), ``reads`` (the ``TuningData`` fields its ``fit``
    reads), ``features`` (the ``--features`` values it tunes: "dense", "binary", "boundary" or "distortion"), ``options``,
    ``gain_level`` (the level, ``pbmt.tune.gains.LEVELS``, of the gain its ``gain`` parameter names; None: no
    such parameter), ``presets`` (named sets of parameters; ``preset_option``: the destination of the option
    choosing one: options given override it, it overrides the defaults), ``sparse`` (a pool tuner that tunes the
    pool's sparse columns beside the dense ones when its initial weights cover them), ``fixed`` (the feature
    names whose weights stay as given), ``min_sentences`` (a ``sparse`` tuner tunes only the sparse features
    present in that many of the pool's sentences; the others keep their weights), and implements ``fit`` (a pool
    tuner's begins with ``checked_start``)."""

    name: ClassVar[str]
    title: ClassVar[str]
    loop: ClassVar[str]
    reads: ClassVar[tuple[str, ...]]
    features: ClassVar[tuple[str, ...]] = ("dense",)
    options: ClassVar[tuple[Option, ...]] = ()
    gain_level: ClassVar[str | None] = None
    presets: ClassVar[dict[str, dict[str, Any]]] = {}
    preset_option: ClassVar[str | None] = None
    sparse: ClassVar[bool] = False
    fixed: tuple[str, ...] = ()
    min_sentences: int = 1
    weights_: np.ndarray

    def fit(self, data: TuningData, initial_weights: np.ndarray, rng: np.random.Generator) -> "Tuner":
        raise NotImplementedError

    def checked_start(self, data: TuningData, initial_weights: np.ndarray) -> tuple[Any, np.ndarray, np.ndarray]:
        """The checked start of a pool tuner's ``fit`` (its first line, pbmt's and one's own: part of the
        contract): ``data`` holds what the tuner reads and its ``pool`` a candidate of every sentence (else
        PbmtError); ``initial_weights`` are finite and as many as the pool's dense columns, or, for a ``sparse``
        tuner, its dense then sparse ones (else ValueError).

        Returns ``(pool, initial, tuned)``: initial a new float64[n] copy of ``initial_weights``, tuned
        bool[n] the weights the tuner changes, all but the ``fixed`` features' and the sparse ones present in
        fewer than ``min_sentences`` of the pool's sentences (``pbmt.tune.pool.tuned_weights``)."""
        data.check(self)
        pool = data.pool
        pool.check_complete()
        initial = checked_weights(pool, initial_weights, sparse=self.sparse)
        return pool, initial, tuned_weights(pool, self.fixed, len(initial), self.min_sentences)

    @classmethod
    def parameters(cls) -> dict[str, Any]:
        """The constructor's parameters and their defaults, by name."""
        return {name: p.default for name, p in inspect.signature(cls).parameters.items()
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}

    @classmethod
    def default(cls, parameter: str) -> Any:
        """The constructor's default of ``parameter``."""
        return cls.parameters()[parameter]

    @classmethod
    def for_search(cls, params: dict[str, Any], reordering: str, n_sentences: int | None = None) -> dict[str, Any]:
        """``params`` for decoding in the ``reordering`` search space a dev set of ``n_sentences`` (None: not
        known; MERT damps its steps in MON/SWAP and on a small dev set)."""
        return params

    @property
    def called(self) -> str:
        """The tuner as ``pbmt tune``'s options name it (``--algorithm mert``; ``--features binary`` too for a tuner
        of no dense weights), as its run folder names its run (``pbmt.base.run_state.RunFolder``)."""
        return f"--algorithm {self.name}" + ("" if "dense" in self.features else f" --features {self.features[0]}")

    def params(self) -> dict[str, Any]:
        """The parameters as set (public attributes not ending in ``_``), but ``progress`` and ``threads`` (how a
        run shows and where it runs, not what it computes: a run resumes on any number of threads)."""
        return {k: v for k, v in vars(self).items() if not k.startswith("_") and not k.endswith("_")
                and k not in ("progress", "threads")}

"""The feature contract: what a feature of the model declares, the registry of features by Moses name, and
the dense feature vector's layout.

A feature is a ``FeatureFunction`` subclass registered under the name its
``moses.ini`` line starts with (``register``), in the spirit of Moses2's
``EvaluateInIsolation`` / ``EvaluateWhenApplied``:

- its columns (``n_scores``, one weight each, named ``name`` or ``name[k]``);
- its option-local scores (``local``, ``unknown_local``, ``markup_local``):
  computed once per phrase-table candidate when the model's weights are set,
  so the searches only add them;
- optionally, its estimate of a phrase pair out of context (``estimate``),
  which prunes the table and makes the future costs, as Moses's
  ``EvaluateInIsolation`` estimates do;
- if it scores a block in context, its sentence data (``sentence_data``, a
  named tuple) and two ``@njit`` kernels registered for that named tuple with
  ``register_kernels`` (``pbmt.model.features``): a transition over its
  slice of the searches' state row (``state_width`` int64 values; 0 for a
  stateless feature, which may read the previous block instead) and its
  end-of-sentence score. ``pbmt.search._scoring_kernels.transition`` composes
  every feature's kernels into the searches' weighted score and the
  per-column form of n-best lists, ``score_derivation``, lattices and the
  sampler: one definition, both forms.

A sparse family (``pbmt.model.sparse``: class-pair boundaries, block
features, distortion bins) is registered here too, under a type of no
columns (``FeatureType.n_scores`` 0, ``sparse_family`` set): its line declares
the family and its options, ``TranslationModel.sparse`` scores it, and its
weights are the ``[weight-file]``'s (``pbmt.base.config``).

Feature values are natural logs (Moses's convention): ``LM0`` is KenLM's log10
score times ln 10, ``WordPenalty0`` is minus the number of target words,
``PhrasePenalty0`` the number of phrases, ``Distortion0`` minus the summed jump
widths, ``UnknownWordPenalty0`` -100 per unknown word, ``TranslationModel0``
and ``LexicalReordering0`` sums of the tables' log probabilities.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import ClassVar

import numpy as np

from pbmt.base.config import FEATURE_TYPES, Feature, FeatureType, MosesConfig
from pbmt.base.errors import FormatError, PbmtError
from pbmt.base.feature_modules import error_place
from pbmt.model._feature_kernels import feature_end, feature_transition, kernels_registered, register_kernels
from pbmt.base.vocab import Vocab
from pbmt.model.phrase_table import PhrasePairs

__all__ = ["FEATURES", "FeatureFunction", "FeatureLayout", "checked_scores", "defined_at", "feature_end",
           "feature_transition", "kernels_registered", "make_features", "register", "register_kernels"]


class FeatureFunction:
    """One feature of a model, made from its ``moses.ini`` line (``spec``) when the model loads.

    Subclasses set ``moses_name`` (the registry key) and override what they
    score; the defaults score nothing. ``state_width``: int64 values of state
    the feature keeps per hypothesis (the searches recombine hypotheses whose
    state rows are equal, so a stateful feature must read the past through its
    state alone); ``reads_previous_option``: a stateless feature's transition
    reads the previous block's option (not only its span), so hypotheses
    recombine only with the same last option; ``scores_transitions``: the
    feature has kernels and ``sentence_data``.
    """

    moses_name: ClassVar[str] = ""
    syntax: ClassVar[FeatureType | None] = None  # its line's naming and score count; None: Moses's own (pbmt.base.config)
    state_width: ClassVar[int] = 0
    reads_previous_option: ClassVar[bool] = False
    scores_transitions: ClassVar[bool] = False
    sparse_family: ClassVar[str | None] = None  # a family of pbmt.model.sparse.FAMILIES: a line of no columns
    # The files ``estimate`` reads besides the phrase pairs: a feature that names them has its estimate of the
    # whole phrase table kept beside the table's binary cache (keyed by these files, its class and its line's
    # arguments), so a process that loads the model again maps it instead of computing it; empty: computed
    # in every process that loads the model.
    estimate_files: tuple = ()

    def __init__(self, spec: Feature, config: MosesConfig, vocab: Vocab):
        """Load what the feature reads (files named on its line are resolved by ``config.resolve``; words go
        to ``vocab``)."""
        self.spec = spec

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def n_scores(self) -> int:
        return self.spec.n_scores

    def local(self, table) -> np.ndarray | None:
        """Option-local scores of every candidate of a ``PhraseTable``: ``float64[n_cand, n_scores]``, or None
        for zeros."""
        return None

    def unknown_local(self, n_words: int, letterless: bool) -> np.ndarray | None:
        """Option-local scores of ``n_words`` unknown source words passed through (``letterless``: they have no
        letter, so copying them is their translation): ``float64[n_scores]``, or None for zeros."""
        return None

    def markup_local(self, n_words: int, log_prob: float) -> np.ndarray | None:
        """Option-local scores of a translation of ``n_words`` target words the input's markup gives with
        probability ``exp(log_prob)``: ``float64[n_scores]``, or None for zeros."""
        return None

    def estimate(self, pairs: PhrasePairs) -> np.ndarray | None:
        """The feature's estimate of phrase pairs out of context (``pbmt.model.phrase_table.PhrasePairs``: source
        and target words, word links), for pruning the table and future costs only, in the units of its columns:
        ``float64[len(pairs), n_scores]``, or None. Computed once per phrase-table candidate while the
        feature's weights are not all zero, and for each sentence's other options."""
        return None

    def begin_state(self) -> np.ndarray:
        """The feature's state at the sentence start, ``int64[state_width]``."""
        return np.zeros(self.state_width, dtype=np.int64)

    def sentence_data(self, options, cache):
        """What the feature's kernels read of one sentence's ``TranslationOptions`` (``options``), as the named
        tuple its kernels are registered for; ``cache``: the calling thread's ``LMCache`` of LM scores."""
        raise NotImplementedError(f"{type(self).__name__} scores transitions but gives no sentence_data")


#: The feature classes by the Moses name a ``moses.ini`` line starts with.
FEATURES: dict[str, type[FeatureFunction]] = {}
_PBMT_NAMES = frozenset(FEATURE_TYPES)  # the names of pbmt's own features, which a feature of one's own cannot take


def register(cls: type[FeatureFunction]) -> type[FeatureFunction]:
    """Class decorator: make ``cls`` the feature of ``moses.ini`` lines starting with ``cls.moses_name``. A
    feature Moses does not know declares its line's syntax (``cls.syntax``). A class defined outside pbmt may
    not take the name of one of pbmt's own features (it would replace it in every model loaded after it)."""
    if not cls.moses_name:
        raise ValueError(f"{cls.__name__} has no moses_name")
    if cls.moses_name in _PBMT_NAMES and not _is_pbmts(cls):
        raise ValueError(f"{cls.__name__}: {cls.moses_name!r} is the name of one of pbmt's own features; give "
                         "yours a moses_name of its own")
    syntax = cls.syntax or FEATURE_TYPES.get(cls.moses_name)
    if syntax is None:
        raise ValueError(f"{cls.__name__}: {cls.moses_name} is not a Moses feature pbmt reads; give its syntax")
    if syntax.sparse != (cls.sparse_family is not None):
        raise ValueError(f"{cls.__name__}: a feature of no columns (n_scores 0) is a sparse family of "
                         "pbmt.model.sparse, and a sparse family has no columns")
    FEATURE_TYPES[cls.moses_name] = syntax
    FEATURES[cls.moses_name] = cls
    return cls


def make_features(config: MosesConfig, vocab: Vocab) -> tuple[FeatureFunction, ...]:
    """The features of every ``[feature]`` line of a ``moses.ini`` that has columns, in order (the sparse
    families' lines are ``pbmt.model.sparse.read_sparse``'s); a line whose name no feature is registered under
    is an error naming the line and the names known."""
    made = []
    for spec in config.features:
        if not spec.n_scores:
            continue
        cls = FEATURES.get(spec.type)
        if cls is None:
            raise FormatError(config.path or "moses.ini", spec.line, f"no feature is registered as {spec.type!r}; "
                              f"known: {', '.join(FEATURES)}")
        try:
            feature = cls(spec, config, vocab)
            problem = _broken_contract(feature, spec)
        except PbmtError:
            raise
        except Exception as err:
            if _is_pbmts(cls):
                raise
            # a feature of a model's own module (pbmt.toml's [features]): its error is the line's, said on one line
            module = Path(inspect.getfile(cls))
            raise FormatError(config.path or "moses.ini", spec.line, f"{spec.type}: {error_place(err, module, module)}"
                              f"{type(err).__name__}: {' '.join(str(err).split())}") from None
        if problem is not None:
            raise FormatError(config.path or "moses.ini", spec.line, f"{spec.type}: {defined_at(feature)}: {problem}")
        made.append(feature)
    return tuple(made)


def _is_pbmts(cls: type) -> bool:
    return cls.__module__.split(".")[0] == "pbmt"


def defined_at(feature: FeatureFunction) -> str:
    """``file:line`` of the class of ``feature``, for an error that is its author's."""
    cls = type(feature)
    try:
        return f"{inspect.getsourcefile(cls)}:{inspect.getsourcelines(cls)[1]}"
    except (OSError, TypeError):
        return f"{cls.__module__}.{cls.__qualname__}"


def _broken_contract(feature: FeatureFunction, spec: Feature) -> str | None:
    """What ``feature``, made from ``spec``, declares that the searches cannot run (``FeatureFunction``'s
    contract), or None: an ``__init__`` that did not keep its line (``super().__init__``), a ``state_width``
    that is not a count, a ``begin_state`` that is not ``int64[state_width]`` (the searches' state rows would
    shift), transitions scored without ``sentence_data``."""
    if getattr(feature, "spec", None) is not spec:
        return ("its __init__ does not call super().__init__(spec, config, vocab), which keeps the feature's "
                "moses.ini line (its name and columns)")
    width = feature.state_width
    if isinstance(width, bool) or not isinstance(width, (int, np.integer)) or width < 0:
        return f"state_width is {width!r}, not a count of int64 values"
    if not feature.scores_transitions:
        return None
    if type(feature).sentence_data is FeatureFunction.sentence_data:
        return "scores_transitions is True but the class has no sentence_data (what its kernels read of a sentence)"
    begin = feature.begin_state()
    if not isinstance(begin, np.ndarray) or begin.shape != (width,) or begin.dtype.kind not in "iu":
        shown = (f"{begin.dtype}{list(begin.shape)}" if isinstance(begin, np.ndarray) else type(begin).__name__)
        return f"begin_state() returned {shown}, not int64[{width}] (int64[state_width])"
    return None


def checked_scores(feature: FeatureFunction, method: str, values, rows: int | None) -> np.ndarray | None:
    """``values``, what ``feature``'s ``method`` (``local``, ``estimate``, ``unknown_local``, ``markup_local``)
    returned, checked: None, or ``float64[rows, n_scores]`` (``rows`` None: ``float64[n_scores]``) without NaN.
    PbmtError naming the feature's class and what it returned otherwise: another shape would be broadcast into
    other columns or fail deep in a search."""
    if values is None:
        return None
    shape = (feature.n_scores,) if rows is None else (rows, feature.n_scores)
    array = np.asarray(values)
    if array.shape != shape or array.dtype.kind not in "fiu" or np.isnan(array).any():
        got = (f"{array.dtype}{list(array.shape)}" if array.shape != shape or array.dtype.kind not in "fiu"
               else "NaN values")
        wanted = "[n_scores]" if rows is None else "[rows, n_scores]"
        raise PbmtError(f"feature {feature.name} ({type(feature).__name__}, {defined_at(feature)}): {method} returned "
                        f"{got}, not float64[{', '.join(map(str, shape))}] (float64{wanted}, no NaN)")
    return array


@dataclass(frozen=True)
class FeatureLayout:
    """Names and column ranges of the dense features, in moses.ini order."""

    names: tuple[str, ...]
    types: tuple[str, ...]
    sizes: tuple[int, ...]

    @classmethod
    def from_config(cls, config: MosesConfig) -> "FeatureLayout":
        """The layout of a moses.ini's ``[feature]`` section (its features with columns)."""
        dense = tuple(f for f in config.features if f.n_scores)
        return cls(tuple(f.name for f in dense), tuple(f.type for f in dense), tuple(f.n_scores for f in dense))

    @property
    def size(self) -> int:
        """Number of dense columns."""
        return sum(self.sizes)

    @cached_property
    def slices(self) -> tuple[tuple[str, slice], ...]:
        """(name, column range) of every feature, in order."""
        bounds = np.concatenate([[0], np.cumsum(self.sizes)]).tolist()
        return tuple((n, slice(bounds[i], bounds[i + 1])) for i, n in enumerate(self.names))

    def columns(self, name: str) -> slice:
        """Column range of feature ``name``."""
        for n, columns in self.slices:
            if n == name:
                return columns
        raise KeyError(f"no feature named {name!r}; the features are {', '.join(self.names)}")

    def weights(self, config: MosesConfig) -> np.ndarray:
        """The weight vector ``float64[size]`` of a moses.ini, in this layout."""
        return np.concatenate([np.asarray(config.weights[n], dtype=np.float64) for n in self.names])

    def as_dict(self, vector: np.ndarray) -> dict[str, tuple[float, ...]]:
        """A dense vector split by feature name."""
        values = np.asarray(vector, dtype=np.float64).tolist()
        return {n: tuple(values[columns]) for n, columns in self.slices}

"""A complete translation model loaded from ``moses.ini``.

``TranslationModel`` holds what the decoder, the sampler and the tuners share:
the vocabulary, the phrase table pruned under the current weights, the
language model, the reordering scores of every phrase pair, the feature layout
and weights, and the search settings. Preprocessing of plain text (tokenise,
truecase or lowercase) is pbmt's own and lives in ``pbmt.toml`` beside the ini file.
"""

from __future__ import annotations

import functools
import os
import pickle
import shutil
import threading
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

from pbmt.base.config import MosesConfig, relative_path
from pbmt.base.errors import FormatError, PbmtError, UsageError
from pbmt.base.files import MAX_INDEX, atomic_write, open_binary, parse_int
from pbmt.model import cache
from pbmt.model.block_features import BlockScores
from pbmt.model.features import FeatureFunction, FeatureLayout, checked_scores, make_features
from pbmt.model.lm import LMCache, NgramLM
from pbmt.model import osm  # noqa: F401 (registers OpSequenceModel)
from pbmt.model.moses_features import KENLM, LexicalReordering, PhraseDictionaryMemory
from pbmt.base.pbmt_toml import FILE, check_keys, read_tables, write_tables
from pbmt.model.phrase_table import PhrasePairs, PhraseTable, read_only
from pbmt.model.reordering import ReorderingTable
from pbmt.model.sparse import SparseModel, read_sparse
from pbmt.base.protected import ProtectedPatterns
from pbmt.base.text import TextForm
from pbmt.base.vocab import Overlay, Vocab

# "distortion": any order within Moses's distortion limit; "mon-swap": monotone, or a block swapped with its
# right neighbour (Tillmann & Zhang's block orientation model)
REORDERING_MODES = ("distortion", "mon-swap")
# "stack": every kept hypothesis extended by every option (Koehn's beam search); "cube": cube pruning with a
# pop limit per stack (Chiang 2007; Moses's -search-algorithm 1)
SEARCH_ALGORITHMS = ("stack", "cube")
DEFAULT_ANNEAL = (1.0, 0.01)  # document decoding's default annealing temperatures (natural-log scores)
_MOSES_SEARCH_ALGORITHMS = {"0": "stack", "1": "cube"}  # the ini's [search-algorithm] numbers pbmt implements


@dataclass(frozen=True)
class SearchSettings:
    """Decoder settings, with Moses's defaults and ini section names."""

    stack_size: int = 200  # [stack]
    beam_threshold: float = 1e-5  # [beam-threshold]: keep hypotheses within this probability ratio of the best
    distortion_limit: int = 6  # [distortion-limit]; -1 = unlimited
    table_limit: int = 20  # [ttable-limit]: candidates kept per source phrase
    max_phrase_length: int = 20  # [max-phrase-length]
    reordering: str = "distortion"  # pbmt.toml [search]: "distortion" (Moses's limit) or "mon-swap" (Tillmann & Zhang)
    search: str = "cube"  # [search-algorithm]: "cube" (Moses's 1) or "stack" (Moses's 0)
    pop_limit: int = 1000  # [cube-pruning-pop-limit]: hypotheses popped per stack by cube pruning; <= 0: no limit

    def __post_init__(self):
        """Every setting checked here, wherever it came from (ini, pbmt.toml, command line): a stack of 0 or a
        beam threshold above 1 would decode empty lines or word salad without a word."""
        if self.reordering not in REORDERING_MODES:
            raise UsageError(f"unknown reordering mode {self.reordering!r}; known: {', '.join(REORDERING_MODES)}")
        for name, option, section, least in (("stack_size", "--stack", "stack", 1),
                                             ("distortion_limit", "--distortion-limit", "distortion-limit", -1),
                                             ("table_limit", "--ttable-limit", "ttable-limit", 1),
                                             ("max_phrase_length", None, "max-phrase-length", 1)):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or not least <= value <= MAX_INDEX:
                raise UsageError(f"{name} ({option + ', ' if option else ''}[{section}]) must be an integer of at "
                                 f"least {least} and at most {MAX_INDEX:,} (the search's are 32-bit), got {value!r}")
        b = self.beam_threshold
        if not isinstance(b, (int, float)) or not 0.0 <= b <= 1.0:
            raise UsageError(f"beam_threshold (--beam-threshold, [beam-threshold]) must be a probability ratio in "
                             f"[0, 1], got {b!r}")
        if self.search not in SEARCH_ALGORITHMS:
            raise UsageError(f"unknown search algorithm {self.search!r}; known: {', '.join(SEARCH_ALGORITHMS)}")
        pop = self.pop_limit
        if not isinstance(pop, (int, np.integer)) or isinstance(pop, bool) or not 0 <= pop <= MAX_INDEX:
            raise UsageError(f"pop_limit (--pop-limit, [cube-pruning-pop-limit]) must be an integer of at least 0 "
                             f"(0: no limit) and at most {MAX_INDEX:,}, got {pop!r}")

    @classmethod
    def from_config(cls, config: MosesConfig) -> "SearchSettings":
        """Moses's settings from the ini, pbmt's own (``reordering``) from ``[search]`` of the ``pbmt.toml`` beside
        it; an ini with a ``[reordering]`` section (which Moses rejects) is an error saying where it moved."""
        d = cls()
        folder = Path(config.path).parent if config.path else None
        if "reordering" in config.settings:
            raise PbmtError(f"{config.path or 'moses.ini'}: [reordering] is a pbmt setting and makes the ini "
                            f"unloadable by Moses: delete the section and put 'reordering = "
                            f"\"{config.setting('reordering', d.reordering)}\"' under [search] in "
                            f"{folder / FILE if folder else FILE}")
        search = read_tables(folder).get("search", {}) if folder else {}
        if folder:
            check_keys(folder, "search", search, ("reordering",))
            if search.get("reordering", d.reordering) not in REORDERING_MODES:
                raise PbmtError(f"{folder / FILE}: [search] unknown reordering mode {search['reordering']!r}; "
                                f"known: {', '.join(REORDERING_MODES)}")
        try:
            return cls._from_config(config, d, search)
        except UsageError as err:
            raise FormatError(config.path or "moses.ini", None, str(err)) from None

    @classmethod
    def _from_config(cls, config: MosesConfig, d: "SearchSettings", search: dict) -> "SearchSettings":
        return cls(
            stack_size=config.setting("stack", config.setting("s", d.stack_size, int), int),
            beam_threshold=config.setting("beam-threshold", config.setting("b", d.beam_threshold, float), float),
            distortion_limit=config.setting("distortion-limit", d.distortion_limit, int),
            table_limit=config.setting("ttable-limit", d.table_limit, int),
            max_phrase_length=config.setting("max-phrase-length", d.max_phrase_length, int),
            reordering=search.get("reordering", d.reordering),
            search=_search_algorithm(config, d.search),
            pop_limit=config.setting("cube-pruning-pop-limit", d.pop_limit, int),
        )


def _search_algorithm(config: MosesConfig, default: str) -> str:
    """pbmt's name of the ini's ``[search-algorithm]`` (Moses's number), or ``default`` when absent."""
    number = config.setting("search-algorithm", None, str)
    if number is None:
        return default
    if number not in _MOSES_SEARCH_ALGORITHMS:
        known = ", ".join(f"{k} ({v})" for k, v in _MOSES_SEARCH_ALGORITHMS.items())
        raise PbmtError(f"{config.path or 'moses.ini'}: [search-algorithm] {number} is not one pbmt implements; "
                        f"known: {known}")
    return _MOSES_SEARCH_ALGORITHMS[number]


#: The keys of ``[preprocess]`` that name a file in the model folder.
_FILES = ("source_truecaser", "target_truecaser", "protected")


def _meant(given: str, resolved: Path) -> str:
    """What a feature's ``path=`` that names no file from the ini's folder may mean, for its error: the file
    from the working directory (Moses reads a relative path from there), the same name with ``.gz``, or a
    compact table of that name (Moses's binary form, which pbmt does not read)."""
    if not Path(given).expanduser().is_absolute() and Path(given).expanduser().is_file():
        return (f"; {given} is a file from the working directory, from where Moses reads a relative path: pbmt "
                "reads it from the moses.ini's folder, so give the path from there or an absolute one")
    if Path(f"{resolved}.gz").is_file():
        return f"; {resolved}.gz is there: add .gz to path="
    if compact := next((f"{resolved}{end}" for end in (".minphr", ".minlexr") if Path(f"{resolved}{end}").is_file()),
                       None):
        return f"; {compact} is a compact table, which pbmt does not read: name the text table it was built from"
    return ""


@dataclass(frozen=True)
class Preprocessing:
    """How plain text is turned into the model's tokens and back, from the ``[preprocess]`` table of
    ``pbmt.toml``.

    ``tokenize``: Moses's tokeniser; casing: ``truecase`` (Moses's truecaser, whose model files for each side
    are ``source_truecaser`` and ``target_truecaser``), or ``lowercase``, or neither (the text's own casing);
    ``protected``: a file of the model's own protected patterns (``pbmt.base.protected``), beside the
    built-in ones; ``placeholders``: numbers and protected tokens stand in the model as class tokens
    (``pbmt.base.placeholders``). Files are named relative to the model folder in ``pbmt.toml`` and held here as
    absolute paths.
    """

    tokenize: bool = False
    lowercase: bool = False
    truecase: bool = False
    source_language: str = "es"
    target_language: str = "en"
    source_truecaser: Path | None = None
    target_truecaser: Path | None = None
    protected: Path | None = None
    placeholders: bool = False

    @classmethod
    def read(cls, folder: Path) -> "Preprocessing":
        """The ``[preprocess]`` table of ``folder/pbmt.toml`` (defaults without one); an unknown key, both
        casings, or a truecaser model file named but missing is an error naming the file."""
        table = dict(read_tables(folder).get("preprocess", {}))
        check_keys(folder, "preprocess", table, cls.__dataclass_fields__)
        where = Path(folder) / FILE
        for key, value in table.items():
            expected = str if key in _FILES else type(getattr(cls, key))
            if type(value) is not expected:
                raise PbmtError(f"{where}: [preprocess] {key} must be a {expected.__name__}, got {value!r}")
        if table.get("lowercase") and table.get("truecase"):
            raise PbmtError(f"{where}: [preprocess] sets both lowercase and truecase; choose one")
        names = [table.get(key) for key in ("source_truecaser", "target_truecaser")]
        if table.get("truecase") and not all(names):
            raise PbmtError(f"{where}: [preprocess] truecase = true needs source_truecaser and target_truecaser "
                            "(the truecaser model files, relative to the model folder)")
        for key in _FILES:
            if name := table.get(key):
                path = (Path(folder) / name).resolve()
                if not path.is_file():
                    raise PbmtError(f"{where}: [preprocess] {key} = {name!r}: {path} does not exist")
                table[key] = path
        return cls(**table)

    @property
    def casing(self) -> str:
        """``truecase``, ``lowercase`` or ``none`` (``pbmt.base.text.CASINGS``)."""
        return "truecase" if self.truecase else "lowercase" if self.lowercase else "none"

    @property
    def keeps_tokens(self) -> bool:
        """Whether plain text keeps its own tokens and casing here (neither tokenised nor cased): text meant
        for such a model is checked to be in its token form, as nothing makes it so."""
        return not self.tokenize and self.casing == "none"

    @cached_property
    def protected_patterns(self) -> ProtectedPatterns:
        """The model's protected patterns: its own file's, then the built-in ones."""
        return ProtectedPatterns.read(self.protected) if self.protected else ProtectedPatterns()

    @cached_property
    def source_form(self) -> TextForm:
        """How source text becomes the model's tokens (one object, so its truecaser is read once)."""
        return TextForm(self.source_language, self.tokenize, self.casing, self.source_truecaser,
                        self.protected_patterns, self.placeholders)

    @cached_property
    def target_form(self) -> TextForm:
        """How target text becomes the model's tokens (references) and the model's tokens become text."""
        return TextForm(self.target_language, self.tokenize, self.casing, self.target_truecaser,
                        self.protected_patterns, self.placeholders)

    def table(self, folder: str | os.PathLike) -> dict:
        """The ``[preprocess]`` table of a ``pbmt.toml`` in ``folder``: the truecaser model files and the
        protected patterns are copied there (under their own names) when they are elsewhere, so the folder
        stands alone; ``placeholders`` is written when true."""
        table = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _FILES}
        if not self.placeholders:
            del table["placeholders"]  # a model without them reads as it did before there were any
        for key in _FILES:
            path = getattr(self, key)
            if path is not None:
                target = Path(folder) / path.name
                if not target.exists() or not target.samefile(path):
                    with open_binary(path) as source, atomic_write(target, "wb") as out:
                        shutil.copyfileobj(source, out)
                table[key] = path.name
        return table


@dataclass(frozen=True)
class TranslationModel:
    """Everything needed to score and search translations of one language pair.

    ``features``: one ``FeatureFunction`` per ``[feature]`` line of the ini with columns (all but the sparse
    families'), in its order (``pbmt.model.features``), whose columns the ``layout`` lays out;
    ``cand_local[c]`` is candidate ``c``'s option-local feature values
    (``float64[n_cand, layout.size]``, natural log); ``cand_lm_estimate[c]`` the
    features' weighted estimate of it out of context (``estimate``); ``reordering[c]`` its six
    reordering log probabilities in each of the ``reordering_tables`` of the LexicalReordering lines, in
    their order (``float64[n_cand, 6 * n_tables]``; six zeros without a table).
    ``sparse``: the sparse named features and their weights (``pbmt.model.sparse``: the families the ini's
    sparse lines or ``pbmt.toml``'s ``[sparse]`` table declare, ``read_sparse``), or None.
    """

    config: MosesConfig
    vocab: Vocab
    layout: FeatureLayout
    weights: np.ndarray
    settings: SearchSettings
    preprocessing: Preprocessing
    features: tuple[FeatureFunction, ...]
    full_table: PhraseTable
    reordering_tables: tuple[ReorderingTable, ...]
    phrases: PhraseTable = field(repr=False)
    reordering: np.ndarray = field(repr=False)
    cand_local: np.ndarray = field(repr=False)
    cand_lm_estimate: np.ndarray = field(repr=False)
    sparse: SparseModel | None = field(default=None, repr=False)
    loaded_words: int = field(default=0, repr=False)  # len(vocab) after loading: the words of the model's files
    loaded_sparse: SparseModel | None = field(default=None, repr=False, compare=False)  # as read from its folder
    table_estimates: dict = field(default_factory=dict, repr=False, compare=False)  # _table_estimate's, by feature
    _caches: threading.local = field(default_factory=threading.local, init=False, repr=False, compare=False)

    def __reduce__(self):
        """A model travels to another process as what rebuilds it, as ``kenlm.Model`` does: its ``moses.ini``'s
        path, search settings, weights, its sparse features unless they are the folder's own (``pbmt.toml``),
        and the words its vocabulary gained after loading (a global feature's LM), so word ids agree in both
        processes. The other process loads the files through their binary caches (memory-mapped), so it
        ships no table; with a dask scheduler on other machines the model's folder must be where they see it."""
        if self.config.path is None:
            raise pickle.PicklingError("a TranslationModel not loaded from a moses.ini cannot travel to another "
                                       "process")
        sparse = _FOLDERS_OWN if self.sparse is not None and self.sparse is self.loaded_sparse else self.sparse
        return (_restore, (Path(self.config.path).resolve(), self.settings, self.weights, sparse,
                           tuple(self.vocab.words(range(self.loaded_words, len(self.vocab))))))

    @classmethod
    def load(cls, ini: str | Path, settings: SearchSettings | None = None) -> "TranslationModel":
        """Load the model a ``moses.ini`` describes; ``settings`` override the ini's."""
        return cls.from_config(MosesConfig.read(ini), settings)

    @classmethod
    def from_config(cls, config: MosesConfig, settings: SearchSettings | None = None) -> "TranslationModel":
        """Load the model of a ``moses.ini`` already read (``MosesConfig.read``); ``settings`` override its."""
        ini = config.path
        layout = FeatureLayout.from_config(config)
        for feature in config.features:  # a file the ini names that is not there is the ini's error
            if "path" in feature.args and not (path := config.resolve(feature.args["path"])).is_file():
                raise FormatError(ini, feature.line, f"{feature.type} {feature.name}: path={feature.args['path']} "
                                  f"names no file ({path}){_meant(feature.args['path'], path)}")
        for kind, needed in ((KENLM, "at least one"), (PhraseDictionaryMemory, "exactly one")):
            found = sum(f.type == kind.moses_name for f in config.features)
            if not {"at least one": found >= 1, "exactly one": found == 1}[needed]:
                raise PbmtError(f"{ini}: pbmt's decoder needs {needed} {kind.moses_name} feature, the [feature] "
                                f"section has {found}")
        vocab = Vocab()
        features = make_features(config, vocab)
        table_feature = next(f for f in features if isinstance(f, PhraseDictionaryMemory))
        full_table = table_feature.table
        reordering_tables = tuple(f.table for f in features if isinstance(f, LexicalReordering))
        settings = settings or SearchSettings.from_config(config)
        if table_feature.table_limit is not None and "ttable-limit" not in config.settings:
            try:
                settings = replace(settings, table_limit=table_feature.table_limit)
            except UsageError:
                raise FormatError(ini, table_feature.spec.line, f"table-limit={table_feature.table_limit!r} of "
                                  f"{table_feature.name} is not a positive integer") from None
        sparse = read_sparse(config)
        stub = cls(config, vocab, layout, layout.weights(config), settings,
                   Preprocessing.read(Path(ini).parent), features, full_table, reordering_tables,
                   phrases=full_table, reordering=np.zeros((0, 6)), cand_local=np.zeros((0, layout.size)),
                   cand_lm_estimate=np.zeros(0), sparse=sparse, loaded_words=len(vocab), loaded_sparse=sparse)
        return stub.with_weights(stub.weights)

    def toml_tables(self, folder: str | os.PathLike) -> dict[str, dict]:
        """The ``[preprocess]``, ``[search]`` and ``[features]`` tables of ``pbmt.toml`` (``pbmt.base.pbmt_toml``)
        that give the model folder ``folder`` this model's preprocessing (its truecaser files copied there),
        reordering mode and feature modules (named where they are: relative when in ``folder``)."""
        tables = {"preprocess": self.preprocessing.table(folder), "search": {"reordering": self.settings.reordering}}
        if self.config.feature_modules:
            absolute = os.path.abspath(folder)
            tables["features"] = {"modules": [relative_path(str(p), absolute) for p in self.config.feature_modules]}
        return tables

    def write_settings(self, folder: str | os.PathLike) -> None:
        """Write what a ``moses.ini`` in ``folder`` cannot say: ``pbmt.toml`` with this model's preprocessing,
        reordering mode and sparse features, and the sparse features' class and weights files."""
        if self.sparse is not None:
            self.sparse.write(folder, self.toml_tables(folder))
        else:
            write_tables(folder, self.toml_tables(folder))

    def with_weights(self, weights: np.ndarray) -> "TranslationModel":
        """The model under new weights (``float64[layout.size]``): the table is pruned again, as Moses does."""
        weights = np.array(weights, dtype=np.float64)
        if weights.shape != (self.layout.size,):
            raise ValueError(f"expected {self.layout.size} weights, got shape {weights.shape}")
        layout = self.layout
        full = self.full_table
        table_estimate = self._table_estimate(weights)
        phrases, kept = full.prune(self.settings.table_limit, self._weighted_local(full, weights) + table_estimate)
        local = np.zeros((phrases.n_candidates, layout.size))
        for feature, (_, columns) in zip(self.features, layout.slices):
            values = checked_scores(feature, "local", feature.local(phrases), phrases.n_candidates)
            if values is not None:
                local[:, columns] = values
        reordering = (np.hstack([table.scores_for(phrases) for table in self.reordering_tables])
                      if self.reordering_tables else np.zeros((phrases.n_candidates, 6)))
        return read_only(replace(
            self, weights=weights, phrases=phrases, reordering=reordering, cand_local=local,
            cand_lm_estimate=table_estimate[kept],
            config=self.config.with_weights(layout.as_dict(weights)),
        ))

    def _weighted_local(self, table: PhraseTable, weights: np.ndarray) -> np.ndarray:
        """The features' option-local scores of every candidate of ``table`` under ``weights``: Moses's
        pruning score without the estimates, ``float64[n_cand]``."""
        total = np.zeros(table.n_candidates)
        for feature, (_, columns) in zip(self.features, self.layout.slices):
            values = checked_scores(feature, "local", feature.local(table), table.n_candidates)
            if values is not None:
                total += values @ weights[columns]
        return total

    def _features_row(self, values_of) -> np.ndarray:
        """``float64[layout.size]``: each feature's ``values_of(feature)`` (None: zeros) in its columns."""
        row = np.zeros(self.layout.size)
        for feature, (_, columns) in zip(self.features, self.layout.slices):
            values = values_of(feature)
            if values is not None:
                row[columns] = values
        return row

    def unknown_word_local(self, n_words: int = 1, letterless: bool = False) -> np.ndarray:
        """Option-local features of ``n_words`` unknown words passed through: ``float64[layout.size]``
        (``FeatureFunction.unknown_local``; ``letterless``: the word has no letter, a number or punctuation)."""
        return self._features_row(lambda f: checked_scores(f, "unknown_local", f.unknown_local(n_words, letterless),
                                                           None))

    @cached_property
    def unknown_rows(self) -> np.ndarray:
        """``unknown_word_local`` of one unknown word with a letter (row 0) and of one without (row 1):
        ``float64[2, layout.size]``, read-only as the model's other arrays, made once (every sentence's options
        read them)."""
        rows = np.stack([self.unknown_word_local(), self.unknown_word_local(letterless=True)])
        rows.flags.writeable = False
        return rows

    def markup_local(self, n_words: int, log_prob: float) -> np.ndarray:
        """Option-local features of a translation the input's markup gives (``pbmt.base.markup``), of ``n_words``
        target words with probability ``exp(log_prob)``: ``float64[layout.size]`` (``FeatureFunction.markup_local``)."""
        return self._features_row(lambda f: checked_scores(f, "markup_local", f.markup_local(n_words, log_prob), None))

    @property
    def lms(self) -> tuple[NgramLM, ...]:
        """The n-gram LMs of the model's KENLM features, in the ini's order."""
        return tuple(f.lm for f in self.features if isinstance(f, KENLM))

    @cached_property
    def block_scores(self) -> BlockScores | None:
        """The block family's option-local scores and orientation weights of every candidate of the pruned
        table (``pbmt.model.block_features``), computed once per model (its weights), or None without the
        family."""
        if self.sparse is None or self.sparse.blocks is None:
            return None
        p = self.phrases
        return BlockScores.of(self.sparse.blocks, p.src_offsets, p.src_words, p.cand_offsets, p.tgt_offsets,
                              p.tgt_words, self.vocab)

    def overlay(self, words: Iterable[str]) -> Overlay:
        """The model's vocabulary seen from one input of ``words`` (``pbmt.base.vocab.Overlay``): the input's words the
        model does not know get ids of their own, and ``vocab`` does not grow. The block family's names join
        ``vocab`` first (``block_scores``), so the overlay's ids are above every id the model gives."""
        self.block_scores  # noqa: B018 - built for its words
        return self.vocab.overlay(words)

    @property
    def lm_cache(self) -> LMCache:
        """The calling thread's cache of every LM's scores (``LMCache``), made at its first search: a search
        writes it, so threads never share one."""
        cache = getattr(self._caches, "cache", None)
        if cache is None:
            cache = self._caches.cache = LMCache.new()
        return cache

    def estimate(self, pairs: PhrasePairs, weights: np.ndarray | None = None) -> np.ndarray:
        """The features' weighted estimate of phrase pairs out of context (``FeatureFunction.estimate``: each
        LM's score of the target phrase alone, the OSM's of the pair's operations alone), under ``weights``
        (default the model's); ``float64[len(pairs)]``. Moses's estimate for pruning the table and for future
        costs."""
        weights = self.weights if weights is None else weights
        total = np.zeros(len(pairs))
        for feature, (_, columns) in zip(self.features, self.layout.slices):
            if weights[columns].any():
                values = checked_scores(feature, "estimate", feature.estimate(pairs), len(pairs))
                if values is not None:
                    total += values @ weights[columns]
        return total

    def _table_estimate(self, weights: np.ndarray) -> np.ndarray:
        """``estimate`` of every candidate of the full table under ``weights``, ``float64[n_cand]``. A feature's
        values are computed the first time its weights are not all zero and kept for the model's life (every
        ``with_weights`` model shares them): the OSM's take seconds, the LM's a few tenths on a large table. A
        feature that names its ``estimate_files`` has them kept beside the table's binary cache too, so the
        next process maps them."""
        total = np.zeros(self.full_table.n_candidates)
        pairs = functools.cache(lambda: self.full_table.pairs(self.vocab))  # made once, for the features that need it
        for k, (feature, (_, columns)) in enumerate(zip(self.features, self.layout.slices)):
            if not weights[columns].any():
                continue
            if k not in self.table_estimates:
                self.table_estimates[k] = self._feature_table_estimate(feature, pairs)
            if self.table_estimates[k] is not None:
                total += self.table_estimates[k] @ weights[columns]
        return total

    def _feature_table_estimate(self, feature: FeatureFunction,
                                pairs: Callable[[], PhrasePairs]) -> np.ndarray | None:
        """One feature's ``estimate`` of every candidate of the full table (read-only), from the binary cache
        when its ``estimate_files`` name one; ``pairs()``: the table's ``PhrasePairs``."""
        table = self.full_table
        kind = None
        if feature.estimate_files and table.path is not None and Path(table.path).is_file():
            kind = cache.derived_kind("estimate", [_ESTIMATE_VERSION, type(feature).__module__,
                                                   type(feature).__qualname__, feature.spec.args],
                                      feature.estimate_files)
            stored = cache.load_arrays(table.path, kind, _ESTIMATE_VERSION, ["values"])
            if stored is not None and stored["values"].shape[0] == table.n_candidates:
                return stored["values"]
        values = checked_scores(feature, "estimate", feature.estimate(pairs()), table.n_candidates)
        if values is not None:
            if kind is not None:
                cache.save_arrays(table.path, kind, _ESTIMATE_VERSION, {"values": values})
            values.flags.writeable = False
        return values


# A feature's full-table estimate kept in the binary cache (``TranslationModel._feature_table_estimate``): change
# it when what a feature's ``estimate`` computes changes, so that caches of the old values are not read.
_ESTIMATE_VERSION = "1"
_FOLDERS_OWN = "the sparse features of the model's folder"  # what __reduce__ ships instead of them


def _restore(ini: Path, settings: SearchSettings, weights: np.ndarray, sparse: SparseModel | str | None,
             words: tuple[str, ...]) -> TranslationModel:
    """The model ``TranslationModel.__reduce__`` describes."""
    model = TranslationModel.load(ini, settings)
    if isinstance(sparse, str):  # _FOLDERS_OWN
        sparse = model.sparse
    model.vocab.ids(words)
    if not np.array_equal(weights, model.weights):
        model = model.with_weights(weights)
    return replace(model, sparse=sparse)


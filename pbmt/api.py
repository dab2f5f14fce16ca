"""pbmt's Python API: load a model once, then translate, explain and evaluate (``docs/python-api.md``).

What ``import pbmt`` offers, re-exported from here::

    import pbmt
    model = pbmt.load("model/moses.ini")            # or pbmt.load() for the embedded Spanish-English model
    model.translate("En el principio creó Dios los cielos y la tierra.").text
    model.translate(lines, n_best=10)                # a list in, a list out
    model.explain("Dios es amor.")                   # shows itself in Jupyter
    model.evaluate(sources, references).score        # BLEU in percent, equal to sacrebleu's

Text is plain by default: tokenised and truecased as the model's ``pbmt.toml`` says on the way in, detruecased
and detokenised on the way out, as ``pbmt translate`` does; ``tokenized=True`` takes and gives the model's own
tokens. Scores are the model's weighted scores (natural log); alignments are (source, target) token positions.
Everything returned is a frozen value; errors are ``pbmt.base.errors.PbmtError`` with a one-line message.
"""

from __future__ import annotations

import dataclasses
import base64
import html
import os
import tempfile
import warnings
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence, overload

import numpy as np

from pbmt.base.config import DEFAULT_MODEL, MosesConfig, config_path, read_weights
from pbmt.base.errors import FormatError, PbmtError, UsageError
from pbmt.search.explain import Explanation as SearchExplanation
from pbmt.search.explain import explain, explanation_data
from pbmt.search.explain_views import alignment_grid, html_page, render_html, render_text
from pbmt.base.files import release_folders
from pbmt.base.markup import XML_MODES, MarkupError
from pbmt.base.parallel import available_cores
from pbmt.metrics.bleu import HYP_LEN, REF_LEN, bleu, brevity_penalty, format_bleu, precisions, segment_stats
from pbmt.model.model import SearchSettings, TranslationModel
from pbmt.base.nbest import parse_features
from pbmt.features.translation import KEEPS_TOKENS_REMEDY, Translator, check_not_swapped, check_token_form

if TYPE_CHECKING:  # the tuners load on first use
    from pbmt.tune.tuner import Tuner


Weights = Mapping[str, "float | Sequence[float]"] | str | os.PathLike
"""Feature weights: ``{"LM0": 0.5, "TranslationModel0": [0.2, 0.2, 0.2, 0.2]}``, the string ``"LM0= 0.5
WordPenalty0= -1"``, or the path of a moses.ini (or of a file holding only its ``[weight]`` section); features
left out keep the model's weights."""


def load(config: str | os.PathLike = DEFAULT_MODEL, *, weights: Weights | None = None, search: str | None = None,
         **settings) -> Model:
    """Load the model a ``moses.ini`` describes, once (later loads of the same files read its binary caches).

    ``weights`` replace the ini's (see ``Weights``); ``search``: ``"cube"`` (cube pruning, the default) or
    ``"stack"``; ``settings``: any other field of ``pbmt.model.model.SearchSettings`` (``stack_size``,
    ``beam_threshold``, ``distortion_limit``, ``table_limit``, ``reordering``, ``pop_limit``), overriding the
    ini's. Without ``config``, the embedded Spanish-English model of ``data/model``.
    """
    path = config_path(config)
    unknown = sorted(set(settings) - {f.name for f in dataclasses.fields(SearchSettings)})
    if unknown:
        raise UsageError(f"unknown search setting {', '.join(unknown)}; known: "
                         f"{', '.join(f.name for f in dataclasses.fields(SearchSettings))}")
    if search is not None:
        settings["search"] = search
    defaults = SearchSettings.from_config(MosesConfig.read(path))
    model = Model(TranslationModel.load(path, dataclasses.replace(defaults, **settings)))
    return model if weights is None else model.with_weights(weights)


def _names_a_file(text: str) -> bool:
    """Whether ``text`` is the path of something that exists; text longer than a file name may be, as Moses's
    weights for a whole model are, is not (``Path.exists`` raises for it)."""
    try:
        return Path(text).exists()
    except OSError:
        return False


def _weight_values(name: str, value) -> tuple[float, ...]:
    """A weights dict's value for feature ``name``: a number or a flat sequence of numbers."""
    try:
        values = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        values = None
    if values is None or values.ndim > 1:
        raise UsageError(f"weights: {name}'s value {value!r} is not a number nor a list of numbers")
    return tuple(np.atleast_1d(values).tolist())


def _weight_dict(weights: Weights) -> dict[str, tuple[float, ...]]:
    if isinstance(weights, Mapping):
        return {name: _weight_values(name, value) for name, value in weights.items()}
    if isinstance(weights, str) and "=" in weights:
        return parse_features(weights, "weights")
    if isinstance(weights, str) and not _names_a_file(weights):  # meant as text, as often as a path
        raise UsageError(f"weights {weights!r} is no file, nor weights as text: 'LM0= 0.5 WordPenalty0= -1' (an "
                         "'=' after each name), a dict by name, or a moses.ini's path")
    return read_weights(weights)


@dataclass(frozen=True)
class NBestTranslation:
    """One entry of a sentence's n-best list.

    ``text``: its output text (detokenised unless asked for tokens); ``tokens``: the model's target tokens;
    ``score``: the weighted model score (natural log); ``features``: the unweighted feature values by name;
    ``segmentation``: (source start, source end, target start, target end) token positions of each phrase
    block, ends exclusive, in target order; ``alignment``: (source, target) token links.
    """

    text: str
    tokens: tuple[str, ...]
    score: float
    features: dict[str, tuple[float, ...]]
    segmentation: tuple[tuple[int, int, int, int], ...]
    alignment: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Translation:
    """The translation of one sentence.

    ``source``: the sentence as given; ``source_tokens``: its tokens (in their own casing); ``text``: the
    translation, as ``pbmt translate`` writes it; ``score``: its weighted model score (natural log; -inf when
    the search found none); ``alignment``: (source, target) token links of the best translation; ``nbest``: the
    n-best list asked for (the first is the best translation), else empty; ``unreachable``: under a constraint
    (``Model.force``, ``Model.complete``) that no translation satisfies, why (the text is then empty). In
    Jupyter it shows as a table with its word-alignment grid.
    """

    source: str
    source_tokens: tuple[str, ...]
    text: str
    score: float
    alignment: tuple[tuple[int, int], ...]
    nbest: tuple[NBestTranslation, ...] = ()
    best: NBestTranslation | None = dataclasses.field(default=None, repr=False)
    unreachable: str = ""

    def __str__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        esc = html.escape
        body = [f"<p><b>{esc(self.source)}</b></p><p>{esc(self.text)} "
                f"<span class='note'>(model score {self.score:.4f})</span></p>"]
        if self.best is not None:
            body.append(alignment_grid(list(self.source_tokens), list(self.best.tokens), self.alignment,
                                       self.best.segmentation))
        if self.nbest:
            body.append("<table><tr><th>#</th><th>score</th><th>translation</th></tr>" + "".join(
                f"<tr><td>{k}</td><td>{entry.score:.4f}</td><td>{esc(entry.text)}</td></tr>"
                for k, entry in enumerate(self.nbest, 1)) + "</table>")
        return _frame(html_page("pbmt translation", "".join(body)), 120 + 22 * len(self.nbest)
                      + (22 * len(self.best.tokens) + 80 if self.best is not None else 0))


@dataclass(frozen=True)
class Explanation:
    """How one sentence was translated: its translation options, future costs, best derivation with each
    block's feature contributions, the hypotheses of every stack and the n-best list (``pbmt explain``).

    ``data``: all of it as the JSON-ready dict ``pbmt serve``'s ``/explain`` answers; ``text``: the plain
    report ``pbmt explain`` prints; ``html``: the page of ``pbmt explain --html``, which is also how it shows
    in Jupyter. ``search``: the underlying ``pbmt.search.explain.Explanation`` (search graph, options).
    """

    search: SearchExplanation
    model: TranslationModel = dataclasses.field(repr=False)
    options_per_span: int = 5

    @property
    def translation(self) -> str:
        """The best translation, in the model's tokens."""
        return self.data["translation"]

    @property
    def score(self) -> float:
        """The best translation's weighted model score (natural log)."""
        return float(self.search.best.score)

    @cached_property
    def data(self) -> dict:
        """Everything, as the JSON-ready dict of ``pbmt serve``'s ``/explain`` (``pbmt.search.explain.explanation_data``)."""
        return explanation_data(self.search, self.model)

    @property
    def text(self) -> str:
        """The plain-text report ``pbmt explain`` prints."""
        return render_text(self.search, self.model, self.options_per_span)

    @property
    def html(self) -> str:
        """The self-contained page of ``pbmt explain --html``."""
        return render_html(self.search, self.model, self.options_per_span)

    def __str__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        return _frame(self.html, 700)


def _text(value, what: str) -> str:
    """``value``, which must be a str (``what`` names it in the error)."""
    if not isinstance(value, str):
        raise UsageError(f"{what} is a {type(value).__name__}, not a str")
    return value


def _frame(page: str, height: int) -> str:
    """``page`` in an iframe, so its style stays out of the notebook's."""
    return (f"<iframe srcdoc=\"{html.escape(page, quote=True)}\" style=\"width: 100%; height: {min(height, 900)}px; "
            "border: 1px solid #ddd;\"></iframe>")


@dataclass(frozen=True)
class Bleu:
    """Corpus BLEU, as sacrebleu computes it: ``score`` in percent, the 1- to 4-gram ``precisions`` in percent,
    the ``brevity_penalty``, and the hypothesis and reference lengths in tokens. ``str()`` is sacrebleu's line."""

    score: float
    precisions: tuple[float, float, float, float]
    brevity_penalty: float
    hyp_len: int
    ref_len: int
    line: str = dataclasses.field(repr=False, default="")

    def __str__(self) -> str:
        return self.line


def evaluate(hypotheses: Sequence[str], references: Sequence[str] | Sequence[Sequence[str]], *,
             tokenized: bool = False, lowercase: bool = False) -> Bleu:
    """Corpus BLEU of ``hypotheses`` against ``references``: one reference per hypothesis, or several
    streams of them (sacrebleu's order: ``[refs_a, refs_b]``). Plain text is tokenised by sacrebleu's 13a
    tokeniser (equal to ``sacrebleu.corpus_bleu``); ``tokenized=True`` splits on whitespace only."""
    for name, lines in (("hypotheses", hypotheses), ("references", references)):
        if isinstance(lines, str):
            raise UsageError(f"{name} must be a list of lines, got a str")
    streams = [list(references)] if references and isinstance(references[0], str) else [list(r) for r in references]
    for stream in streams:
        if len(stream) != len(hypotheses):
            raise PbmtError(f"{len(hypotheses)} hypotheses but a reference stream of {len(stream)} lines")
    if tokenized:
        def tokenizer(line: str) -> str:
            return line
    else:
        from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
        tokenizer = Tokenizer13a()

    def prepare(line: str) -> str:
        return tokenizer((line.lower() if lowercase else line).rstrip())

    stats = segment_stats([prepare(h) for h in hypotheses],
                          [[prepare(r) for r in refs] for refs in zip(*streams)]).sum(axis=0)
    return Bleu(100 * float(bleu(stats)), tuple(100 * float(p) for p in precisions(stats)),
                float(brevity_penalty(stats)), int(stats[HYP_LEN]), int(stats[REF_LEN]), format_bleu(stats))


@dataclass(frozen=True)
class Tuning:
    """A tuning run (``Model.tune``): ``model`` under the tuned weights, the dev BLEU in percent of each
    iteration's decode (``dev_bleu[i]``: iteration ``i + 1``), why it stopped, and ``out``, the run's folder
    (``moses.ini``, ``log.tsv``, ``dev-bleu.png``, as ``pbmt tune`` writes them). Shows its plot in Jupyter."""

    model: Model
    dev_bleu: tuple[float, ...]
    stop_reason: str
    out: Path

    def _repr_html_(self) -> str:
        png = base64.b64encode((self.out / "dev-bleu.png").read_bytes()).decode()
        return (f"<p>{len(self.dev_bleu)} iterations, dev BLEU {' → '.join(f'{b:.2f}' for b in self.dev_bleu)}; "
                f"{html.escape(self.stop_reason)}</p><img src='data:image/png;base64,{png}'>")


class Model:
    """A loaded model (``load``): translate, explain and evaluate with it.

    ``model``: the underlying ``pbmt.model.model.TranslationModel``; ``weights``: its weights by feature name;
    ``settings``: its search settings.
    """

    def __init__(self, model: TranslationModel):
        self.model = model
        self._warned_of_form = False

    def __repr__(self) -> str:
        """The model's ``moses.ini``, its search and, when they differ from that file's (``with_weights``, a
        tuned ``Tuning.model``), its weights, as ``pbmt.load`` takes them: two models of one file under other
        weights do not look alike."""
        changed = self._weights_unlike_the_file()
        shown = {name: values[0] if len(values) == 1 else list(values) for name, values in changed.items()}
        return (f"pbmt.Model({str(self.model.config.path)!r}, search={self.settings.search!r}"
                + (f", weights={shown!r})" if shown else ")"))

    def _weights_unlike_the_file(self) -> dict[str, tuple[float, ...]]:
        """The weights, by feature name, that differ from those of the ``moses.ini`` the model was read from
        (none when the file cannot be read now)."""
        try:
            written = read_weights(self.model.config.path)
        except (OSError, PbmtError):
            return {}
        return {name: values for name, values in self.weights.items()
                if tuple(written.get(name, ())) != tuple(values)}

    @property
    def weights(self) -> dict[str, tuple[float, ...]]:
        """The model's weights by feature name (a tuple per feature, in the ini's order)."""
        return self.model.layout.as_dict(self.model.weights)

    @property
    def settings(self) -> SearchSettings:
        """The search settings it decodes with (``pbmt.model.model.SearchSettings``)."""
        return self.model.settings

    @property
    def sparse_weights(self) -> dict[str, float]:
        """The non-zero weights of its sparse features by name (the names of ``sparse-weights.txt``,
        docs/sparse-features.md); empty for a model without sparse features."""
        if self.model.sparse is None:
            return {}
        named = self.model.sparse.named_weights()
        return {name: value for name, value in zip(named.names, named.values.tolist()) if value != 0.0}

    def with_weights(self, weights: Weights) -> Model:
        """This model under other weights (``Weights``; features left out keep theirs): the phrase table is
        pruned again under them, as Moses does."""
        config = self.model.config.with_weights(_weight_dict(weights))
        return Model(self.model.with_weights(self.model.layout.weights(config)))

    @overload
    def translate(self, text: str, *, tokenized: bool = ..., n_best: int = ..., distinct: bool = ...,
                  xml_input: str = ..., quote_zones: bool = ...) -> Translation: ...

    @overload
    def translate(self, text: Sequence[str], *, tokenized: bool = ..., n_best: int = ..., distinct: bool = ...,
                  xml_input: str = ..., quote_zones: bool = ...) -> list[Translation]: ...

    def translate(self, text, *, tokenized=False, n_best=0, distinct=False, xml_input="pass-through",
                  quote_zones=True):
        """Translate one sentence (a ``Translation``) or a list of them (a list of ``Translation``).

        ``tokenized``: the text is in the model's token form already, and the output stays in it;
        ``n_best``: also list that many best translations of each sentence (``Translation.nbest``);
        ``distinct``: n-best entries with distinct target strings; ``xml_input``: how Moses's XML markup in
        the text is read (``pbmt.base.markup``: exclusive, inclusive, constraint, ignore, pass-through);
        ``quote_zones``: paired quotes, brackets and tags are zones.
        """
        if isinstance(n_best, bool) or not isinstance(n_best, int) or n_best < 0:
            raise UsageError(f"n_best must be an integer of at least 0, got {n_best!r}")
        if xml_input not in XML_MODES:
            raise UsageError(f"xml_input must be one of {', '.join(XML_MODES)}, got {xml_input!r}")
        single = isinstance(text, str)
        if not single and (isinstance(text, (bytes, bytearray)) or not isinstance(text, Iterable)):
            raise UsageError(f"text must be a str or a list of str, got a {type(text).__name__}")
        translator = Translator(self.model, n_best=max(1, n_best), distinct=distinct, tokenized=tokenized,
                                nbest_output=True, xml_input=xml_input, quote_zones=quote_zones)

        def found(number: int, line):
            where = "text" if single else f"text[{number}]"  # errors name the item by its index, from 0
            try:
                return translator.translate(number, _text(line, where))
            except MarkupError as err:
                raise PbmtError(f"{where}: malformed markup: {err}") from None

        lines = [text] if single else list(text)
        translations = [self._translation(translator, line, found(number, line), n_best)
                        for number, line in enumerate(lines)]
        self._warn_unless_token_form(lines, single)
        return translations[0] if single else translations

    def _warn_unless_token_form(self, lines: list[str], single: bool) -> None:
        """A UserWarning, once per Model, when ``lines`` given to a model whose pbmt.toml says nothing of its
        text form (a Moses model: it reads text as its tokens, as Moses does) are clearly not in that form
        (``check_token_form``): their translation is poor and nothing else says why. ``pbmt translate`` warns
        alike."""
        if self._warned_of_form or not self.model.preprocessing.keeps_tokens:
            return
        try:
            check_token_form("text", [line.split() for line in lines], self.model.vocab,
                             self.model.preprocessing.source_language, remedy=KEEPS_TOKENS_REMEDY)
        except FormatError as err:
            self._warned_of_form = True
            where = "text" if single else f"text[{err.line - 1}]"
            warnings.warn(f"{where}: {err.reason}", stacklevel=3)

    def complete(self, sentence: str, prefix: str, *, tokenized: bool = False, n_best: int = 5) -> Translation:
        """Interactive translation: the best translations of ``sentence`` that begin with ``prefix`` (target text,
        as typed; unless it ends in a space its last word may be unfinished, and the translation completes it).
        ``nbest``: the ``n_best`` best completions, with distinct words; ``unreachable``: why none begins with
        the prefix. The prefix's words are searched exactly, the rest with the model's pruning; an empty prefix
        is ``translate``."""
        translator = self._translator(n_best, tokenized)
        return self._translation(translator, sentence, translator.complete(0, _text(sentence, "sentence"),
                                                                           _text(prefix, "prefix")), n_best)

    def force(self, sentence: str, reference: str, *, tokenized: bool = False, n_best: int = 1) -> Translation:
        """Forced decoding: the model's best derivations of ``sentence`` whose output is exactly ``reference``
        (``nbest``: the ``n_best`` best, their segmentations and features), found by an exact search in the
        model's reordering space; none: ``unreachable`` says why (a reference word no phrase produces, the
        table limit, the distortion limit, ...)."""
        translator = self._translator(n_best, tokenized)
        return self._translation(translator, sentence, translator.force(0, _text(sentence, "sentence"),
                                                                        _text(reference, "reference")), n_best)

    def _translator(self, n_best: int, tokenized: bool) -> Translator:
        if isinstance(n_best, bool) or not isinstance(n_best, int) or n_best < 1:
            raise UsageError(f"n_best must be an integer of at least 1, got {n_best!r}")
        return Translator(self.model, n_best=n_best, tokenized=tokenized, nbest_output=True)

    @staticmethod
    def _translation(translator: Translator, line: str, found, n_best: int) -> Translation:
        """The API's ``Translation`` of what ``translator`` found for ``line`` (a ``pbmt.features.translation.Translation``)."""
        entries = tuple(NBestTranslation(output, tuple(entry.text.split()), float(entry.total), entry.features,
                                         entry.segmentation, entry.alignment)
                        for entry, output in zip(found.nbest, found.nbest_output))
        best = entries[0] if entries else None
        return Translation(line, tuple(translator.read(line)[0]), found.text,
                           best.score if best else float("-inf"), found.alignment, entries[:n_best], best,
                           found.unreachable)

    def explain(self, sentence: str, *, tokenized: bool = False, n_best: int = 10,
                options_per_span: int = 5, xml_input: str = "pass-through", quote_zones: bool = True
                ) -> Explanation:
        """How ``sentence`` is translated (``Explanation``): ``n_best`` derivations listed from the search graph,
        ``options_per_span`` translation options shown per source span; ``xml_input`` and ``quote_zones`` as
        ``translate`` reads them."""
        if xml_input not in XML_MODES:
            raise UsageError(f"xml_input must be one of {', '.join(XML_MODES)}, got {xml_input!r}")
        for name, value in (("n_best", n_best), ("options_per_span", options_per_span)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UsageError(f"{name} must be an integer of at least 1, got {value!r}")
        try:
            tokens, markup = Translator(self.model, tokenized=tokenized, xml_input=xml_input,
                                        quote_zones=quote_zones).model_input(_text(sentence, "sentence"))
        except MarkupError as err:
            raise PbmtError(f"malformed markup: {err}") from None
        if not tokens:
            raise PbmtError("the sentence is empty")
        try:
            found = explain(self.model, tokens, n_best=n_best, markup=markup)
        except ValueError as err:
            raise PbmtError(str(err)) from None
        return Explanation(found, self.model, options_per_span)

    def tune(self, sources: Sequence[str], references: Sequence[str], *, algorithm: str | Tuner = "mert",
             iterations: int | None = None, n_best: int | None = None, tokenized: bool = False,
             out: str | os.PathLike | None = None, seed: int | None = None, workers: int = 1,
             threads: int | None = None, progress: bool = True) -> Tuning:
        """Tune the weights on a dev set (``sources`` and their ``references``, one each) as ``pbmt tune``
        does with an n-best tuner: ``algorithm`` ``"mert"``, ``"pro"``, ``"apro"``, ``"mira"`` (batch MIRA) or
        ``"listnet"`` with its defaults, or a tuner object of one's own (a ``pbmt.tune.tuner.Tuner`` of the
        decode-optimise loop, built with its settings: ``docs/writing-a-tuner.md``), for at most ``iterations`` decode-optimise rounds of ``n_best`` entries
        per sentence, on ``workers`` processes of ``threads`` threads each (default: as many as the cores this
        process may use, as ``pbmt tune --threads``). Plain text is made into the model's tokens unless
        ``tokenized``. ``out``: the run's folder (default: a new temporary one); ``progress``: a progress bar on
        a terminal and a line per iteration on standard error. ``iterations``, ``n_best`` and ``seed`` default
        to ``pbmt tune``'s (``pbmt.tune.loop.LoopSettings``).

        A model with sparse features (``[sparse]`` in its ``pbmt.toml``) has them tuned beside the dense
        weights by PRO, APRO and MIRA (``Model.sparse_weights`` of the result); MERT and ListNet keep them as
        they are. ``out`` then holds ``pbmt.toml`` and ``sparse-weights.txt`` too, so ``load(out /
        "moses.ini")`` is the tuned model."""
        from pbmt.tune.loop import DevDecoder, LoopSettings, tune  # the tuners load on first use
        from pbmt.tune.pool import References
        from pbmt.tune.registry import POOL_TUNERS, broken_tuner
        from pbmt.tune.tuner import Tuner

        if isinstance(algorithm, Tuner):
            cls = type(algorithm)
            problem = None if cls.__module__.split(".")[0] == "pbmt" else broken_tuner(cls)
            if problem is not None:
                raise UsageError(f"tuner class {cls.__qualname__} has {problem} (docs/writing-a-tuner.md)")
            if algorithm.loop != "decode-optimise" or tuple(algorithm.reads) != ("pool",):
                raise UsageError(f"{type(algorithm).__name__} is a tuner of the {algorithm.loop} loop reading "
                                 f"{' and '.join(algorithm.reads)}; Model.tune gives fit the pool of the "
                                 "decode-optimise loop alone")
        elif algorithm not in ("mert", "pro", "apro", "mira", "listnet"):
            raise UsageError(f"algorithm must be mert, pro, apro, mira, listnet or a Tuner object, got "
                             f"{algorithm!r} (pbmt tune has the others)")
        for name, count in (("workers", workers), ("threads", threads)):
            if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
                raise UsageError(f"{name} must be an integer of at least 1, got {count!r}")
        sources = [_text(s, f"sources[{k}]") for k, s in enumerate(sources)]
        references = [_text(r, f"references[{k}]") for k, r in enumerate(references)]
        if len(sources) != len(references) or not sources:
            raise PbmtError(f"{len(sources)} dev sources but {len(references)} references")
        empty = next((k for k, s in enumerate(sources) if not s.strip()), None)
        if empty is not None:
            raise PbmtError(f"sources[{empty}] is empty (its translation is empty whatever the weights)")
        if not tokenized:
            forms = self.model.preprocessing
            sources = [" ".join(forms.source_form.tokens(s)) for s in sources]
            references = [" ".join(forms.target_form.tokens(r)) for r in references]
        check_not_swapped("the dev sources", [s.split() for s in sources], "the references",
                          [r.split() for r in references], self.model)
        if isinstance(algorithm, Tuner):
            tuner = algorithm
        else:  # with pbmt tune's defaults for this search space and dev set size
            cls = POOL_TUNERS[algorithm]
            tuner = cls(**cls.for_search({}, self.model.settings.reordering, len(sources)))
        folder = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix="pbmt-tune-"))
        given = {"n_best": n_best, "max_iterations": iterations, "seed": seed}
        settings = LoopSettings(**{k: v for k, v in given.items() if v is not None})
        sparse = self.model.sparse.named_weights() if self.model.sparse is not None and tuner.sparse else None
        try:
            with DevDecoder(self.model, sources, settings.n_best, workers, quiet=not progress,
                            threads=available_cores() if threads is None else threads) as decoder:
                result = tune(decoder, References(references), self.model.config, self.model.layout,
                              tuner, folder, settings, quiet=not progress, sparse=sparse, model=self.model)
        finally:
            release_folders(folder)  # the run folder's lock (pbmt.base.files.lock_folder) ends with the run
        tuned = self.with_weights(folder / "moses.ini").model  # the weights as written, which pbmt translate reads
        if result.sparse is not None:
            tuned = dataclasses.replace(tuned, sparse=tuned.sparse.weights_from(result.sparse))
        return Tuning(Model(tuned), tuple(100 * r.dev_bleu for r in result.iterations), result.stop_reason, folder)

    def evaluate(self, sources: Sequence[str], references: Sequence[str] | Sequence[Sequence[str]], *,
                 tokenized: bool = False, lowercase: bool = False) -> Bleu:
        """Translate ``sources`` and score the translations against ``references`` (``evaluate``): plain text
        and sacrebleu's 13a tokeniser by default, the model's tokens with ``tokenized=True``."""
        hypotheses = [t.text for t in self.translate(list(sources), tokenized=tokenized)]
        return evaluate(hypotheses, references, tokenized=tokenized, lowercase=lowercase)

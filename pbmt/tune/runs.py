"""A tuning run as ``pbmt tune`` makes it: the dev set read, the model loaded, the tuner's loop run, the folder
written, and a summary to print.

``run(build, job)`` runs the tuner ``build(reordering)`` makes for the search
space the model decodes in (``pbmt.tune.tuner``; MERT damps its steps in
MON/SWAP) in the loop its class declares; a ``TuningJob`` holds what every loop shares (model, dev set, output
folder, workers) and ``settings``, the values of the loop options by their
argparse destination (``pbmt.tune.options``; e.g. ``iterations``, ``passes``,
``documents``): those the tuner's ``options`` list, which are all its loop reads.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from pbmt.base.config import MosesConfig
from pbmt.base.documents import Documents
from pbmt.base.errors import FormatError, PbmtError, UsageError
from pbmt.features import build, write_weights
from pbmt.base.files import read_lines
from pbmt.model.model import Preprocessing, SearchSettings, TranslationModel
from pbmt.model.sparse import CLASSES_FILE, WEIGHTS_FILE, SparseModel, WordClasses
from pbmt.base.plots import read_tuning_log, save_png, tuning_figure
from pbmt.base.run_state import CHECKPOINT, LOG, check_resumable_by, kept_note, tuning_inputs
from pbmt.features.translation import KEEPS_TOKENS_REMEDY, check_not_swapped, check_token_form
from pbmt.tune.block_training import BlockTraining, BlockTrainingSettings, block_training
from pbmt.tune.loop import OUTPUTS, DevDecoder, LoopSettings, tune, tuned_config, weight_line
from pbmt.tune.pool import References
from pbmt.tune.registry import LOG_FORMATS, algorithm_names
from pbmt.tune.relevant_set import RelevantSetSettings, RelevantSetTuner, relevant_set_tune
from pbmt.tune.sampler_chains import n_weights, with_sparse_weights
from pbmt.tune.samplerank import SampleRank, SamplerTask
from pbmt.tune.tuner import Tuner, TuningData


@dataclass(frozen=True)
class TuningJob:
    """algorithm: the tuner's name; config: the model's moses.ini (start weights); src, refs: the dev set (refs: one
    file, or several line-parallel ones, several references of each sentence), plain text made into the
    model's token form unless ``tokenized``; sentences: the first K only (None: all); out: the run's folder;
    resume: continue its checkpoint; quiet: no progress bars or summaries; workers, scheduler, threads: where
    the dev set is decoded (``pbmt.base.parallel``); seed: of the tuner's generator; search: search settings
    replacing the model's (``SearchSettings`` fields); settings: the loop options' values by destination."""

    algorithm: str
    config: Path
    src: Path
    refs: tuple[Path, ...]
    out: Path
    tokenized: bool = False
    sentences: int | None = None
    resume: bool = False
    quiet: bool = False
    workers: int = 1
    scheduler: str | None = None
    threads: int = 1
    seed: int = 1
    search: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)

    def search_settings(self) -> SearchSettings | None:
        """The model's search settings with ``search`` applied, or None when ``search`` is empty."""
        if not self.search:
            return None
        return replace(SearchSettings.from_config(MosesConfig.read(self.config)), **self.search)

    def __post_init__(self):
        refs = (self.refs,) if isinstance(self.refs, (str, Path)) else tuple(self.refs)
        object.__setattr__(self, "refs", tuple(Path(r) for r in refs))

    def inputs(self, **extra) -> dict[str, str]:
        more = {f"references_{k}": path for k, path in enumerate(self.refs[1:], 2)}
        return tuning_inputs(self.config, self.src, self.refs[0], **more, **extra)

    def one_reference(self, what: str) -> Path:
        """The one --refs file of a tuner that takes one reference per sentence; a usage error if several."""
        if len(self.refs) > 1:
            raise UsageError(f"{what} tunes on one reference per sentence; --refs gives {len(self.refs)} files")
        return self.refs[0]


def run(build: Callable[..., Tuner], job: TuningJob) -> list[str]:
    """Run the tuner ``build(reordering[, n_sentences])`` makes in its loop on ``job``; returns the summary lines (the run's
    outcome, the weights kept, what was written)."""
    if not job.config.exists():
        raise PbmtError(f"{job.config}: no such model configuration")
    if job.out.resolve() == job.config.resolve().parent:
        raise UsageError(f"--out {job.out}: is the model's own folder, where the run's moses.ini and pbmt.toml "
                         "would replace the model's; give the run a folder of its own")
    tuner = build("distortion")  # its usage errors before the model loads
    if job.resume:  # as is a folder of another tuner's run
        check_resumable_by(job.out, tuner.called)
    try:
        return _LOOPS[tuner.loop](tuner, job) if tuner.loop != "decode-optimise" else _decode_optimise(build, job)
    except (PbmtError, SystemExit):
        raise
    except BaseException as stopped:  # Ctrl-C, a full disk: say what the run folder keeps and how to go on
        stopped.add_note(kept_note(job.out, job.resume))
        raise


def _decode_optimise(build: Callable[..., Tuner], job: TuningJob) -> list[str]:
    if job.settings["keep"] not in (None, *OUTPUTS):
        raise UsageError(f"--keep {job.settings['keep']} is for costmargin and perceptron; {job.algorithm} keeps "
                         f"{' or '.join(OUTPUTS)}")
    started = time.perf_counter()
    model = TranslationModel.load(job.config, job.search_settings())
    tuner = build(model.settings.reordering)
    if "lattices" in tuner.reads and model.sparse is not None:
        raise PbmtError(f"{job.config}: {tuner.name} tunes dense features only, and this model has sparse ones")
    sources, references = dev_set(job, model)
    tuner = build(model.settings.reordering, len(sources))
    n_best = job.settings.get("n_best_size") or LoopSettings.n_best
    settings = LoopSettings(n_best=n_best, max_iterations=job.settings["iterations"], dedup=job.settings["dedup"],
                            seed=job.seed, output=job.settings["keep"] or LoopSettings.output)
    _say_start(job, tuner, len(sources),
               f"at most {_count(settings.max_iterations, 'iteration')} of {n_best}-best decoding")
    sparse = model.sparse.named_weights() if model.sparse is not None and tuner.sparse else None
    _note_sparse_left_out(model, tuner, job)
    with DevDecoder(model, sources, n_best, job.workers, quiet=job.quiet, scheduler=job.scheduler,
                    lattices="lattices" in tuner.reads, threads=job.threads) as decoder:
        result = tune(decoder, References(*references), model.config, model.layout, tuner, job.out, settings,
                      resume=job.resume, quiet=job.quiet, inputs=job.inputs(), sparse=sparse, model=model,
                      algorithm_names=algorithm_names())
    best = result.best
    count = len(result.iterations)
    kept = (f"those decoded in iteration {result.decoded_in}" if result.decoded_in
            else "the optimiser's last, not decoded yet")
    lines = [f"stopped: {result.stop_reason}; {count} iteration{'' if count == 1 else 's'} in "
             f"{time.perf_counter() - started:.0f} s"
             + (f"; best dev BLEU {100 * best.dev_bleu:.2f} at iteration {best.iteration}" if best else ""),
             f"tuned weights ({kept}): {weight_line(model.layout, result.weights)}"]
    if result.sparse is not None:
        lines.append(f"sparse features with a non-zero weight: {np.count_nonzero(result.sparse.values)} "
                     f"({job.out / WEIGHTS_FILE})")
    elif model.sparse is not None:
        lines.append(f"{tuner.title} tunes the dense weights alone: the sparse ones stay the model's "
                     f"({job.out / WEIGHTS_FILE})")
    return lines + [f"wrote {job.out / 'moses.ini'}"]


def _say_start(job: TuningJob, tuner: Tuner, n_sentences: int, length: str) -> None:
    """Say (unless quiet) what the run does, on how many sentences and where it writes, before its first
    decode: a log file of standard error otherwise shows nothing until the first iteration ends."""
    if not job.quiet:
        print(f"{'resuming' if job.resume else 'tuning'} with {tuner.name} on {n_sentences} sentences of {job.src}: "
              f"{length}; moses.ini, {LOG} and the checkpoint ({job.out / CHECKPOINT}) go to {job.out}",
              file=sys.stderr, flush=True)


def _count(n: int, noun: str) -> str:
    """``n`` and ``noun``, in the plural unless ``n`` is 1 ("3 passes", "1 epoch")."""
    return f"{n} {noun}{'' if n == 1 else 'es' if noun.endswith('s') else 's'}"


def _note_sparse_left_out(model: TranslationModel, tuner: Tuner, job: TuningJob) -> None:
    """Say (unless quiet) that ``tuner``, which tunes dense weights alone, ranks its pool without ``model``'s sparse
    features, though every decode scores them with the model's weights (as ``pbmt optimize`` says of a list's)."""
    if model.sparse is None or tuner.sparse or job.quiet:
        return
    active = int(np.count_nonzero(model.sparse.named_weights().values))
    print(f"note: {tuner.title} tunes the dense weights alone, and its pool's scores leave out the model's sparse "
          f"features ({active} non-zero weights), which every decode adds: pro, apro and mira tune both",
          file=sys.stderr)


def _relevant_set(tuner: RelevantSetTuner, job: TuningJob) -> list[str]:
    s = job.settings
    settings = RelevantSetSettings(s["passes"], s.get("n_best_size") or RelevantSetSettings.n_best, s["flat_weight"],
                                   s["perturbation"], job.seed, s["dedup"], s["keep"] or RelevantSetSettings.keep,
                                   s["second_seed"] == "model")
    started = time.perf_counter()
    model = TranslationModel.load(job.config, job.search_settings())
    sources, references = dev_set(job, model)
    _say_start(job, tuner, len(sources), f"{_count(settings.passes, 'pass')} of {settings.n_best}-best decoding")
    _note_sparse_left_out(model, tuner, job)
    with DevDecoder(model, sources, settings.n_best, job.workers, quiet=job.quiet, scheduler=job.scheduler,
                    threads=job.threads) as decoder:
        result = relevant_set_tune(decoder, References(*references), model.config, model.layout, tuner, settings,
                                   job.out, resume=job.resume, quiet=job.quiet, inputs=job.inputs())
    model.write_settings(job.out)
    return [f"{_count(len(result.passes), 'pass')} in {time.perf_counter() - started:.0f} s; kept pass "
            f"{result.best.number} ({settings.keep}): dev BLEU {100 * result.best.corpus_bleu:.2f}, averaged sentence BLEU+1 "
            f"{100 * result.best.sentence_bleu:.2f}",
            f"tuned weights (those decoded in pass {result.best.number}): "
            f"{weight_line(model.layout, result.weights)}",
            f"wrote {job.out / 'moses.ini'}"]


def _block(tuner: BlockTraining, job: TuningJob) -> list[str]:
    settings = BlockTrainingSettings(job.settings["passes"], job.settings.get("n_best_size") or 1, job.seed)
    sources, references = read_dev(job.src, job.one_reference("--features binary"), job.sentences,
                                   _preprocessing(job))
    _say_start(job, tuner, len(sources), f"{_count(settings.passes, 'pass')} of {settings.n_best}-best decoding")
    started = time.perf_counter()
    weights, passes = block_training(job.config, sources, references, tuner, settings, job.out,
                                     job.search_settings(), job.workers, job.scheduler, job.resume, job.quiet,
                                     job.inputs(), job.threads)
    best = max(passes, key=lambda p: p.sentence_bleu)
    return [f"{_count(len(passes), 'pass')} in {time.perf_counter() - started:.0f} s; best averaged sentence BLEU+1 "
            f"{100 * best.sentence_bleu:.2f} at pass {best.number}; {best.features} features, {len(weights)} "
            f"non-zero weights",
            f"wrote {job.out / 'sparse-weights.txt'}"]


def _sampler(tuner: SampleRank, job: TuningJob) -> list[str]:
    s = job.settings
    if s["word_classes"] is not None and s["features"] != "boundary":
        raise UsageError(f"--word-classes is for --features boundary: with --features {s['features']} it would be "
                         "ignored")
    model = with_sparse_features(TranslationModel.load(job.config), s["features"], s["word_classes"])
    job.one_reference("samplerank")
    sources, (refs,) = dev_set(job, model)
    if tuner.held_out and tuner.held_out >= len(sources):
        raise UsageError(f"--held-out {tuner.held_out} leaves nothing to tune on: the dev set has {len(sources)} "
                         "sentences")
    documents = None
    if s["documents"] is not None:
        documents = Documents.read(s["documents"], s["document_level"], job.sentences)
        if documents.n_lines != len(sources):
            raise PbmtError(f"{s['documents']} has {documents.n_lines} keys but {job.src} has {len(sources)} "
                            "sentences" + (f" (within the first {job.sentences})" if job.sentences else ""))
        if tuner.held_out and len(documents) < 2:
            raise UsageError(f"--held-out with --documents holds out whole documents, and {s['documents']} has "
                             f"one {s['document_level']} only")
    _say_start(job, tuner, len(sources), f"{_count(tuner.epochs, 'epoch')} of sampling"
               + (f", {tuner.held_out} sentences held out" if tuner.held_out else ""))
    started = time.perf_counter()
    task = SamplerTask(model, sources, refs, documents, job.inputs(documents=s["documents"],
                                                                   word_classes=s["word_classes"]),
                       job.resume, job.quiet)
    tuner.fit(TuningData(sampler=task), task.start_weights, np.random.default_rng(job.seed))
    dense, tuned = model.layout.size, n_weights(model)
    tuned_config(model.config, model.layout, tuner.weights_[:dense]).write(job.out / "moses.ini")
    if model.sparse is not None:
        model = replace(model, sparse=with_sparse_weights(model.sparse, tuner.weights_[dense:tuned]))
    model.write_settings(job.out)
    specs = tuner.global_specs(model)
    if specs:
        write_weights(job.out / "global-weights.txt", build(specs, model.vocab), tuner.weights_[tuned:])
    if tuner.dev_bleu or tuner.held_out:
        save_png(tuning_figure([read_tuning_log(job.out / "log.tsv", LOG_FORMATS)]), job.out / "dev-bleu.png")
    lines = [f"{_count(len(tuner.log_), 'epoch')} in {time.perf_counter() - started:.0f} s; {_kept(tuner)}",
             f"tuned weights: {weight_line(model.layout, tuner.weights_[:dense])}"]
    if model.sparse is not None:
        lines.append(f"sparse features with a non-zero weight: {np.count_nonzero(tuner.weights_[dense:tuned])} of "
                     f"{tuned - dense} ({job.out / 'sparse-weights.txt'})")
    if specs:
        lines.append("global weights: " + " ".join(f"{n}= {v:.6g}" for n, v in zip(tuner.feature_names_,
                                                                                   tuner.weights_[tuned:])))
    return lines + [f"wrote {job.out / 'moses.ini'}"]


_LOOPS: dict[str, Callable[[Any, TuningJob], list[str]]] = {"relevant-set": _relevant_set, "block": _block,
                                                              "sampler": _sampler}


def _kept(tuner: SampleRank) -> str:
    """Which epoch's averaged weights a fitted SampleRank kept, and why."""
    log, kept = tuner.log_, tuner.kept_epoch_
    if not len(tuner.held_out_):
        return f"kept the averaged weights of epoch {kept}, the last (--held-out N keeps the best on held-out " \
               "sentences)"
    bleu = {e.epoch: 100 * e.held_out_bleu for e in log}
    return (f"kept the averaged weights of epoch {kept}: the best held-out BLEU, {bleu[kept]:.2f} on "
            f"{len(tuner.held_out_)} held-out sentences (per epoch: "
            + ", ".join(f"{b:.2f}" for b in bleu.values()) + ")")


def with_sparse_features(model: TranslationModel, features: str, classes: Path | None) -> TranslationModel:
    """``model`` with the sparse features SampleRank is to tune: none (``dense``), the boundary family or the
    distortion family.

    The boundary family takes the classes of ``classes``, else the model's own
    sparse features (with its distortion bins, if it has them), else
    ``word-classes.txt`` beside its moses.ini. The distortion family starts
    from the model's own bins' weights, else zero.
    """
    if features == "dense":
        return replace(model, sparse=None, config=model.config.without_sparse())
    if features == "distortion":
        bins = SparseModel.empty(["distortion"])
        if model.sparse is not None and model.sparse.jumps is not None:
            bins.jumps[:] = model.sparse.jumps
        return replace(model, sparse=bins, config=model.config.without_sparse())
    if classes is None and model.sparse is not None:
        return model
    path = classes if classes is not None else model.config.path.parent / CLASSES_FILE
    if not path.exists():
        raise PbmtError(f"--features boundary needs word classes: {path} does not exist (pbmt train writes it; "
                        "or give --word-classes FILE)")
    return replace(model, sparse=SparseModel.new(WordClasses.read(path)), config=model.config.without_sparse())


def read_dev(src: Path, refs: Path, limit: int | None,
             preprocessing: Preprocessing | None = None) -> tuple[list[str], list[str]]:
    """The dev source lines (the first ``limit``) and their references, in the model's token form (tokens
    joined by spaces): plain text is tokenised and cased as ``preprocessing`` (the model's) says, source and
    target side; None: the files are in the token form already.

    An empty source line raises FormatError; so does a line count that differs
    between the two files.
    """
    sources = []
    for number, line in read_lines(src):
        if limit is not None and number > limit:
            break
        if not line.strip():
            raise FormatError(src, number, "empty source sentence (its translation is empty whatever the "
                              "weights): remove it, with its reference, from the dev set")
        sources.append(line)
    references = [line for number, line in read_lines(refs) if limit is None or number <= limit]
    if len(references) != len(sources):
        raise PbmtError(f"{src} has {len(sources)} sentences but {refs} has {len(references)}"
                        + (f" (within the first {limit})" if limit is not None else ""))
    if not sources:
        raise PbmtError(f"{src}: no dev sentences")
    if preprocessing is not None:
        source, target = preprocessing.source_form, preprocessing.target_form
        sources = [" ".join(source.tokens(line)) for line in sources]
        references = [" ".join(target.tokens(line)) for line in references]
    return sources, references


def token_lines(path: Path, config: Path | None, side: str, tokenized: bool) -> list[str]:
    """The lines of ``path`` in the token form of the model ``config`` names (a moses.ini; its ``pbmt.toml``
    says how, ``side`` "source" or "target"), tokens joined by spaces; as they are when ``tokenized`` or
    without a model."""
    lines = [line for _, line in read_lines(path)]
    if config is None or tokenized:
        return lines
    preprocessing = Preprocessing.read(config.parent)
    form = preprocessing.source_form if side == "source" else preprocessing.target_form
    return [" ".join(form.tokens(line)) for line in lines]


def reference_lines(paths: Sequence[Path], config: Path | None, tokenized: bool) -> list[list[str]]:
    """``token_lines`` of every --refs file (target side), one stream each; PbmtError naming the files when
    their line counts differ."""
    streams = [token_lines(path, config, "target", tokenized) for path in paths]
    if len({len(stream) for stream in streams}) > 1:
        raise PbmtError("the --refs files differ in length: " + ", ".join(
            f"{path} has {len(stream)} lines" for path, stream in zip(paths, streams)))
    return streams


def _preprocessing(job: TuningJob) -> Preprocessing | None:
    return None if job.tokenized else Preprocessing.read(job.config.parent)


def dev_set(job: TuningJob, model: TranslationModel) -> tuple[list[str], list[list[str]]]:
    """``read_dev`` of the job's dev source and each of its --refs files (plain text made into ``model``'s token
    form unless ``tokenized``): the sources and one reference stream per file. Text that did not go through
    the model's own preprocessing (``tokenized``, or a model without one) is checked to be in the model's
    token form (``pbmt.features.translation.check_token_form``)."""
    streams, prep = [], model.preprocessing
    checked = {} if job.tokenized else {"remedy": KEEPS_TOKENS_REMEDY}
    for path in job.refs:
        sources, references = read_dev(job.src, path, job.sentences, _preprocessing(job))
        if job.tokenized or prep.keeps_tokens:
            check_token_form(path, [line.split() for line in references], model.vocab, prep.target_language,
                             **checked)
        check_not_swapped(job.src, [line.split() for line in sources], path, [line.split() for line in references],
                          model)
        streams.append(references)
    if job.tokenized or prep.keeps_tokens:
        check_token_form(job.src, [line.split() for line in sources], model.vocab, prep.source_language, **checked)
    return sources, streams

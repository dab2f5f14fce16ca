"""The translation server of ``pbmt serve``: a JSON API and the teaching page, on FastAPI.

The model is loaded once in this process. Sentences are decoded on
``threads`` threads of this process over that one model (the search kernels
release Python's lock, the model is read-only), or, with ``workers`` > 1, in
that many worker processes of a ``ProcessPoolExecutor`` (spawned, so no event
loop or lock is forked), each loading the model once. Every sentence is one
job. A job waits for a free thread or worker in a bounded queue
(``Dispatcher``): at most one job per thread or worker is ever handed to the
pool, so a job still waiting can be dropped when its client disconnects, and a
full queue answers 503 at once instead of piling work up. The last few weight
vectors' models are kept (``WeightedModels``), since re-weighting re-prunes the
phrase table.

Errors are JSON ``{"error": "one line"}`` with a 4xx status for the
client's mistakes (413: too long or too many, the body limit counting the
bytes as they arrive, chunked or not; 422: malformed, a lone surrogate
included) and 503 when the queue is full. Nothing slow runs in the event loop:
a sentence is tokenised (to count its words) in a thread, so ``/health``
answers while a long one is checked.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import multiprocessing
import os
import pickle
import re
import signal
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from fastapi import Body, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException

from pbmt.base.errors import PbmtError
from pbmt.search.explain import explain, explanation_data, reference_path
from pbmt.base.feature_labels import column_labels
from pbmt.base import markup
from pbmt.model.model import TranslationModel
from pbmt.features.translation import Translator

STATIC = Path(__file__).resolve().parent / "static"
MAX_WEIGHTED_MODELS = 4  # per process: a page's slider moves back and forth between a few weight vectors


@dataclasses.dataclass(frozen=True)
class ServerSettings:
    """What ``pbmt serve`` was started with: ``model_args`` are ``pbmt translate``'s model options
    (``-f``, ``--weights``, ``--stack`` ...) the server's model was loaded with; ``workers`` > 1: decode in that
    many processes, else on ``threads`` threads of the server's process."""

    model_args: argparse.Namespace
    workers: int = 1
    max_queue: int = 200  # at least max_sentences: a request of max_sentences fits an idle server's queue
    max_words: int = 100
    max_sentences: int = 100
    max_body_bytes: int = 1 << 20
    samples: tuple[str, ...] = ()
    threads: int = 1

    @property
    def slots(self) -> int:
        """Sentences decoded at once: one per worker process, or one per thread."""
        return self.workers if self.workers > 1 else self.threads


# --- decoding side: the server's threads, or a worker process -----------------------------------------------------

class WeightedModels:
    """A model and the same model under the last few weight vectors requests asked for, shared by the threads
    that decode (the first thread to ask for new weights prunes the table; the others wait for it)."""

    def __init__(self, model: TranslationModel):
        self.base = model
        self.weighted: OrderedDict[tuple[float, ...], TranslationModel] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, weights: tuple[float, ...] | None, search: dict | None) -> TranslationModel:
        """The model under ``weights`` (None: the server's) with the ``search`` settings replaced."""
        model = self.base
        if weights is not None:
            with self.lock:
                if weights not in self.weighted:
                    self.weighted[weights] = model.with_weights(np.array(weights))
                    while len(self.weighted) > MAX_WEIGHTED_MODELS:
                        self.weighted.popitem(last=False)
                self.weighted.move_to_end(weights)
                model = self.weighted[weights]
        if search:
            model = dataclasses.replace(model, settings=dataclasses.replace(model.settings, **search))
        return model


_worker: dict[str, WeightedModels] = {}


def _load_worker(model: bytes) -> None:
    """A worker's initializer: load and keep the model, which arrives pickled (by its path, ``pbmt.model.model``),
    once the watch on the server has started, so that a worker still loading ends with a server killed meanwhile
    (Ctrl-C is the server's to handle, not the workers')."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    _worker["models"] = WeightedModels(pickle.loads(model))


def _on_worker(job, *args):
    """``job(models, *args)`` in a worker process, with the worker's models."""
    return job(_worker["models"], *args)


def _exit_with_parent(parent: int) -> None:
    """End this worker when the server is gone: a server killed outright (SIGKILL) cannot stop its pool, and
    the pool's queue does not tell the workers."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)


def _translate_job(models: WeightedModels, line: str, tokenized: bool, n_best: int, distinct: bool, weights, search,
                   reading: tuple[str, bool] = ("pass-through", True)) -> dict:
    """One sentence as ``pbmt translate`` translates it, as a JSON-ready dict; ``reading``: how its markup is
    read (``xml_input``, ``quote_zones``)."""
    translation = Translator(models.get(weights, search), n_best=n_best, distinct=distinct, tokenized=tokenized,
                             xml_input=reading[0], quote_zones=reading[1]).translate(0, line)
    return {"text": translation.text, "alignment": [list(link) for link in translation.alignment],
            "nbest": [{"text": e.text, "score": e.total, "features": {k: list(v) for k, v in e.features.items()},
                       "segmentation": [list(s) for s in e.segmentation],
                       "alignment": [list(link) for link in e.alignment]} for e in translation.nbest]}


def _complete_job(models: WeightedModels, line: str, prefix: str, tokenized: bool, n_best: int, weights, search) -> dict:
    """The best translations of one sentence that begin with ``prefix`` (``Translator.complete``)."""
    translation = Translator(models.get(weights, search), n_best=n_best, tokenized=tokenized,
                             nbest_output=True).complete(0, line, prefix)
    return {"text": translation.text, "unreachable": translation.unreachable or None,
            "completions": [{"text": output, "tokens": e.text, "score": e.total}
                            for e, output in zip(translation.nbest, translation.nbest_output)]}


def _explain_job(models: WeightedModels, line: str, tokenized: bool, n_best: int, weights, search, per_stack: int,
                 reading: tuple[str, bool] = ("pass-through", True), reference: str | None = None) -> dict:
    model = models.get(weights, search)
    translator = Translator(model, tokenized=tokenized, xml_input=reading[0], quote_zones=reading[1])
    source, given = translator.read(line)
    try:
        e = explain(model, translator.cased(source), n_best=n_best, markup=given)
    except ValueError as err:
        return {"error": str(err)}
    target = translator.target_tokens(reference) if reference else []
    data = explanation_data(e, model, per_stack, reference_path(e, model, target) if target else None)
    return {**data, "text": translator.output(e.best.derivation, e.options, source)}


def _ready(models: WeightedModels) -> int:
    """Decode one word, so the numba kernels are loaded before the first request; the process's id."""
    _translate_job(models, "a", True, 0, False, None, None)
    return os.getpid()


# --- server side -------------------------------------------------------------------------------------------------

async def ready_processes(submit, n: int, pause: float = 0.05) -> list[int]:
    """The ids of the ``n`` processes that decode, each once it has loaded the model and decoded a word: ``_ready``
    is asked of them in rounds of ``n`` until ``n`` distinct processes answered (a process that is ready takes
    the jobs of one still loading, so one round may not reach them all). ``submit(job)`` returns a future."""
    pids: set[int] = set()
    while True:
        pids.update(await asyncio.gather(*(asyncio.wrap_future(submit(_ready)) for _ in range(n))))
        if len(pids) >= n:
            return sorted(pids)
        await asyncio.sleep(pause)


class ClientGone(Exception):
    """The client closed its connection before its answer was ready."""


class Dispatcher:
    """Jobs to threads or worker processes through a bounded queue; counts what it did for ``/health``.

    submit: ``submit(job, *args)`` starts ``job(models, *args)`` on a thread or worker and gives its
    ``Future``; slots: how many run at once."""

    def __init__(self, submit, slots: int, max_queue: int):
        self.submit, self.max_queue = submit, max_queue
        self.slots = asyncio.Semaphore(slots)
        self.waiting = self.running = self.completed = self.dropped = 0

    def admit(self, jobs: int) -> None:
        """Refuse (503) a request whose jobs would overflow the queue."""
        if self.waiting + jobs > self.max_queue:
            raise HTTPException(503, f"the server is busy: {self.waiting} sentences are waiting and the queue "
                                     f"holds {self.max_queue} (--max-queue); retry later")

    async def run(self, fn, *args):
        """``fn(models, *args)`` on a thread or worker once one is free; cancelling while waiting drops the
        job."""
        self.waiting += 1
        try:
            await self.slots.acquire()
        except asyncio.CancelledError:
            self.dropped += 1
            raise
        finally:
            self.waiting -= 1
        loop = asyncio.get_running_loop()
        self.running += 1
        try:
            future = self.submit(fn, *args)
        except (RuntimeError, BrokenProcessPool):  # shut down, or a worker died
            self._finished(None)
            raise HTTPException(503, "the server is stopping or lost a decoding worker") from None
        # the slot frees when the worker is done, even if the caller stopped waiting
        future.add_done_callback(lambda done: loop.call_soon_threadsafe(self._finished, done))
        try:
            return await asyncio.wrap_future(future)
        except BrokenProcessPool:
            raise HTTPException(503, "a decoding worker died; restart the server") from None

    def _finished(self, future: Future | None) -> None:
        self.running -= 1
        if future is not None and future.cancelled():  # its client left before a worker took it
            self.dropped += 1
        elif future is not None:
            self.completed += 1
        self.slots.release()


async def _until_disconnected(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def _unless_disconnected(request: Request, work):
    """The result of the coroutine ``work``, or ClientGone (and ``work`` cancelled) if the client leaves first."""
    task = asyncio.ensure_future(work)
    watch = asyncio.ensure_future(_until_disconnected(request))
    await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        watch.cancel()
        return task.result()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    raise ClientGone


# --- the API -----------------------------------------------------------------------------------------------------

class SearchOverrides(BaseModel):
    """Search settings for one request (default: the server's)."""

    model_config = ConfigDict(extra="forbid")
    stack_size: int | None = Field(None, ge=1, le=10000, description="hypotheses kept per stack")
    beam_threshold: float | None = Field(None, ge=0, le=1, description="keep hypotheses within this probability "
                                         "ratio of a stack's best (0: no threshold)")
    distortion_limit: int | None = Field(None, ge=-1, le=100, description="longest jump; -1: unlimited")
    search: Literal["cube", "stack"] | None = Field(None, description="cube pruning (each stack filled by its "
                                                    "pop_limit best hypothesis-option pairs) or stack decoding "
                                                    "(every kept hypothesis extended by every option)")
    pop_limit: int | None = Field(None, ge=0, le=100000, description="cube pruning: hypotheses created per stack "
                                  "(0: no limit)")


class Common(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tokenized: bool = Field(False, description="input is in the model's tokens (no tokenising, lowercasing, "
                                               "detokenising)")
    weights: dict[str, float | list[float]] | None = Field(
        None, description="weights replacing the server's for some features, by moses.ini name, a number or a "
                          'list as pbmt.load takes them: {"LM0": 0.6, "TranslationModel0": [0.2, 0.2, 0.2, 0.2]}')
    search: SearchOverrides | None = None


class Reading(BaseModel):
    """How a request's markup is read (``pbmt.base.markup``)."""

    xml_input: Literal[markup.XML_MODES] = Field(  # type: ignore[valid-type]
        "pass-through", description="read Moses's XML markup in the sentences (pbmt translate --xml-input): "
                                    "a tag's translations are the only ones of its words (exclusive), compete with "
                                    "the phrase table's (inclusive) or with its phrases that contain them "
                                    "(constraint); ignore: walls and zones only; pass-through: text")
    quote_zones: bool = Field(True, description="paired quotes, brackets and tags are zones (a quoted span is "
                                                "translated as a unit, inside its quotes)")

    def reading(self) -> tuple[str, bool]:
        """(``xml_input``, ``quote_zones``)."""
        return self.xml_input, self.quote_zones


class TranslateRequest(Common, Reading):
    sentences: list[str] = Field(..., min_length=1, description="one sentence per item")
    n_best: int = Field(0, ge=0, le=1000, description="n-best entries per sentence (0: none)")
    distinct: bool = Field(False, description="n-best entries with distinct target strings")


class ExplainRequest(Common, Reading):
    sentence: str
    n_best: int = Field(10, ge=1, le=100, description="n-best entries from the search graph")
    hypotheses_per_stack: int = Field(50, ge=0, le=1000, description="hypotheses listed per stack (best first; "
                                      "the n-best paths and their ancestors are always listed)")
    reference: str | None = Field(None, description="a reference translation (in the sentence's form): the answer's "
                                  "`reference` then says where its best derivation went in the search")


class CompleteRequest(Common):
    sentence: str
    prefix: str = Field("", description="the start of the translation, as typed (target text in the form of "
                                          "the sentence: plain, or the model's tokens with tokenized); unless it "
                                          "ends in a space, its last word may be unfinished")
    n_best: int = Field(5, ge=1, le=100, description="completions, with distinct target words")


SAMPLE = "En el principio crió Dios los cielos y la tierra."
TRANSLATE_EXAMPLES = {
    "sentences": {"value": {"sentences": [SAMPLE, "Y la tierra estaba desordenada y vacía."]}},
    "n-best, other weights and distortion limit": {"value": {
        "sentences": [SAMPLE], "n_best": 3, "weights": {"LM0": [0.8]}, "search": {"distortion_limit": 0}}},
}
COMPLETE_EXAMPLES = {"a prefix ending mid-word": {"value": {"sentence": SAMPLE, "prefix": "In the beg",
                                                            "n_best": 3}}}
EXPLAIN_EXAMPLES = {"a sentence": {"value": {"sentence": SAMPLE, "n_best": 5, "hypotheses_per_stack": 10}}}


def create_app(settings: ServerSettings, model: TranslationModel) -> FastAPI:
    """The FastAPI application; ``model`` is the server's, which each worker receives (by its path)."""
    layout = model.layout
    translators = {tokenized: Translator(model, tokenized=tokenized) for tokenized in (False, True)}
    # the page opens on the first sample: one the server would refuse (413) must not be offered
    samples = [line for line in settings.samples if len(translators[False].tokens(line)) <= settings.max_words]
    state: dict[str, Any] = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        pool: ProcessPoolExecutor | ThreadPoolExecutor
        if settings.workers > 1:
            pool = ProcessPoolExecutor(settings.workers, multiprocessing.get_context("spawn"),
                                       initializer=_load_worker, initargs=(pickle.dumps(model),))

            def submit(job, *args):
                return pool.submit(_on_worker, job, *args)
        else:  # the model loaded here, shared by the threads
            pool = ThreadPoolExecutor(settings.threads, thread_name_prefix="pbmt-serve")
            models = WeightedModels(model)

            def submit(job, *args):
                return pool.submit(job, models, *args)
        try:
            state["pids"] = await ready_processes(submit, settings.workers)
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        state["dispatcher"] = Dispatcher(submit, settings.slots, settings.max_queue)
        yield
        pool.shutdown(wait=True, cancel_futures=True)

    app = FastAPI(title="pbmt", version="1", lifespan=lifespan, docs_url=None, redoc_url=None,
                  description="Phrase-based translation with a Moses-format model: translate sentences, or see "
                              "how one sentence was searched. The page at / teaches with it.")
    app.openapi_version = "3.0.3"  # the Swagger UI shipped with swagger-ui-bundle reads OpenAPI 3.0

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, err: HTTPException):
        if err.status_code == 400:  # FastAPI's: a body it could not parse (JSON nested too deep, say)
            detail = err.detail
            if isinstance(bad := err.__cause__, UnicodeDecodeError):
                detail = f"the body is not UTF-8 (byte 0x{bad.object[bad.start]:02x} at byte {bad.start + 1})"
            return JSONResponse({"error": f"malformed request: {detail}"}, status_code=422)
        return JSONResponse({"error": err.detail}, status_code=err.status_code)

    @app.exception_handler(RequestValidationError)
    async def malformed(request: Request, err: RequestValidationError):
        parts = []
        for error in err.errors()[:3]:
            if error["type"] == "json_invalid":
                parts.append(f"the body is not JSON ({error['ctx'].get('error', 'unreadable')} at character "
                             f"{error['loc'][-1]})")
                continue
            where = ".".join(str(x) for x in error["loc"][1:]) or "the body"
            parts.append(f"{where}: {error['msg']}")
        return JSONResponse({"error": "malformed request: " + "; ".join(parts)}, status_code=422)

    app.add_middleware(_BodyLimit, limit=settings.max_body_bytes)

    def weights_of(request: Common) -> tuple[float, ...] | None:
        """The request's weights over the server's, checked as ``pbmt.load(weights=...)`` checks them (the same
        ``MosesConfig.with_weights``, so the same words); a number stands for a one-weight feature's list."""
        if request.weights is None:
            return None
        served = dataclasses.replace(model.config, weights={**model.config.weights, **layout.as_dict(model.weights)})
        try:
            merged = served.with_weights({name: values if isinstance(values, list) else [values]
                                          for name, values in request.weights.items()})
        except PbmtError as err:
            raise HTTPException(422, f"weights: {err}") from None
        return tuple(layout.weights(merged).tolist())

    def search_of(request: Common) -> dict | None:
        return request.search.model_dump(exclude_none=True) if request.search else None

    def check_markup(index: int | None, line: str, xml_input: str) -> None:
        try:
            markup.check(line, xml_input)
        except markup.MarkupError as err:
            where = f"sentence {index + 1}" if index is not None else "the sentence"
            raise HTTPException(422, f"{where}: malformed markup: {err}") from None

    def refuse_surrogate(where: str, text: str) -> None:
        surrogate = _LONE_SURROGATE.search(text)
        if surrogate:
            raise HTTPException(422, f"{where} holds a lone surrogate (U+{ord(surrogate[0]):04X} at character "
                                     f"{surrogate.start() + 1}), which is no character")

    def check_length(index: int | None, line: str, tokenized: bool) -> None:
        """413 for a sentence of more than --max-words tokens, 422 for one holding a lone surrogate (no
        character: it cannot even be written back as UTF-8). Slow on a long line: run it in a thread."""
        where = f"sentence {index + 1}" if index is not None else "the sentence"
        refuse_surrogate(where, line)
        # tokenising never joins what white space separates, so this many words are too many tokens at once
        words = len(line.split()) if len(line.split()) > settings.max_words else len(translators[tokenized].tokens(line))
        if words > settings.max_words:
            raise HTTPException(413, f"{where} has {words} words; this server translates at most "
                                     f"{settings.max_words} (--max-words)")

    async def check_lengths(lines: list[str], tokenized: bool, xml_input: str | None = None,
                            single: bool = False) -> None:
        """``check_length`` and, given ``xml_input``, ``check_markup`` of every line, in a thread."""
        def check_all():
            for i, line in enumerate(lines):
                check_length(None if single else i, line, tokenized)
                if xml_input is not None:
                    check_markup(None if single else i, line, xml_input)
        await asyncio.to_thread(check_all)

    @app.post("/translate", summary="Translate sentences")
    async def translate(body: Annotated[TranslateRequest, Body(openapi_examples=TRANSLATE_EXAMPLES)],
                        request: Request) -> dict:
        """Each sentence as `pbmt translate` translates it (same model, weights and settings), with its word
        alignment and, with `n_best`, its n-best entries (text, score, features, segmentation, alignment)."""
        if len(body.sentences) > settings.max_sentences:
            raise HTTPException(413, f"{len(body.sentences)} sentences; this server takes at most "
                                     f"{settings.max_sentences} a request (--max-sentences)")
        for i, line in enumerate(body.sentences):
            if "\n" in line:
                raise HTTPException(422, f"sentence {i + 1} contains a line break; send one sentence per item")
        await check_lengths(body.sentences, body.tokenized, body.xml_input)
        weights, search = weights_of(body), search_of(body)
        dispatcher: Dispatcher = state["dispatcher"]
        dispatcher.admit(len(body.sentences))
        jobs = asyncio.gather(*(dispatcher.run(_translate_job, line, body.tokenized, body.n_best, body.distinct,
                                               weights, search, body.reading()) for line in body.sentences))
        try:
            translations = await _unless_disconnected(request, jobs)
        except ClientGone:
            return Response(status_code=499)
        return {"translations": translations}

    @app.post("/complete", summary="Complete a translation from its typed start")
    async def complete(body: Annotated[CompleteRequest, Body(openapi_examples=COMPLETE_EXAMPLES)],
                       request: Request) -> dict:
        """Interactive translation: the best translations of `sentence` that begin with `prefix` (`pbmt
        translate --prefix`): `text`, the best one; `completions`, the `n_best` best with distinct words (text,
        the model's tokens, score); `unreachable`, why none begins with the prefix (else null). The prefix's
        words are searched exactly, the rest with the server's pruning; an empty prefix is `/translate`."""
        if not body.sentence.strip():
            raise HTTPException(422, "the sentence is empty")
        if "\n" in body.sentence or "\n" in body.prefix:
            raise HTTPException(422, "the sentence and the prefix are one line each")
        refuse_surrogate("the prefix", body.prefix)
        if (words := len(body.prefix.split())) > settings.max_words:
            raise HTTPException(413, f"the prefix has {words} words; this server completes at most "
                                     f"{settings.max_words} (--max-words)")
        await check_lengths([body.sentence], body.tokenized, single=True)
        dispatcher: Dispatcher = state["dispatcher"]
        dispatcher.admit(1)
        job = dispatcher.run(_complete_job, body.sentence, body.prefix, body.tokenized, body.n_best,
                             weights_of(body), search_of(body))
        try:
            return await _unless_disconnected(request, job)
        except ClientGone:
            return Response(status_code=499)

    @app.post("/explain", summary="How one sentence was searched")
    async def explain_(body: Annotated[ExplainRequest, Body(openapi_examples=EXPLAIN_EXAMPLES)],
                       request: Request) -> dict:
        """The search of one sentence (`pbmt explain` as JSON): translation options per span, the future-cost
        table, the best derivation's blocks with their feature contributions (columns named by `features`),
        every stack's counts and hypotheses (coverage, LM context, score, future, status and why), and the
        n-best list with segmentations and paths through the search graph; with `reference`, where the
        reference's best derivation went (`reference`: its verdict, its path through the stacks, and the stack
        and rule where it fell out; null without one)."""
        if not body.sentence.strip():
            raise HTTPException(422, "the sentence is empty")
        await check_lengths([body.sentence], body.tokenized, body.xml_input, single=True)
        dispatcher: Dispatcher = state["dispatcher"]
        dispatcher.admit(1)
        if body.reference is not None and "\n" in body.reference:
            raise HTTPException(422, "the reference is one line")
        job = dispatcher.run(_explain_job, body.sentence, body.tokenized, body.n_best, weights_of(body),
                             search_of(body), body.hypotheses_per_stack, body.reading(), body.reference)
        try:
            data = await _unless_disconnected(request, job)
        except ClientGone:
            return Response(status_code=499)
        if "error" in data:
            raise HTTPException(422, data["error"])
        return data

    @app.get("/health", summary="Is the server up, and how busy")
    async def health() -> dict:
        d: Dispatcher = state["dispatcher"]
        return {"status": "ok", "model": str(settings.model_args.config), "workers": settings.workers,
                "threads": settings.threads if settings.workers == 1 else 1, "worker_pids": state["pids"], "waiting": d.waiting, "running": d.running,
                "completed": d.completed, "dropped": d.dropped, "max_queue": settings.max_queue}

    @app.get("/model", summary="The model's features, weights, settings and sample sentences")
    async def model_info() -> dict:
        s = model.settings
        return {"features": layout.names, "sizes": layout.sizes,
                "labels": column_labels(layout.names, layout.sizes, layout.types),
                "weights": [float(w) for w in model.weights],
                "settings": {"stack_size": s.stack_size, "beam_threshold": s.beam_threshold,
                             "distortion_limit": s.distortion_limit, "reordering": s.reordering,
                             "search": s.search, "pop_limit": s.pop_limit},
                "limits": {"max_words": settings.max_words, "max_sentences": settings.max_sentences},
                "samples": samples}

    @app.get("/", include_in_schema=False)
    async def page():
        return FileResponse(STATIC / "index.html")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    _mount_docs(app)
    return app


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class _BodyLimit:
    """ASGI middleware: a request body of more than ``limit`` bytes gets 413, whether its Content-Length says
    so at once or its bytes (chunked, or more than declared) pass the limit as they arrive (an HTTPException
    from reading the body, which the app's handler answers)."""

    def __init__(self, app, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            answer = JSONResponse({"error": f"the request body has {length.decode('latin-1')} bytes; this server "
                                            f"takes at most {self.limit}"}, status_code=413)
            return await answer(scope, receive, send)
        received = 0

        async def counted():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise HTTPException(413, f"the request body has more than {self.limit} bytes; this server "
                                             f"takes at most {self.limit}")
            return message

        await self.app(scope, counted, send)


def _mount_docs(app: FastAPI) -> None:
    """OpenAPI docs at /docs from the Swagger UI files swagger-ui-bundle ships (no CDN: they work offline)."""
    from swagger_ui_bundle import swagger_ui_path

    app.mount("/docs-static", StaticFiles(directory=swagger_ui_path), name="docs-static")

    @app.get("/docs", include_in_schema=False)
    async def docs():
        return get_swagger_ui_html(openapi_url="/openapi.json", title="pbmt API",
                                   swagger_js_url="/docs-static/swagger-ui-bundle.js",
                                   swagger_css_url="/docs-static/swagger-ui.css",
                                   swagger_favicon_url="/docs-static/favicon-32x32.png")

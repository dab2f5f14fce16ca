"""Serve a model over HTTP: a JSON API and an interactive page that teaches phrase-based search.

  POST /translate  sentences in, translations out (optional n-best lists,
                   word alignments, per-request weights and search settings)
  POST /explain    the search of one sentence as JSON: options, future costs,
                   stacks and hypotheses (why each was pruned or recombined),
                   the n-best list with segmentations
  GET  /health     up, and how busy; GET /model: features, weights, samples
  GET  /           the page: type a sentence, step through the stacks, move
                   the weights and watch the search change (works offline)
  GET  /docs       the API's OpenAPI documentation

The model is loaded once; each sentence is decoded on one of --threads threads
sharing it (or, with --workers N, in one of N processes, each loading the
model), and requests wait in a queue of --max-queue sentences (a full queue
answers 503). It listens on 127.0.0.1 unless --host says
otherwise, and stops cleanly on SIGTERM or Ctrl-C. See docs/serve.md.

Examples:
  pbmt serve                         # the embedded model at http://127.0.0.1:8080/
  pbmt serve -f model/moses.ini --port 9000 --threads 2
  curl -s localhost:8080/translate -H 'content-type: application/json' \\
      -d '{"sentences": ["En el principio crió Dios los cielos y la tierra."]}'
"""

from __future__ import annotations

import argparse
import ipaddress
import signal
import socket
import sys
from pathlib import Path

from pbmt.commands import precompile
from pbmt.commands.options import add_threads_argument
from pbmt.commands.translate import DEFAULT_MODEL, add_model_arguments, load_model
from pbmt.base.errors import PbmtError, UsageError
from pbmt.base.files import read_lines
from pbmt.features.translation import KEEPS_TOKENS_REMEDY, Translator

DEFAULT_SAMPLES = DEFAULT_MODEL.parents[1] / "sample.es"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-f", "--config", type=Path, default=DEFAULT_MODEL, help="the model's moses.ini")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0: every interface; "
                        "the API has no authentication)")
    parser.add_argument("--port", type=int, default=8080, help="TCP port (0: any free port, printed at start)")
    add_threads_argument(parser, "decode requests' sentences")
    parser.add_argument("--workers", type=int, default=1, help="decode in this many processes, each with the model "
                        "loaded (more than 1: instead of --threads, one thread each)")
    parser.add_argument("--max-queue", type=int, default=200, help="sentences that may wait for a thread or worker; "
                        "beyond, requests get 503 (at least --max-sentences)")
    parser.add_argument("--max-words", type=int, default=100, help="longest sentence accepted (tokens), and "
                        "longest /complete prefix (words); longer ones get 413")
    parser.add_argument("--max-sentences", type=int, default=100, help="sentences per /translate request")
    parser.add_argument("--samples", type=Path, default=DEFAULT_SAMPLES if DEFAULT_SAMPLES.exists() else None,
                        help="sentences the page offers to pick from (the first 30 lines, leaving out any longer "
                        "than --max-words); it opens on the first")
    parser.add_argument("--shutdown-timeout", type=float, default=10.0, help="seconds requests in flight get "
                        "to finish after SIGTERM")
    add_model_arguments(parser)
    parser.add_argument("-q", "--quiet", action="store_true", help="no start-up message or request log")


def run(args: argparse.Namespace) -> int:
    if args.max_sentences > args.max_queue:
        raise UsageError(f"--max-sentences {args.max_sentences} is more than --max-queue {args.max_queue}: such a "
                         "request could never be queued, even on an idle server")
    # the web stack (uvicorn, fastapi) costs start-up time every other verb would pay if imported above
    import uvicorn

    from pbmt.commands.server import ServerSettings, create_app

    samples = tuple(line.strip() for _, line in read_lines(args.samples) if line.strip())[:30] if args.samples else ()
    try:  # before the model loads, so a busy port is reported at once
        sock = socket.create_server((args.host, args.port), family=_family(args.host))
    except OSError as err:
        raise PbmtError(f"cannot listen on {args.host}:{args.port}: {err.strerror or err}") from None
    try:
        model = load_model(args)  # checks the model (and builds its caches) before any worker starts
    except BaseException:
        sock.close()
        raise
    if precompile.say_first_run(model.settings, "serve", args.quiet):  # before listening: no request waits
        Translator(model).translate(0, precompile.STAND_IN_LINE)
    settings = ServerSettings(args, args.workers, args.max_queue, args.max_words, args.max_sentences,
                              samples=samples, threads=args.threads)
    port = sock.getsockname()[1]
    if not args.quiet:
        if warning := formless_warning(args.config, model.preprocessing):
            print(f"pbmt serve: warning: {warning}", file=sys.stderr)
        if not _is_loopback(args.host):
            print(f"pbmt serve: warning: listening on {args.host}, reachable from other machines; the API has no "
                  "authentication", file=sys.stderr)
        decoding = f"{args.workers} worker processes" if args.workers > 1 else f"{args.threads} thread(s)"
        print(f"pbmt serve: {args.config} decoding on {decoding}, starting on "
              f"http://{_url_host(args.host)}:{port}/", file=sys.stderr, flush=True)
    config = uvicorn.Config(create_app(settings, model), log_level="warning" if args.quiet else "info",
                            access_log=not args.quiet, timeout_graceful_shutdown=args.shutdown_timeout,
                            lifespan="on")
    server = uvicorn.Server(config)
    # uvicorn raises a caught SIGTERM or SIGINT again after its graceful shutdown; no-op handlers make that an
    # exit 0 (docs/serve.md: Ctrl-C stops the server as SIGTERM does)
    previous = {number: signal.signal(number, lambda *_: None) for number in (signal.SIGTERM, signal.SIGINT)}
    try:
        server.run(sockets=[sock])
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        sock.close()
    if not server.started:
        raise PbmtError("the server did not start (see the messages above)")
    if not args.quiet:
        print("pbmt serve: stopped", file=sys.stderr)
    return 0


def _family(host: str) -> socket.AddressFamily:
    try:
        return socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
    except ValueError:
        return socket.AF_INET


def formless_warning(config, preprocessing) -> str | None:
    """What the server says at start-up of a model whose ``pbmt.toml`` says nothing of its text form (a Moses
    model: requests' text is read as its tokens, as it is), or None: translate, explain and the API check each
    input's form; the server checks none, so it says it once."""
    if not preprocessing.keeps_tokens:
        return None
    return f"{config}: requests' text is read as the model's tokens as it is ({KEEPS_TOKENS_REMEDY})"


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host

"""pbmt serve against a live server on 127.0.0.1: the same translations as pbmt translate, concurrent clients
equal to serial ones, 4xx for bad requests, queued work dropped when its client leaves, a clean SIGTERM."""

import asyncio
import contextlib
import json
import shutil
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx")

import pbmt  # noqa: E402
from pbmt.base.errors import PbmtError  # noqa: E402
from pbmt.commands.cli import main  # noqa: E402
from pbmt.base.nbest import read_nbest  # noqa: E402
from pbmt.commands.server import ready_processes  # noqa: E402

from support import TINY_SOURCES  # noqa: E402

# decoding this with SLOW_SEARCH takes seconds on the tiny model (stack decoding: no beam, a huge stack, any jump),
# long enough to find the job running and act while it runs
SLOW_SENTENCE = "a b c d e a b c d e a b c d e a"
SLOW_SEARCH = {"search": "stack", "stack_size": 10000, "beam_threshold": 0.0, "distortion_limit": -1}
READY_SECONDS = 240  # a generous bound for a busy machine: loading, spawning workers, loading numba caches


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, model_dir: Path, *options: str, env: dict[str, str] | None = None,
                 ready_seconds: float = READY_SECONDS):
        self.model_dir = model_dir
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pbmt", "serve", "-f", str(model_dir / "moses.ini"), "--port", str(self.port),
             "-q", *options], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=None if env is None else {**os.environ, **env})
        deadline = time.monotonic() + ready_seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"pbmt serve exited with {self.process.returncode}: {self.process.stderr.read()}")
            try:
                if httpx.get(self.url + "/health", timeout=5).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.3)
        self.stop()
        raise AssertionError(f"pbmt serve did not answer within {ready_seconds} s")

    def post(self, path: str, body, **kwargs) -> httpx.Response:
        return httpx.post(self.url + path, json=body, timeout=120, **kwargs)

    def health(self) -> dict:
        return httpx.get(self.url + "/health", timeout=30).json()

    def wait_for(self, condition, what: str) -> dict:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            state = self.health()
            if condition(state):
                return state
            time.sleep(0.05)
        raise AssertionError(f"the server never reached: {what} (last /health: {state})")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture(scope="module")
def server(tiny_model_dir, tmp_path_factory):
    samples = tmp_path_factory.mktemp("samples") / "samples.txt"
    samples.write_text("a " * 21 + "\nA b, c d e.\nC a e b d\n", encoding="utf-8")
    s = Server(tiny_model_dir, "--threads", "2", "--max-words", "20", "--max-sentences", "60",
               "--max-queue", "500", "--samples", str(samples))
    yield s
    s.stop()


def test_translate_equals_pbmt_translate(server, tiny_model_dir, tmp_path):
    """Same input, weights and settings: the same 1-best, n-best entries (features, scores, segmentations)
    and alignments as the command line."""
    src = tmp_path / "in.txt"
    src.write_text("\n".join(TINY_SOURCES) + "\n")
    weights = "LM0= 0.9 WordPenalty0= 0.3 TranslationModel0= 0.1 0.4 0.1 0.2"
    for label, cli, request in (
        ("model's", [], {}),
        ("other", ["--weights", weights, "--distortion-limit", "0"],
         {"weights": {"LM0": [0.9], "WordPenalty0": [0.3], "TranslationModel0": [0.1, 0.4, 0.1, 0.2]},
          "search": {"distortion_limit": 0}}),
        ("numbers", ["--weights", "LM0= 0.2 WordPenalty0= -0.7"], {"weights": {"LM0": 0.2, "WordPenalty0": -0.7}}),
    ):
        out, nbest, align = tmp_path / f"{label}.out", tmp_path / f"{label}.nbest", tmp_path / f"{label}.align"
        assert main(["translate", "-q", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(src), "-o", str(out),
                     "--tokenized", "--n-best", str(nbest), "--n-best-size", "4", "--distinct", "--alignment", str(align), *cli]) == 0
        answer = server.post("/translate", {"sentences": TINY_SOURCES, "tokenized": True, "n_best": 4,
                                            "distinct": True, **request})
        assert answer.status_code == 200, answer.text
        translations = answer.json()["translations"]
        assert [t["text"] for t in translations] == out.read_text().splitlines()
        assert [" ".join(f"{s}-{t}" for s, t in tr["alignment"]) for tr in translations] \
            == align.read_text().splitlines()
        entries = list(read_nbest(nbest))
        served = [(i, e) for i, t in enumerate(translations) for e in t["nbest"]]
        assert len(served) == len(entries)
        for (i, got), want in zip(served, entries):
            assert (i, got["text"]) == (want.sentence, want.text)
            assert got["score"] == pytest.approx(want.total, abs=1e-4)  # the n-best file has 4 decimals
            assert list(got["features"]) == list(want.features)
            for name, values in want.features.items():
                assert got["features"][name] == pytest.approx(values, rel=1e-5, abs=1e-4)
            assert [tuple(s) for s in got["segmentation"]] == list(want.segmentation)
        if label == "other":
            assert out.read_text() != (tmp_path / "model's.out").read_text()


FIFTY = [{"sentences": [TINY_SOURCES[i % len(TINY_SOURCES)]], "tokenized": True, "n_best": 3,
          **({"weights": {"LM0": [0.2 + 0.1 * (i % 3)]}} if i % 2 else {})} for i in range(50)]


def _concurrently(server: Server, requests: list[dict]) -> list:
    with ThreadPoolExecutor(len(requests)) as pool:
        answers = list(pool.map(lambda r: server.post("/translate", r), requests))
    assert all(r.status_code == 200 for r in answers)
    return [r.json() for r in answers]


def test_fifty_concurrent_clients_equal_serial(server):
    """Two threads decode over one model, re-weighted per request: the answers are the serial ones."""
    serial = [server.post("/translate", r).json() for r in FIFTY]
    assert _concurrently(server, FIFTY) == serial
    assert len({json.dumps(s) for s in serial}) > len(TINY_SOURCES)  # the weights made a difference somewhere
    health = server.health()
    assert (health["threads"], health["workers"], health["worker_pids"]) == (2, 1, [server.process.pid])


def test_worker_processes_answer_as_threads_do(server, tiny_model_dir):
    processes = Server(tiny_model_dir, "--workers", "2", "--max-words", "20", "--max-sentences", "60")
    try:
        assert _concurrently(processes, FIFTY) == _concurrently(server, FIFTY)
        health = processes.health()
        assert (health["threads"], health["workers"], len(health["worker_pids"])) == (1, 2, 2)
        assert processes.process.pid not in health["worker_pids"]
    finally:
        processes.stop()


def test_worker_processes_on_a_cold_numba_cache_answer_as_a_warm_server_does(server, tiny_model_dir, tmp_path):
    """--workers 2 on an empty numba cache: the server compiles the search before it listens, then both workers
    compile what the requests need (n-best lists) at once, into one cache under its locks
    (``pbmt.base.numba_cache``): the warm server's answers, no error, and the cache filled."""
    cache = tmp_path / "numba-cache"
    cold = Server(tiny_model_dir, "--workers", "2", "--max-words", "20", "--max-sentences", "60",
                  env={"NUMBA_CACHE_DIR": str(cache)}, ready_seconds=2 * READY_SECONDS)
    try:
        before = set(cache.rglob("*.nbi"))  # the search the server compiled before it listened
        assert before
        explain = {"sentence": TINY_SOURCES[1], "tokenized": True, "n_best": 3}
        with ThreadPoolExecutor(2) as pool:  # the workers compile an explanation and n-best lists at once
            explained = pool.submit(cold.post, "/explain", explain)
            assert _concurrently(cold, FIFTY) == _concurrently(server, FIFTY)
            assert explained.result().json() == server.post("/explain", explain).json()
        assert len(cold.health()["worker_pids"]) == 2
    finally:
        cold.stop()
    assert cold.process.returncode == 0 and "Traceback" not in cold.process.stderr.read()
    assert {path.name.split("-")[0] for path in set(cache.rglob("*.nbi")) - before} >= {
        "_nbest_kernels.k_best_paths", "_scoring_kernels.score_dense"}  # compiled by the workers, on the requests


def test_the_server_waits_until_every_worker_has_answered_and_lists_those():
    # a ready worker takes the readiness jobs of one still loading: two rounds answered by worker 7 alone
    answers, jobs = iter([7, 7, 7, 7, 9, 7]), []

    def submit(job):
        jobs.append(job)
        future = Future()
        future.set_result(next(answers))
        return future
    assert asyncio.run(ready_processes(submit, 2, pause=0)) == [7, 9]
    assert len(jobs) == 6


@pytest.mark.parametrize("body, status, message", [
    (b'{"sentences": ["a b"', 422, "not JSON"),
    (b'{"sentences": ["a \xff b"]}', 422, "the body is not UTF-8 (byte 0xff at byte 19)"),
    (b'{"sentence": ["a b"]}', 422, "sentences: Field required"),
    (b'{"sentences": "a b"}', 422, "sentences: Input should be a valid list"),
    (b'{"sentences": []}', 422, "at least 1 item"),
    (b'{"sentences": ["a"], "n_best": -1}', 422, "n_best"),
    (b'{"sentences": ["a"], "beam": 3}', 422, "beam: Extra inputs are not permitted"),
    (b'{"sentences": ["a"], "weights": {"LM7": [1]}}', 422, "no feature named 'LM7'"),
    (b'{"sentences": ["a"], "weights": {"LM0": [1, 2]}}', 422, "LM0 has 1 weights, got 2"),
    (b'{"sentences": ["a"], "search": {"stack_size": 0}}', 422, "search.stack_size"),
    (b'{"sentences": ["a\\nb"]}', 422, "line break"),
    (b'{"sentences": ["a", "a <n translation=x>b</n>"], "xml_input": "exclusive"}', 422,
     "sentence 2: malformed markup: attribute translation of <n> has no quotes"),
    (b'{"sentences": ["a"], "xml_input": "sometimes"}', 422, "xml_input"),
    (json.dumps({"sentences": ["a " * 21]}).encode(), 413, "sentence 1 has 21 words; this server translates at most 20"),
    (json.dumps({"sentences": ["a"] * 61}).encode(), 413, "61 sentences"),
    (json.dumps({"sentences": ["a"] * 400000}).encode(), 413, "bytes; this server takes at most"),
])
def test_bad_requests_get_4xx_with_a_message(server, body, status, message):
    answer = httpx.post(server.url + "/translate", content=body, headers={"content-type": "application/json"},
                        timeout=60)
    assert answer.status_code == status, answer.text
    assert message in answer.json()["error"]


@pytest.mark.parametrize("weights", [{"LM7": 1}, {"LM0": [1, 2]}, {"TranslationModel0": 0.5}, {"LM0": 1e300},
                                     {"WordPenalty0": [-2e6]}, {"LM0": 0.5, "Distortion0": 1e7}])
def test_bad_weights_are_refused_in_the_python_apis_words(server, tiny_model_dir, weights):
    """A number or a list per feature, checked as pbmt.load checks them: the same words after 'weights: '."""
    with pytest.raises(PbmtError) as api:
        pbmt.load(tiny_model_dir / "moses.ini", weights=weights)
    answer = server.post("/translate", {"sentences": ["a"], "weights": weights})
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"] == f"weights: {api.value}"


def test_markup_is_read_as_pbmt_translate_reads_it(server, tiny_model_dir, tmp_path):
    lines = ['a <n translation="lord said">b c</n> d', 'e " d c " b a', "c a <wall/> e b"]
    src, out = tmp_path / "in.txt", tmp_path / "out.txt"
    src.write_text("\n".join(lines) + "\n")
    for cli, request in (([], {}), (["--xml-input", "exclusive", "--no-quote-zones"],
                                    {"xml_input": "exclusive", "quote_zones": False})):
        assert main(["translate", "-q", "--tokenized", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(src),
                     "-o", str(out), *cli]) == 0
        answer = server.post("/translate", {"sentences": lines, "tokenized": True, **request})
        assert [t["text"] for t in answer.json()["translations"]] == out.read_text().splitlines()
    assert "lord said" in out.read_text().splitlines()[0]
    explained = server.post("/explain", {"sentence": lines[2], "tokenized": True, "xml_input": "ignore"}).json()
    assert explained["walls"] == [{"position": 2, "within": [0, 4]}]


def test_explain_rejects_bad_requests(server):
    assert server.post("/explain", {"sentence": "  "}).status_code == 422
    long = server.post("/explain", {"sentence": "a " * 30})
    assert long.status_code == 413 and "at most 20" in long.json()["error"]
    assert server.post("/explain", {"sentences": ["a"]}).status_code == 422


def test_docs_and_page_are_served_without_outside_links(server):
    for path in ("/", "/docs", "/static/app.js", "/static/style.css"):
        page = httpx.get(server.url + path, timeout=30)
        assert page.status_code == 200, path
        assert "https://" not in page.text and "http://" not in page.text, path
    schema = httpx.get(server.url + "/openapi.json", timeout=30).json()
    assert {"/translate", "/explain", "/health", "/model"} <= set(schema["paths"])


def test_the_page_is_not_offered_samples_longer_than_max_words(server):
    """The page opens on the first sample: one of 21 words under --max-words 20 would open it on a 413."""
    assert httpx.get(server.url + "/model", timeout=30).json()["samples"] == ["A b, c d e.", "C a e b d"]


@pytest.fixture(scope="module")
def one_thread(tiny_model_dir):
    s = Server(tiny_model_dir, "--threads", "1", "--shutdown-timeout", "300")
    yield s
    s.stop()


def _slow_request(server: Server, answers: list) -> threading.Thread:
    thread = threading.Thread(target=lambda: answers.append(
        server.post("/translate", {"sentences": [SLOW_SENTENCE], "tokenized": True, "search": SLOW_SEARCH})))
    thread.start()
    return thread


def test_a_client_that_leaves_leaves_no_work_behind(one_thread):
    before = one_thread.health()
    answers: list = []
    busy = _slow_request(one_thread, answers)
    one_thread.wait_for(lambda h: h["running"] == 1, "the slow sentence running")
    body = json.dumps({"sentences": TINY_SOURCES, "tokenized": True}).encode()
    with socket.create_connection(("127.0.0.1", one_thread.port)) as client:
        client.sendall(b"POST /translate HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                       + f"content-length: {len(body)}\r\n\r\n".encode() + body)
        one_thread.wait_for(lambda h: h["waiting"] == len(TINY_SOURCES), "the leaving client's sentences queued")
    after = one_thread.wait_for(lambda h: h["waiting"] == 0 and h["running"] == 0, "idle")
    busy.join()
    assert answers[0].status_code == 200
    assert after["dropped"] - before["dropped"] == len(TINY_SOURCES)
    assert after["completed"] - before["completed"] == 1  # only the slow sentence was decoded


def test_workers_end_when_the_server_is_killed_outright(tiny_model_dir):
    server = Server(tiny_model_dir, "--workers", "2")
    workers = server.health()["worker_pids"]
    server.process.kill()
    server.process.wait()
    deadline = time.monotonic() + 60
    while workers and time.monotonic() < deadline:
        workers = [pid for pid in workers if _alive(pid)]
        time.sleep(0.2)
    assert workers == []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:  # a zombie is dead, only not yet reaped
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:  # gone meanwhile, or no /proc: os.kill said it was there
        return Path("/proc").is_dir() is False


def test_sigterm_mid_request_exits_cleanly(one_thread):
    workers = one_thread.health()["worker_pids"]
    answers: list = []
    busy = _slow_request(one_thread, answers)
    one_thread.wait_for(lambda h: h["running"] == 1, "the slow sentence running")
    one_thread.process.send_signal(signal.SIGTERM)
    assert one_thread.process.wait(timeout=120) == 0, one_thread.process.stderr.read()
    busy.join()
    assert answers[0].status_code == 200 and answers[0].json()["translations"][0]["text"]  # finished, not cut off
    assert "Traceback" not in one_thread.process.stderr.read()
    for pid in workers:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def test_explain_gives_the_translation_as_translate_writes_it(server):
    """/explain's ``text`` is /translate's text (detokenised, cased, unknown words as typed); its
    ``translation`` the model's tokens the alignment grid labels."""
    for sentence in ("Y la tierra estaba desordenada.", "e d xyzzy: a b"):
        text = server.post("/translate", {"sentences": [sentence]}).json()["translations"][0]["text"]
        answer = server.post("/explain", {"sentence": sentence}).json()
        assert answer["text"] == text
        assert len(answer["translation"].split()) == max(t for _, t in answer["alignment"]) + 1


@contextlib.contextmanager
def _chromium_page(width: int, height: int):
    """A page of headless Chromium (skips without Playwright or Chromium) and the list its script errors go to."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("no Chromium to drive (Debian package chromium)")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            errors: list = []
            page.on("pageerror", lambda err: errors.append(str(err)))
            yield page, errors
        finally:
            browser.close()


def _open_page(page, url: str) -> None:
    """Open the page and wait until it has drawn the sample sentence it opens on (version 1)."""
    page.goto(url + "/")
    page.wait_for_function("document.body.dataset.version === '1'", timeout=60_000)


# Every feature column in use, with values as wide as they come (an unknown word's -100, an LM's -12.345), a
# long orientation and a long block score: the widest blocks table of the model.
WIDEST_BLOCKS = """() => { const d = state.data; d.blocks.forEach((b, i) => {
    b.features = b.features.map(() => 1); b.weighted = b.weighted.map((x, k) => x || -(1.234 + k / 10));
    if (i % 2) b.weighted[0] = -100; b.weighted[d.features.length - 1] = -12.345;
    b.orientation = 'NEUTRAL'; b.msd = 'discontinuous'; b.score = -105.7167; b.jump = -12; });
  drawDerivation(); }"""
OVERFLOW = """() => { const box = document.getElementById('derivation').parentElement;
  return [document.documentElement.scrollWidth - window.innerWidth, box.scrollWidth - box.clientWidth]; }"""


@pytest.fixture(scope="module")
def cased_server(tiny_model_dir, tmp_path_factory):
    """A server of the tiny model made to read plain text (tokenised and lowercased, as pbmt.toml says), so
    its output text differs from its tokens, and opening its page on a sample of plain text."""
    folder = tmp_path_factory.mktemp("cased-model")
    for path in tiny_model_dir.iterdir():
        if path.is_file():
            shutil.copy(path, folder / path.name)
    (folder / "pbmt.toml").write_text('[preprocess]\ntokenize = true\nlowercase = true\ntruecase = false\n'
                                      'source_language = "en"\ntarget_language = "en"\n', encoding="utf-8")
    samples = folder / "samples.txt"
    samples.write_text("A b, c d e.\n", encoding="utf-8")
    s = Server(folder, "--workers", "1", "--samples", str(samples))
    yield s
    s.stop()


def test_the_page_opens_on_a_sample_cased_and_fits_a_1280_pixel_screen(cased_server, tmp_path):
    """The page opens on its first sample sentence already translated, shows the translation as /translate
    writes it (detokenised and cased, not the model's tokens), and its blocks table fits a 1280-pixel-wide
    screen without scrolling sideways, even with every feature column in use."""
    sample = httpx.get(cased_server.url + "/model", timeout=30).json()["samples"][0]
    text = cased_server.post("/translate", {"sentences": [sample]}).json()["translations"][0]["text"]
    tokens = cased_server.post("/explain", {"sentence": sample}).json()["translation"]
    assert text != tokens  # the sample tells the two forms apart
    with _chromium_page(1280, 900) as (page, errors):
        _open_page(page, cased_server.url)
        assert page.input_value("#source") == sample
        assert page.inner_text("#translation") == text
        assert page.evaluate(OVERFLOW) == [0, 0]
        page.evaluate(WIDEST_BLOCKS)
        assert page.locator("#derivation tr").first.locator("th").count() == 7 + len(cased_server.post(
            "/explain", {"sentence": sample}).json()["features"])
        shot = Path(os.environ.get("PBMT_TEST_ARTEFACTS", tmp_path)) / "serve-page-1280.png"
        shot.parent.mkdir(parents=True, exist_ok=True)
        page.locator("#derivation-section").screenshot(path=str(shot))
        assert page.evaluate(OVERFLOW) == [0, 0]
        assert not errors


def test_the_page_in_headless_chromium_shows_what_explain_says(server, tmp_path):
    """Type a sentence, step through the stacks, move a weight slider: the page shows /explain's answers."""
    model = httpx.get(server.url + "/model", timeout=30).json()
    sentence = "c a e b d"

    def explained(weights: list[float]) -> dict:
        by_name, k = {}, 0
        for name, size in zip(model["features"], model["sizes"]):
            by_name[name], k = weights[k:k + size], k + size
        search = {key: value for key, value in model["settings"].items() if key != "reordering"}
        answer = server.post("/explain", {"sentence": sentence, "tokenized": True, "n_best": 10,
                                          "hypotheses_per_stack": 50, "weights": by_name, "search": search})
        assert answer.status_code == 200, answer.text
        return answer.json()

    def shown_stack(page) -> dict:
        stats = page.locator("#stack-stats")
        return {key: int(stats.get_attribute("data-" + key.replace("_", "-")))
                for key in ("classes", "expanded", "added", "recombined", "histogram_pruned", "beam_pruned")}

    def listed(stack: dict) -> dict:
        return {key: stack[key] for key in ("classes", "expanded", "added", "recombined", "histogram_pruned",
                                            "beam_pruned")}

    with _chromium_page(1400, 1000) as (page, errors):
        _open_page(page, server.url)
        page.check("#tokenized")
        page.fill("#source", sentence)
        page.click("#go")
        page.wait_for_function("document.body.dataset.version === '2'", timeout=60_000)
        before = explained(model["weights"])
        assert page.inner_text("#translation") == before["text"]
        page.click("#stack-next")
        page.click("#stack-next")
        assert page.inner_text("#stack-label") == f"stack 2 of {len(sentence.split())}"
        assert shown_stack(page) == listed(before["stacks"][2])
        rows = page.locator("#stack-table tr[data-id]")
        kept = [h["id"] for h in before["stacks"][2]["hypotheses"] if h["status"] in ("expanded", "complete")]
        assert [int(rows.nth(i).get_attribute("data-id")) for i in range(rows.count())] == kept

        slider = page.locator("#weights input[data-label='LM0']")
        slider.evaluate("(s) => { s.value = s.min; s.dispatchEvent(new Event('input')); }")
        page.wait_for_function("document.body.dataset.version === '3'", timeout=60_000)
        weights = list(model["weights"])
        weights[int(slider.get_attribute("data-column"))] = float(slider.input_value())
        after = explained(weights)
        assert page.inner_text("#translation") == after["text"]
        assert shown_stack(page) == listed(after["stacks"][2])
        assert (after["translation"], listed(after["stacks"][2])) != (before["translation"],
                                                                       listed(before["stacks"][2]))
        page.click("#nbest button[data-rank='2']")
        path = set(after["nbest"][1]["path"])
        highlighted = page.locator("#stack-table tr.on-path")
        assert highlighted.count() >= 1
        assert all(int(highlighted.nth(i).get_attribute("data-id")) in path for i in range(highlighted.count()))
        shot = Path(os.environ.get("PBMT_TEST_ARTEFACTS", tmp_path)) / "serve-page.png"
        shot.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
    assert errors == []


def test_complete_equals_translate_with_prefix(server, tiny_model_dir, tmp_path):
    """/complete gives pbmt translate --prefix's translations; every completion begins with the prefix."""
    sources = TINY_SOURCES[:4]
    plain = server.post("/translate", {"sentences": sources, "tokenized": True}).json()["translations"]
    prefixes = ["", plain[1]["text"].split()[0] + " ", plain[2]["text"][:1], plain[3]["text"]]
    (tmp_path / "src").write_text("\n".join(sources) + "\n")
    (tmp_path / "prefixes").write_text("\n".join(prefixes) + "\n")
    assert main(["translate", "-q", "--tokenized", "-f", str(tiny_model_dir / "moses.ini"), "-i",
                 str(tmp_path / "src"), "--prefix", str(tmp_path / "prefixes"), "-o", str(tmp_path / "out")]) == 0
    expected = (tmp_path / "out").read_text().splitlines()
    for sentence, prefix, want, translated in zip(sources, prefixes, expected, plain):
        answer = server.post("/complete", {"sentence": sentence, "prefix": prefix, "tokenized": True, "n_best": 3})
        assert answer.status_code == 200, answer.text
        got = answer.json()
        assert got["text"] == want and got["unreachable"] is None
        assert got["completions"] and len({c["tokens"] for c in got["completions"]}) == len(got["completions"])
        for c in got["completions"]:
            assert c["tokens"].startswith(prefix.strip())
        if not prefix:
            assert got["text"] == translated["text"]
    answer = server.post("/complete", {"sentence": "a b", "prefix": "zebra ", "tokenized": True})
    assert answer.status_code == 200 and "'zebra' (word 1)" in answer.json()["unreachable"]
    assert answer.json()["completions"] == []
    for body in ({"sentence": " ", "prefix": "the"}, {"sentence": "a", "prefix": "x\ny"}, {"prefix": "the"}):
        assert server.post("/complete", body).status_code == 422
    # a prefix no phrase pair can begin: the reason quotes ten of its words and counts the rest
    answer = server.post("/complete", {"sentence": "a b", "prefix": "zebra " * 20, "tokenized": True}).json()
    assert answer["unreachable"].endswith("'zebra' (word 10) and 10 more") and answer["completions"] == []
    long = server.post("/complete", {"sentence": "a b", "prefix": "zebra " * 21})
    assert long.status_code == 413 and "the prefix has 21 words" in long.json()["error"]


# --- the server's limits (README.md, "Errors, outputs and interrupted runs") ---------------------------------------

def _chunked(server: Server, body: bytes, chunk: int = 65536) -> tuple[int, dict]:
    """POST ``body`` to /translate with chunked transfer encoding (no Content-Length); status and JSON answer."""
    parts = (body[i:i + chunk] for i in range(0, len(body), chunk))
    answer = httpx.post(server.url + "/translate", content=parts, headers={"content-type": "application/json"},
                        timeout=120)
    return answer.status_code, answer.json()


def test_the_body_limit_holds_for_a_chunked_body(server):
    big = json.dumps({"sentences": ["a b"] * 600000}).encode()  # 4.2 MB
    status, answer = _chunked(server, big)
    assert status == 413 and "this server takes at most 1048576" in answer["error"], answer
    status, answer = _chunked(server, json.dumps({"sentences": ["a b"], "tokenized": True}).encode())
    assert status == 200 and answer["translations"][0]["text"]


def test_deeply_nested_json_is_422_as_documented(server):
    body = b'{"sentences": ' + b"[" * 100000 + b"]" * 100000 + b"}"
    answer = httpx.post(server.url + "/translate", content=body, headers={"content-type": "application/json"},
                        timeout=60)
    assert answer.status_code == 422 and answer.json()["error"].startswith("malformed request"), answer.text


def test_a_huge_sentence_is_413_at_once_and_health_answers_meanwhile(server):
    results: list = []
    sender = threading.Thread(target=lambda: results.append(
        server.post("/translate", {"sentences": ["a " * 120000]})))
    sender.start()
    started = time.monotonic()
    assert server.health()["status"] == "ok"
    sender.join()
    assert results[0].status_code == 413 and "has 120000 words" in results[0].json()["error"]
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("body", [
    '{"sentences": ["a \\ud800 b"]}', '{"sentences": ["\\udfff"], "tokenized": true}', '{"sentence": "a\\udc80"}',
    '{"sentences": ["a"], "weights": {"\\ud800": [1]}}',
])
def test_a_lone_surrogate_is_a_4xx_json_answer(server, body):
    path = "/explain" if '"sentence"' in body else "/translate"
    answer = httpx.post(server.url + path, content=body.encode(), headers={"content-type": "application/json"},
                        timeout=60)
    assert 400 <= answer.status_code < 500, answer.text
    assert answer.headers["content-type"] == "application/json" and answer.json()["error"]


def test_the_default_queue_takes_a_request_of_the_most_sentences():
    from pbmt.commands.cli import build_parser
    args = build_parser().parse_args(["serve"])
    assert args.max_queue >= args.max_sentences


def test_max_sentences_above_max_queue_is_a_usage_error(capsys):
    assert main(["serve", "--max-sentences", "80", "--max-queue", "64", "--port", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("pbmt serve: error: --max-sentences 80 is more than --max-queue 64: such a request could never "
                   "be queued, even on an idle server")


def test_ctrl_c_stops_the_server_with_status_0_as_docs_serve_md_says(tiny_model_dir):
    server = Server(tiny_model_dir, "--workers", "1")
    server.process.send_signal(signal.SIGINT)
    assert server.process.wait(timeout=120) == 0
    assert "Traceback" not in server.process.stderr.read()
    docs = (Path(__file__).resolve().parents[2] / "docs" / "serve.md").read_text()
    assert "(or Ctrl-C) the server stops" in docs and "exits with status 0" in docs


ODD_CHARACTERS = ["\ud800", "\udfff", "\u0301", "\u0303", "\u202e", "\u202c", "\u200f", "\u2066", "\u200b",
                  "\u200d", "\ufeff", "\u00a0", "ñ", "n\u0303", "a"]


def test_random_unicode_through_serve_is_answered_as_translate_answers_it_or_a_4xx(server, tmp_path_factory):
    """Surrogates, combining marks (NFD), bidi controls and zero-width characters among the tiny model's words:
    200 with the translation pbmt translate gives the same line (NFD and NFC alike), or a 4xx JSON answer."""
    import unicodedata

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from reliability import SCALE

    folder = tmp_path_factory.mktemp("unicode-serve")

    @settings(max_examples=5 * SCALE, deadline=None, derandomize=True)
    @given(st.lists(st.sampled_from(["a", "b", "c", "d", "e", " ", *ODD_CHARACTERS]), min_size=1, max_size=12))
    def check(pieces):
        line = "".join(pieces)
        answer = httpx.post(server.url + "/translate", content=json.dumps({"sentences": [line]}).encode(),
                            headers={"content-type": "application/json"}, timeout=120)
        assert answer.headers["content-type"] == "application/json", answer.text
        if any("\ud800" <= c <= "\udfff" for c in line):
            assert answer.status_code == 422 and "lone surrogate" in answer.json()["error"]
            return
        if not line.strip():
            assert answer.status_code in (200, 422)
            return
        assert answer.status_code == 200, answer.text
        source = folder / "in.txt"  # the line second: a BOM starting a file is the file's, not the line's
        source.write_text("a\n" + unicodedata.normalize("NFD", line) + "\n", encoding="utf-8")
        assert main(["translate", "-q", "-f", str(server.model_dir / "moses.ini"), "-i", str(source), "-o",
                     str(folder / "out.txt")]) == 0
        assert answer.json()["translations"][0]["text"] == \
            (folder / "out.txt").read_text(encoding="utf-8").split("\n")[1]

    check()


def _reference_request(reference: str) -> dict:
    return {"sentence": "e d c b a", "tokenized": True, "n_best": 3, "hypotheses_per_stack": 5,
            "search": {"search": "stack", "stack_size": 1, "distortion_limit": 2}, "reference": reference}


def test_explain_with_a_reference_says_where_it_went(server, tiny_model_dir):
    """/explain's `reference` equals explain.reference_path in this process, and lists its hypotheses."""
    from pbmt.search.explain import explain, reference_path
    from pbmt.model.model import SearchSettings, TranslationModel

    settings = SearchSettings(search="stack", stack_size=1, distortion_limit=2)
    model = TranslationModel.load(tiny_model_dir / "moses.ini", settings)
    unpruned = server.post("/translate", {"sentences": ["e d c b a"], "tokenized": True,
                                          "search": {"search": "stack", "stack_size": 5000, "beam_threshold": 0,
                                                     "distortion_limit": 2}}).json()["translations"][0]["text"]
    answer = server.post("/explain", _reference_request(unpruned))
    assert answer.status_code == 200, answer.text
    got = answer.json()["reference"]
    want = reference_path(explain(model, "e d c b a".split(), n_best=3), model, unpruned.split())
    assert got["verdict"] == want["verdict"] and got["path"] == want["path"] and got["fell_out"] == want["fell_out"]
    listed = {h["id"] for stack in answer.json()["stacks"] for h in stack["hypotheses"]}
    assert {step["hypothesis"] for step in got["path"]} <= listed
    assert server.post("/explain", {"sentence": "a", "tokenized": True}).json()["reference"] is None
    assert server.post("/explain", _reference_request("zebra")).json()["reference"]["verdict"] == "unreachable"


def test_the_page_shows_why_not_the_reference(server):
    """The page's "why not the reference?" view in headless Chromium says what /explain says."""
    reference = "the lord said unto moses"
    want = server.post("/explain", _reference_request(reference)).json()
    with _chromium_page(1280, 1000) as (page, errors):
        _open_page(page, server.url)
        page.check("#tokenized")
        page.fill("#source", "e d c b a")
        page.fill("#reference", reference)
        page.evaluate("() => { const s = document.getElementById('stack-size'); s.value = 1;"
                      " s.dispatchEvent(new Event('input')); }")
        page.select_option("#algorithm", "stack")
        page.evaluate("() => { const s = document.getElementById('distortion'); s.value = 2;"
                      " s.dispatchEvent(new Event('input')); }")
        page.click("#go")
        page.wait_for_function("document.body.dataset.version && !document.getElementById('reference-section')"
                               ".hidden", timeout=60_000)
        page.wait_for_timeout(1000)  # the debounced requests of the controls settle
        r = want["reference"]
        if r["verdict"] == "unreachable":
            assert "Unreachable" in page.inner_text("#reference-verdict")
        else:
            fell = page.locator("#reference-fell")
            assert fell.get_attribute("data-stack") == (str(r["fell_out"]["stack"]) if r["fell_out"] else "")
            assert page.locator("#reference-path li").count() == len(r["path"])
        assert not errors


def _json_keys(value, parent: str = ""):
    """Every key of a JSON answer, with the key it sits under; the keys of a dict of feature names are values."""
    if isinstance(value, dict):
        for key, item in value.items():
            if parent != "features":
                yield key
            yield from _json_keys(item, key)
    elif isinstance(value, list):
        for item in value:
            yield from _json_keys(item, parent)


def test_every_json_answer_names_its_fields_in_one_style(server):
    answers = [server.health(), server.post("/translate", {"sentences": ["a b", "C a e"], "n_best": 3}).json(),
               server.post("/complete", {"sentence": "a b c", "prefix": "a", "n_best": 2}).json(),
               server.post("/explain", {"sentence": "a b c", "n_best": 3}).json(),
               server.post("/translate", {"sentences": []}).json(),
               server.post("/translate", {"sentences": ["a " * 21]}).json(),
               httpx.get(server.url + "/model", timeout=30).json()]
    keys = {key for answer in answers for key in _json_keys(answer)}
    assert {"translations", "nbest", "completions", "error", "worker_pids", "max_sentences"} <= keys
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*", key) for key in keys), sorted(keys)


def test_a_model_that_says_nothing_of_its_text_form_is_said_once_at_start_up(tiny_model_dir):
    """The server checks no request's form: a model with no pbmt.toml (its input read as its tokens) is named at
    start-up with the remedy translate gives; a model whose pbmt.toml says its form gets nothing."""
    from pbmt.commands.serve import formless_warning
    from pbmt.model.model import Preprocessing

    said = formless_warning(tiny_model_dir / "moses.ini", Preprocessing.read(tiny_model_dir))
    assert said.startswith(f"{tiny_model_dir / 'moses.ini'}: requests' text is read as the model's tokens")
    assert "pbmt tokenize --language L" in said
    embedded = Path(__file__).resolve().parents[2] / "data" / "model"
    assert formless_warning(embedded / "moses.ini", Preprocessing.read(embedded)) is None

"""docs/writing-a-feature.md, run: its module is docs/examples/repeats.py, its model edits and commands are the ones
run here, in its order, and what it says of their output holds. The feature's n-best column equals a count made
from each entry's own text; a process without the feature's module still loads pbmt's numba cache (it holds
nothing of the feature) and compiles nothing, and the feature's second run compiles nothing either."""

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "writing-a-feature.md"
EXAMPLE = REPO / "docs" / "examples" / "repeats.py"
SETUP = ["cp -r data/model repeats-model", "cp docs/examples/repeats.py repeats-model/"]
SERVE = "pbmt serve -f repeats-model/moses.ini --port 8080"
SENTENCE = "Y Josué mandó á los oficiales del pueblo, diciendo:"  # the guide's explain example: two repeats
CACHE_SAVED = "[cache] data saved"  # what numba prints (NUMBA_DEBUG_CACHE) for each compilation it caches


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"^```{kind}\n(.*?)^```", DOC.read_text(encoding="utf-8"), re.S | re.M)


def _commands() -> list[str]:
    return [line for block in _blocks("sh") for line in block.splitlines() if line.strip()]


def _run(root: Path, command: str, **env) -> subprocess.CompletedProcess:
    words = shlex.split(command)
    assert words[0] == "pbmt", command
    run = subprocess.run([sys.executable, "-m", "pbmt", *words[1:]], cwd=root, capture_output=True, text=True,
                         env={**os.environ, **env})
    assert run.returncode == 0, f"{command}\n{run.stderr[-3000:]}"
    return run


def _model_folder(folder: Path, toml: bool = True) -> Path:
    """The guide's ``cp -r data/model NAME`` and its edits in ``folder`` (made if missing, else empty), with the
    big files linked (and their binary caches, which are valid for a link to the same file) rather than copied."""
    folder.mkdir(exist_ok=True)
    for path in (REPO / "data" / "model").iterdir():
        if path.name in ("moses.ini", "pbmt.toml"):
            shutil.copy(path, folder / path.name)
        else:
            (folder / path.name).symlink_to(path)
    shutil.copy(EXAMPLE, folder / EXAMPLE.name)
    feature_line, weight_line = (block.strip() for block in _blocks("ini"))
    ini = (folder / "moses.ini").read_text()
    last_feature = ini.split("[weight]")[0].rstrip("\n").splitlines()[-1]
    ini = ini.replace(last_feature + "\n", f"{last_feature}\n{feature_line}\n", 1).rstrip("\n") + f"\n{weight_line}\n"
    (folder / "moses.ini").write_text(ini)
    if toml:
        with open(folder / "pbmt.toml", "a", encoding="utf-8") as handle:
            handle.write("\n" + _blocks("toml")[0])
    return folder


@pytest.fixture(scope="module")
def guide(tmp_path_factory, feature_folder):
    """Every command of the guide but the server, in its order, from a folder like a clone's root: {command:
    its run}; plus the runs of the cache check ("plain again", "feature again") after the first decoding with
    the feature. The model folder, which holds the feature's module and what numba compiles for it, is at the
    same path in every run (``feature_folder``), so its searches compile once per clone."""
    root = tmp_path_factory.mktemp("guide")
    (root / "data").symlink_to(REPO / "data")
    (root / "docs").symlink_to(REPO / "docs")
    commands = _commands()
    assert commands[:2] == SETUP and SERVE in commands
    runs = {}
    plain, with_feature = commands[2], commands[3]
    runs[plain] = _run(root, plain)  # builds the embedded model's binary caches, which the links then share
    (root / "repeats-model").symlink_to(_model_folder(feature_folder("writing-a-feature")))
    runs[with_feature] = _run(root, with_feature)
    runs["plain again"] = _run(root, plain.replace("sample.plain.en", "again.plain.en"), NUMBA_DEBUG_CACHE="1")
    runs["feature again"] = _run(root, with_feature.split(" --n-best")[0].replace("sample.en", "again.en"),
                                 NUMBA_DEBUG_CACHE="1")
    for command in commands[4:]:
        if command != SERVE:
            runs[command] = _run(root, command)
    return root, runs


def _repeats(words: list[str]) -> int:
    """From scratch: the words equal to one of the two words before them."""
    return sum(word in words[max(0, i - 2):i] for i, word in enumerate(words))


def test_the_guide_shows_the_example_module_as_it_is():
    assert _blocks("python")[0] == EXAMPLE.read_text(encoding="utf-8")


def test_nbest_column_is_the_repeats_of_each_entrys_own_text(guide):
    root, _ = guide
    lines = (root / "sample.nbest").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 500
    values = []
    for line in lines:
        _, text, features, *_ = line.split(" ||| ")
        value = re.search(r"(?:^| )Repeats0= (\S+)", features).group(1)
        assert features.split()[-2:] == ["Repeats0=", value]  # after the model's own columns
        assert float(value) == -_repeats(text.split()), line
        values.append(float(value))
    assert min(values) <= -2 and values.count(0.0) > 0
    example = next(b for b in _blocks("text") if b.startswith("0 ||| "))
    head, tail = example.strip().split(" ... ||| ... ")
    assert lines[0].startswith(head) and tail.split(" ||| ")[0] in lines[0]


def test_the_feature_changes_the_output_as_the_guide_says(guide):
    root, _ = guide
    plain = (root / "sample.plain.en").read_text(encoding="utf-8").splitlines()
    repeats = (root / "sample.en").read_text(encoding="utf-8").splitlines()
    assert len(plain) == len(repeats) == 50
    assert 1 <= sum(a != b for a, b in zip(plain, repeats)) <= 10  # "a few of the 50 sentences"
    assert "we be" in plain[37] and "we are we" in repeats[37]  # the 38th sentence


def test_pbmts_cache_holds_nothing_of_the_feature_and_both_models_stay_cached(guide):
    root, runs = guide
    module = "pbmt_user_repeats_"
    in_tree = [p for p in (REPO / "pbmt").rglob("*.nbi") if module.encode() in p.read_bytes()]
    assert in_tree == []
    assert runs["plain again"].stdout.count(CACHE_SAVED) == 0 and "[cache] index loaded" in runs["plain again"].stdout
    assert runs["feature again"].stdout.count(CACHE_SAVED) == 0
    apart = list((root / "repeats-model" / "__pycache__").glob("pbmt-numba-*/*/*.nbi"))
    assert apart and all(module.encode() in p.read_bytes() or "repeats" in p.name for p in apart)
    assert (root / "again.plain.en").read_text() == (root / "sample.plain.en").read_text()
    assert (root / "again.en").read_text() == (root / "sample.en").read_text()


def test_mert_and_pro_tune_the_feature_and_the_tuned_model_loads(guide):
    root, runs = guide
    for out in ("tuned-mert", "tuned-pro"):
        weights = (root / out / "moses.ini").read_text()
        assert "\nRepeatedWords name=Repeats0\n" in weights and re.search(r"\nRepeats0= \S+\n", weights)
        assert f'modules = ["{(root / "repeats-model" / "repeats.py").resolve()}"]' in (root / out / "pbmt.toml").read_text()
    mert = (root / "tuned-mert" / "moses.ini").read_text()
    assert "Repeats0= -0.5\n" not in mert  # MERT moved it
    assert len((root / "sample.tuned.en").read_text().splitlines()) == 50


def test_explain_shows_the_feature_in_every_block_and_the_total(guide):
    root, runs = guide
    command = next(c for c in runs if c.startswith("pbmt explain"))
    printed = re.sub(r"\n {6}", " ", runs[command].stdout)  # a block's values on its own line
    shown = next(b for b in _blocks("text") if b.startswith("BEST DERIVATION"))
    for line in shown.splitlines():
        parts = line.split(" ... ")
        assert any(all(part in out for part in parts) and out.startswith(parts[0]) for out in printed.splitlines()), line
    assert "Repeats0" in (root / "explain.html").read_text(encoding="utf-8")


def test_mistakes_are_the_one_line_errors_the_guide_shows(guide, tmp_path):
    root, _ = guide
    unknown, broken = (b.strip() for b in _blocks("text") if b.startswith("repeats-model/"))
    folder = _model_folder(tmp_path / "repeats-model", toml=False)
    run = subprocess.run([sys.executable, "-m", "pbmt", "translate", "-f", "repeats-model/moses.ini", "-i",
                          str(REPO / "data" / "sample.es")], cwd=tmp_path, capture_output=True, text=True)
    head, tail = unknown.split(" ... ")
    message = run.stderr.strip().splitlines()[-1]
    assert run.returncode == 1 and head in message and message.endswith(tail)
    (folder / "pbmt.toml").write_text((REPO / "data" / "model" / "pbmt.toml").read_text() + "\n" + _blocks("toml")[0])
    typo = re.search(r"repeats\.py:(\d+): ImportError: cannot import name '(\w+)'", broken)
    lines = EXAMPLE.read_text().splitlines()
    line = int(typo.group(1))
    assert "register_kernels" in lines[line - 1]
    lines[line - 1] = lines[line - 1].replace("register_kernels", typo.group(2))
    (folder / "repeats.py").unlink()
    (folder / "repeats.py").write_text("\n".join(lines) + "\n")
    run = subprocess.run([sys.executable, "-m", "pbmt", "translate", "-f", "repeats-model/moses.ini", "-i",
                          str(REPO / "data" / "sample.es")], cwd=tmp_path, capture_output=True, text=True)
    message = run.stderr.strip().splitlines()[-1]
    assert run.returncode == 1 and broken.split(" (")[0] in message, message


def test_the_servers_page_has_the_features_slider_and_column(guide):
    from commands.test_serve import Server, _chromium_page, _open_page

    root, runs = guide
    server = Server(root / "repeats-model")
    try:
        explained = server.post("/explain", {"sentence": SENTENCE}).json()
        assert [f["label"] for f in explained["features"]][-1] == "Repeats0"
        text = server.post("/translate", {"sentences": [SENTENCE]}).json()["translations"][0]["text"]
        with _chromium_page(1400, 1000) as (page, errors):
            _open_page(page, server.url)
            assert page.locator("#weights input[data-label='Repeats0']").count() == 1
            page.fill("#source", SENTENCE)
            page.click("#go")
            page.wait_for_function("document.body.dataset.version === '2'", timeout=60_000)
            assert page.inner_text("#translation") == text
            assert "Repeats0" in page.locator("#derivation tr").first.inner_text()
        assert errors == []
    finally:
        server.stop()

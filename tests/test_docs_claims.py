"""What the docs say the code prints or defaults to, checked against the code (the embedded model, the
defaults' one definition), so a doc whose claim goes stale fails here rather than misleading a reader."""

from __future__ import annotations

import gzip
import json
import re
import contextlib
import io
from pathlib import Path

import pytest

import pbmt
from pbmt.model.model import SearchSettings
from repo_data import data_lines

DOCS = Path(__file__).resolve().parents[1] / "docs"


@pytest.fixture(scope="module")
def model() -> pbmt.Model:
    return pbmt.load()


def test_serve_md_example_answer_is_what_the_embedded_model_gives(model):
    text = (DOCS / "serve.md").read_text(encoding="utf-8")
    section = text[text.index("### `POST /translate`"):]
    request = json.loads(re.search(r"-d '(\{.*?\})'", section, re.S).group(1))
    answer = json.loads(re.search(r"```json\n(.*?)```", section, re.S).group(1))
    got = model.translate(request["sentences"])
    assert [t["text"] for t in answer["translations"]] == [t.text for t in got]
    assert [t["alignment"] for t in answer["translations"]] == [[list(a) for a in t.alignment] for t in got]


def test_tutorial_states_the_decoders_defaults():
    text = " ".join((DOCS / "tutorial.md").read_text(encoding="utf-8").split())
    d = SearchSettings()
    assert d.search == "cube" and "The search is cube pruning" in text
    assert (f"a pop limit of {d.pop_limit} hypotheses per stack, stacks of {d.stack_size} hypotheses, distortion "
            f"limit {d.distortion_limit}, {d.table_limit} options per phrase") in text


def test_tutorial_quotes_the_embedded_models_first_test_translation(model):
    text = " ".join((DOCS / "tutorial.md").read_text(encoding="utf-8").split())
    quoted = re.search(r'"En el primer tratado, oh Teófilo" comes out as "([^"]+)"', text).group(1)
    assert model.translate(data_lines("test.es")[0]).text.startswith(quoted)


def _flat(name: str) -> str:
    path = DOCS.parent / name if name == "README.md" or name.startswith("data/") else DOCS / name
    return " ".join(path.read_text(encoding="utf-8").split())


def _defaults(verb: str) -> dict:
    """``pbmt VERB``'s parser defaults, by destination."""
    from pbmt.commands.cli import build_parser

    parser = build_parser().verb_parsers[verb]
    return {a.dest: a.default for a in parser._actions}


def test_readme_states_the_searchs_and_the_servers_defaults():
    readme, d = _flat("README.md"), SearchSettings()
    beam = f"{d.beam_threshold:.0e}".replace("e-0", "e-")
    assert (f"cube pruning (pop limit {d.pop_limit}, Moses's `-search-algorithm 1`) or stack decoding (`--search "
            f"stack`) with Moses's settings (stack {d.stack_size}, beam threshold {beam}, table limit "
            f"{d.table_limit}, distortion limit {d.distortion_limit}") in readme
    translate, serve = _defaults("translate"), _defaults("serve")
    assert f"`--max-words` words (default {translate['max_words']})" in readme
    assert (f"more than `--max-sentences` ({serve['max_sentences']}) sentences in a request, or a sentence of more "
            f"than `--max-words` ({serve['max_words']}) tokens") in readme
    assert f"overflow the `--max-queue` ({serve['max_queue']})" in readme


def test_the_tutorial_and_readme_state_the_tuners_defaults():
    from pbmt.commands.cli import main

    def help_of(*argv):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
            main(["tune", *argv, "--help"])
        return " ".join(out.getvalue().split())

    pro, mert = help_of("--algorithm", "pro"), help_of("--algorithm", "mert")
    tutorial, readme = _flat("tutorial.md"), _flat("README.md")
    assert "default: PRO 0.1," in pro and "(`--interpolation 0.1`)" in tutorial
    assert "(default: PRO bleu+1-unclipped," in pro and "(`--gain bleu+1-unclipped`)" in tutorial
    assert "--keep-signs, --no-keep-signs" in mert and "(default: True)" in mert.split("--keep-signs, --no-keep-signs")[1]
    assert "(`--keep-signs`, the default)" in tutorial
    interpolation, small = re.search(r"MERT 1, none, but ([\d.]+) in the MON/SWAP space and on a dev set of fewer "
                                     r"than (\d+) sentences", mert).groups()
    assert (f"`--interpolation {interpolation}`, by default in the MON/SWAP space and on a dev set under {small} "
            "sentences") in readme
    assert f"(`--interpolation {interpolation}`, the default below {small} dev sentences and in the MON/SWAP space)" \
        in tutorial


def test_the_embedded_models_phrase_count_is_what_data_readme_and_the_tutorial_say():
    pairs = gzip.decompress((DOCS.parent / "data" / "model" / "phrase-table.gz").read_bytes()).count(b"\n")
    assert f"`model/phrase-table.gz` | {pairs:,} phrase pairs" in _flat("data/README.md")
    assert f"extracted and {pairs:,} written" in _flat("tutorial.md")


def test_every_guide_says_how_much_its_results_vary():
    """The tutorial says it where each result is quoted; every guide with results in a section of its own."""
    without = [doc.name for doc in sorted(DOCS.glob("*.md")) if doc.name not in ("reference.md", "architecture.md",
                                                                                   "tutorial.md")
               and "\n## How much these results vary\n" not in doc.read_text(encoding="utf-8")]
    assert not without, f"no 'How much these results vary' section in {', '.join(without)}"
    assert "How much your run will differ from ours" in _flat("tutorial.md")


def test_readmes_pbmt_toml_makes_plain_text_a_moses_models_tokens(bible, tmp_path):
    """README's 'A Moses model of your own': its pbmt.toml beside the shared Moses model (lowercased, tokenised,
    none of its own; the ini's relative paths made absolute) makes plain text the tokens Moses's tokeniser and
    lowercasing make, and its output detokenised."""
    from pbmt.base.text import TextForm

    readme = (DOCS.parent / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## A Moses model of your own"):readme.index("## Errors, outputs")]
    (tmp_path / "pbmt.toml").write_text(re.search(r"```toml\n(.*?)```", section, re.S).group(1), encoding="utf-8")
    folder = bible / "model"
    ini = re.sub(r"path=(\S+)", lambda m: f"path={(folder / m[1]).resolve()}",
                 (folder / "moses.ini").read_text(encoding="utf-8"))
    (tmp_path / "moses.ini").write_text(ini, encoding="utf-8")
    plain, moses = pbmt.load(tmp_path / "moses.ini"), pbmt.load(folder / "moses.ini")
    form = TextForm("es", True, "lowercase")
    for line in data_lines("dev.es")[:3] + ["Josué habló al pueblo."]:
        tokens = form.tokens(line)
        assert tokens != line.split()
        got, expected = plain.translate(line, n_best=1), moses.translate(" ".join(tokens), tokenized=True, n_best=1)
        assert [token.lower() for token in got.source_tokens] == tokens  # source_tokens: in their own casing
        assert got.nbest[0].tokens == expected.nbest[0].tokens
        assert got.text != expected.text and " ".join(got.text.lower().split()) != expected.text



def test_plain_text_given_to_a_moses_model_through_the_api_is_a_warning_once(bible, recwarn):
    """README: without a pbmt.toml the Python API takes plain text as tokens, as Moses does, and warns (once per
    model) naming the first item not in the model's token form; text in that form says nothing."""
    model = pbmt.load(bible / "model" / "moses.ini")
    model.translate(["dios es amor .", "y josué habló al pueblo ."])
    assert not recwarn.list
    with pytest.warns(UserWarning, match=r"^text\[1\]: 'Josué' is known to the model only as 'josué'; 2 of 3 lines "
                                         r"are not in the model's token form \(.*pbmt tokenize --language L"):
        model.translate(["dios es amor .", "Josué habló al pueblo.", "Dios es amor."])
    model.translate("Josué habló al pueblo.")  # once: pytest.warns took the first, nothing comes now
    assert not recwarn.list

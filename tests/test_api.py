"""The Python API of docs/python-api.md, one test per documented call, on the embedded model (no ../shared).

References: sacrebleu for BLEU, a from-scratch weights · features rescoring for every score, the explain
search for the translate search, and README's example run as written.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest
import sacrebleu

import pbmt
import pbmt.tune.loop
from pbmt.tune.samplerank import SampleRank
from pbmt.base.errors import PbmtError, UsageError

REPO = Path(__file__).resolve().parents[1]
SENTENCES = ["Dios es amor.", "Josué habló al pueblo.", "En el principio creó Dios los cielos y la tierra."]


@pytest.fixture(scope="module")
def model() -> pbmt.Model:
    return pbmt.load()


def weighted(model: pbmt.Model, features: dict[str, tuple[float, ...]]) -> float:
    return float(sum(np.dot(model.weights[name], values) for name, values in features.items()))


def test_the_package_exports_the_api_lazily_and_typed():
    assert set(pbmt.__all__) <= set(dir(pbmt))
    assert pbmt.load is pbmt.api.load and pbmt.Model is pbmt.api.Model
    assert (REPO / "pbmt" / "py.typed").is_file() and (REPO / "pbmt" / "__init__.pyi").is_file()
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        pbmt.nothing  # noqa: B018


def test_a_models_repr_says_the_weights_that_differ_from_its_files(model):
    """A tuned model (``Tuning.model``) and ``with_weights`` models printed as the untuned model did."""
    path = str(pbmt.DEFAULT_MODEL)
    assert repr(model) == f"pbmt.Model({path!r}, search='cube')"
    assert repr(pbmt.load(weights={"LM0": 0.5})) == repr(model)  # the file's own weight
    other = model.with_weights({"LM0": 0.25, "TranslationModel0": [0.1, 0.2, 0.3, 0.4]})
    assert repr(other) == (f"pbmt.Model({path!r}, search='cube', weights={{'TranslationModel0': [0.1, 0.2, 0.3, "
                           "0.4], 'LM0': 0.25})")
    # the arguments that load it again
    assert pbmt.load(path, weights={'TranslationModel0': [0.1, 0.2, 0.3, 0.4], 'LM0': 0.25}).weights == other.weights


def test_load_takes_weights_search_and_settings(model, tmp_path):
    assert model.settings.search == "cube" and model.weights["LM0"] == (0.5,)
    stack = pbmt.load(pbmt.DEFAULT_MODEL, search="stack", stack_size=50, weights={"LM0": 0.25})
    assert (stack.settings.search, stack.settings.stack_size, stack.weights["LM0"]) == ("stack", 50, (0.25,))
    assert pbmt.load(weights="LM0= 0.25 WordPenalty0= -2").weights["WordPenalty0"] == (-2.0,)
    (tmp_path / "weights.ini").write_text("[weight]\nLM0= 0.75\n")
    assert pbmt.load(weights=tmp_path / "weights.ini").weights["LM0"] == (0.75,)
    with pytest.raises(UsageError, match="unknown search setting stack"):
        pbmt.load(stack=10)
    for setting, value in (("stack_size", -3), ("beam_threshold", 2.0), ("pop_limit", -1)):
        with pytest.raises(UsageError, match=rf"^{setting} \(--"):  # the API's name first, then the option's
            pbmt.load(**{setting: value})
    with pytest.raises(PbmtError, match="no such model configuration"):
        pbmt.load(tmp_path / "missing.ini")
    with pytest.raises(PbmtError, match="no feature named 'LM9'"):
        pbmt.load(weights={"LM9": 1.0})
    with pytest.raises(UsageError, match=r"weights 'LM0 0.5' is no file, nor weights as text: 'LM0= 0.5"):
        pbmt.load(weights="LM0 0.5")  # Moses's weight lines have an '=' after each name
    moses = " ".join(f"TranslationModel0 {i / 10}" for i in range(40))  # longer than a file name may be
    with pytest.raises(UsageError, match=r"weights 'TranslationModel0 0.0 .*' is no file, nor weights as text"):
        pbmt.load(weights=moses)
    for value in ("x", [[0.5]], {"a": 1}):  # numpy's ValueError or TypeError before
        with pytest.raises(UsageError, match=rf"^weights: LM0's value .* is not a number nor a list of numbers"):
            pbmt.load(weights={"LM0": value})
    assert pbmt.load(weights={"LM0": [0.25], "WordPenalty0": -2}).weights["LM0"] == (0.25,)


def test_translate_one_sentence_gives_text_score_and_alignment(model):
    t = model.translate(SENTENCES[0])
    assert isinstance(t, pbmt.Translation) and str(t) == t.text == "God is love."
    assert t.source_tokens == ("Dios", "es", "amor", ".") and t.nbest == ()
    assert t.score == pytest.approx(weighted(model, t.best.features))
    assert all(0 <= s < len(t.source_tokens) and 0 <= w < len(t.best.tokens) for s, w in t.alignment)


def test_translate_a_list_equals_each_sentence_alone(model):
    together = model.translate(SENTENCES)
    assert [t.text for t in together] == [model.translate(s).text for s in SENTENCES]
    assert model.translate([]) == []
    with pytest.raises(UsageError, match=r"text\[1\] is a int"):  # the item by its index
        model.translate(["Dios es amor.", 3])
    for wrong in (b"Dios es amor.", None, 3):
        with pytest.raises(UsageError, match=f"text must be a str or a list of str, got a {type(wrong).__name__}"):
            model.translate(wrong)


def test_n_best_lists_are_detokenised_text_with_scores_and_alignments(model):
    t = model.translate(SENTENCES[2], n_best=5)
    assert len(t.nbest) == 5 and t.nbest[0].text == t.text and t.nbest[0].score == t.score
    scores = [entry.score for entry in t.nbest]
    assert scores == sorted(scores, reverse=True)
    for entry in t.nbest:
        assert entry.score == pytest.approx(weighted(model, entry.features))
        assert entry.text[0].isupper() and " ." not in entry.text  # detruecased and detokenised
        assert sum(b[3] - b[2] for b in entry.segmentation) == len(entry.tokens)
        assert {s for s, _ in entry.alignment} <= set(range(len(t.source_tokens)))
    distinct = model.translate(SENTENCES[2], n_best=5, distinct=True)
    assert len({entry.text for entry in distinct.nbest}) == 5
    with pytest.raises(UsageError, match="n_best"):
        model.translate(SENTENCES[0], n_best=-1)


def test_tokenized_input_and_output_stay_in_the_model_tokens(model):
    t = model.translate("dios es amor .", tokenized=True, n_best=1)
    assert t.text == " ".join(t.nbest[0].tokens) == "God is love ."


def test_markup_is_read_as_translate_xml_input_reads_it(model, tmp_path, capsys):
    """The reference is the command line's output for the same line and modes."""
    from pbmt.commands.cli import main

    line = 'mi siervo moisés es <n translation="deceased">muerto</n> , "la casa" .'
    (tmp_path / "in.es").write_text(line + "\n", encoding="utf-8")
    for mode, zones in [("exclusive", True), ("pass-through", True), ("exclusive", False)]:
        assert main(["translate", "-q", "-i", str(tmp_path / "in.es"), "-o", str(tmp_path / "out"), "--xml-input",
                     mode] + ([] if zones else ["--no-quote-zones"])) == 0
        text = model.translate(line, xml_input=mode, quote_zones=zones).text
        assert text + "\n" == (tmp_path / "out").read_text(encoding="utf-8")
        words = re.sub(r"<[^>]*>", " ", text)  # pass-through keeps the tag, attribute and all
        assert bool(re.search(r"\bdeceased\b", words)) == (mode == "exclusive"), text
        explained = re.sub(r"<[^>]*>", " ", str(model.explain(line, xml_input=mode, quote_zones=zones)))
        assert bool(re.search(r"\bdeceased\b", explained)) == (mode == "exclusive")

def test_with_weights_rescores_and_can_change_the_translation(model):
    heavy = model.with_weights({"WordPenalty0": -3.0})  # -1 per word: a bonus for length
    t = heavy.translate(SENTENCES[2], n_best=2)
    assert t.score == pytest.approx(weighted(heavy, t.best.features))
    assert len(t.best.tokens) > len(model.translate(SENTENCES[2], n_best=1).best.tokens)


def test_explain_shows_the_search_of_one_sentence(model):
    e = model.explain(SENTENCES[0], n_best=3)
    assert e.score == pytest.approx(model.translate(SENTENCES[0]).score)
    assert e.data["source"] == ["Dios", "es", "amor", "."] and len(e.data["nbest"]) == 3
    assert str(e).startswith("SOURCE") and "BEST DERIVATION" in e.text
    assert e.html.startswith("<!DOCTYPE html>") and "Word alignment" in e.html
    with pytest.raises(PbmtError, match="empty"):
        model.explain("  ")
    for wrong in ({"n_best": 0}, {"options_per_span": 0}, {"n_best": 2.5}):
        with pytest.raises(UsageError, match=f"{next(iter(wrong))} must be an integer of at least 1"):
            model.explain(SENTENCES[0], **wrong)


def test_explanation_json_keys_are_snake_case(model):
    def keys(value):
        if isinstance(value, dict):
            for key, item in value.items():
                yield key
                yield from keys(item)
        elif isinstance(value, list):
            for item in value:
                yield from keys(item)

    found = set(keys(model.explain(SENTENCES[0]).data))
    assert {"beam_rejected", "beam_pruned", "histogram_pruned"} <= found
    assert all(re.fullmatch(r"[a-z0-9_]+", key) for key in found), sorted(found)


def test_translation_and_explanation_show_themselves_in_jupyter(model):
    shown = model.translate(SENTENCES[0], n_best=2)._repr_html_()
    assert shown.startswith("<iframe srcdoc=") and "God is love." in shown and "class=&#x27;grid&#x27;" in shown
    assert model.explain(SENTENCES[0])._repr_html_().startswith("<iframe srcdoc=")


def test_evaluate_equals_sacrebleu():
    hyps = ["The cat sat on the mat.", "God is love, he said."]
    refs_a = ["The cat sat on a mat.", "God is love."]
    refs_b = ["A cat was on the mat.", "He said: God is love."]
    assert pbmt.evaluate(hyps, refs_a).score == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs_a]).score)
    both = pbmt.evaluate(hyps, [refs_a, refs_b], lowercase=True)
    expected = sacrebleu.corpus_bleu(hyps, [refs_a, refs_b], lowercase=True)
    assert both.score == pytest.approx(expected.score) and str(both) == str(expected)
    assert both.precisions == pytest.approx(expected.precisions) and both.ref_len == expected.ref_len
    tokenized = pbmt.evaluate(["a b c d"], ["a b c d"], tokenized=True)
    assert tokenized.score == pytest.approx(100.0) and tokenized.hyp_len == 4
    with pytest.raises(PbmtError, match="2 hypotheses but a reference stream of 1 lines"):
        pbmt.evaluate(hyps, ["one"])
    # a str is one line, not a list of its characters
    with pytest.raises(UsageError, match="hypotheses must be a list of lines, got a str"):
        pbmt.evaluate("a b c d", ["a b c d"])
    with pytest.raises(UsageError, match="references must be a list of lines, got a str"):
        pbmt.evaluate(["a b c d"], "a b c d")


def test_model_evaluate_translates_then_scores(model):
    sources = (REPO / "data" / "sample.es").read_text().splitlines()[:4]
    refs = (REPO / "data" / "sample.ref.en").read_text().splitlines()[:4]
    outputs = [t.text for t in model.translate(sources)]
    assert model.evaluate(sources, refs).score == pytest.approx(sacrebleu.corpus_bleu(outputs, [refs]).score)


def test_readme_python_example_runs_as_written(monkeypatch):
    readme = (REPO / "README.md").read_text()
    example = re.search(r"## Python\n.*?```python\n(.*?)```", readme, re.S).group(1)
    monkeypatch.chdir(REPO)
    printed = []
    exec(compile(example, "README.md", "exec"), {"print": lambda *a, **k: printed.append(" ".join(map(str, a)))})
    assert printed and all(line.strip() for line in printed)
    assert os.getcwd() == str(REPO)


def test_complete_begins_with_the_prefix_and_force_gives_the_reference(model):
    sentence = SENTENCES[2]
    plain = model.translate(sentence, tokenized=False)
    start = plain.best.tokens
    done = model.complete(sentence, " ".join(start[:2]) + " " + start[2][:2], n_best=3)
    assert done.text and not done.unreachable and 1 <= len(done.nbest) <= 3
    for entry in done.nbest:
        assert entry.tokens[:2] == start[:2] and entry.tokens[2].startswith(start[2][:2])
        assert entry.score == pytest.approx(weighted(model, entry.features), abs=1e-6)
    assert model.complete(sentence, "").text == plain.text
    assert "'zebra' (word 1)" in model.complete(sentence, "zebra ").unreachable
    # forcing the 1-best translation finds it, at its score or better (the search is exact)
    forced = model.force(sentence, " ".join(start), tokenized=False, n_best=2)
    assert forced.best.tokens == start and forced.score >= plain.score - 1e-9 and not forced.unreachable
    assert model.force(sentence, "zebra").unreachable
    with pytest.raises(UsageError, match="prefix is a int"):
        model.complete(sentence, 3)


def test_tune_runs_the_mert_loop_and_returns_the_tuned_model(tiny_model_dir, tiny_dev, tmp_path, monkeypatch):
    tiny = pbmt.load(tiny_model_dir / "moses.ini")
    sources, refs = ((tiny_dev / name).read_text().splitlines() for name in ("dev.src", "dev.ref"))
    threads = []
    decoder = pbmt.tune.loop.DevDecoder

    def counting(*args, **kwargs):
        threads.append(kwargs["threads"])
        return decoder(*args, **kwargs)

    monkeypatch.setattr(pbmt.tune.loop, "DevDecoder", counting)
    run = tiny.tune(sources, refs, tokenized=True, iterations=2, n_best=20, out=tmp_path / "mert", progress=False,
                    threads=3)
    assert threads == [3]  # the dev set decodes on the threads asked for
    assert isinstance(run, pbmt.Tuning) and 1 <= len(run.dev_bleu) <= 2 and run.stop_reason
    assert run.model.weights == pbmt.load(tmp_path / "mert" / "moses.ini").weights != tiny.weights
    assert run.model.sparse_weights == {}  # a model without sparse features
    rows = (tmp_path / "mert" / "log.tsv").read_text().splitlines()[1:]
    assert [float(row.split("\t")[2]) for row in rows] == pytest.approx(list(run.dev_bleu), abs=1e-4)
    assert "data:image/png;base64," in run._repr_html_()
    assert not (tmp_path / "mert" / ".pbmt-lock").exists()  # the run folder's lock ends with the run
    with pytest.raises(PbmtError, match="wrong way round"):
        tiny.tune(refs, sources, tokenized=True, iterations=1, out=tmp_path / "swapped", progress=False)
    with pytest.raises(UsageError, match="algorithm must be"):
        tiny.tune(sources, refs, algorithm="samplerank")
    with pytest.raises(UsageError, match="threads must be an integer of at least 1, got 0"):
        tiny.tune(sources, refs, threads=0)


def _doc_tuner():
    """The tuner class docs/writing-a-tuner.md writes, run as the guide gives it."""
    guide = (REPO / "docs" / "writing-a-tuner.md").read_text(encoding="utf-8")
    namespace: dict = {}
    exec(re.search(r"```python\n(.*?)```", guide, re.S).group(1), namespace)
    return namespace["RandomSearch"]


def test_tune_runs_a_tuner_object_of_ones_own(tiny_model_dir, tiny_dev, tmp_path):
    tiny = pbmt.load(tiny_model_dir / "moses.ini")
    sources, refs = ((tiny_dev / name).read_text().splitlines() for name in ("dev.src", "dev.ref"))
    tuner = _doc_tuner()(tries=30)
    run = tiny.tune(sources, refs, algorithm=tuner, tokenized=True, iterations=2, n_best=20,
                    out=tmp_path / "random", progress=False)
    assert 1 <= len(run.dev_bleu) <= 2 and tuner.weights_.shape == (sum(map(len, tiny.weights.values())),)
    rows = (tmp_path / "random" / "log.tsv").read_text().splitlines()[1:]
    assert len(rows) == len(run.dev_bleu)  # the loop fitted the object given on each iteration's pool
    assert run.model.weights == pbmt.load(tmp_path / "random" / "moses.ini").weights
    with pytest.raises(UsageError, match="SampleRank is a tuner of the sampler loop"):
        tiny.tune(sources, refs, algorithm=SampleRank(), tokenized=True)


@pytest.mark.parametrize("algorithm", ["mira", "pro"])
def test_tune_tunes_a_models_sparse_features_and_its_folder_loads_as_the_tuned_model(algorithm, sparse_model_dir,
                                                                                     tiny_dev, tmp_path):
    model = pbmt.load(sparse_model_dir / "moses.ini")
    sources, refs = ((tiny_dev / name).read_text().splitlines() for name in ("dev.src", "dev.ref"))
    run = model.tune(sources, refs, algorithm=algorithm, tokenized=True, iterations=2, n_best=20,
                     out=tmp_path / algorithm, progress=False)
    assert run.model.sparse_weights and run.model.sparse_weights != model.sparse_weights  # the sparse weights moved
    # the folder is the tuned model: the same dense and sparse weights, the same translations
    again = pbmt.load(tmp_path / algorithm / "moses.ini")
    assert again.weights == run.model.weights and again.sparse_weights == pytest.approx(run.model.sparse_weights)
    assert [t.text for t in again.translate(sources, tokenized=True)] == \
        [t.text for t in run.model.translate(sources, tokenized=True)]

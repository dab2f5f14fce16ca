"""``explain --reference``: the reference's path through the stacks and where it fell out, on the tiny model."""

import dataclasses

import pytest

from pbmt.commands.cli import main
from pbmt.search.explain import BEAM, HISTOGRAM, explain, hypothesis_table, reference_path
from pbmt.model.model import SearchSettings, TranslationModel
from pbmt.search.decoder import decode
from pbmt.search.options import TranslationOptions

from support import TINY_SOURCES


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    return TranslationModel.load(tiny_model_dir / "moses.ini")


def exhaustive_best(model, words):
    """The best translation of an unpruned search: a reference every pruned search should find."""
    options = TranslationOptions.of_words(model, words)
    settings = dataclasses.replace(model.settings, stack_size=10**6, beam_threshold=0.0, search="stack")
    best = decode(model, options, settings=settings)[0]
    return options.vocab.words(best.derivation.target_words(options)), best.score


def test_the_reference_path_follows_the_graph_and_names_where_it_fell_out(tiny):
    model = dataclasses.replace(tiny, settings=SearchSettings(distortion_limit=2, stack_size=1, search="stack"))
    fell = 0
    for source in TINY_SOURCES:
        words = source.split()
        reference, score = exhaustive_best(model, words)
        e = explain(model, words)
        table = hypothesis_table(e)
        where = reference_path(e, model, reference)
        assert where["score"] == pytest.approx(score, abs=1e-6)
        assert where["verdict"] == ("correct" if e.best.score >= score - 1e-6 else "search error")
        stacks = [0] + [step["stack"] for step in where["path"]]
        assert stacks == sorted(stacks) and len(set(stacks)) == len(stacks)
        for step in where["path"]:
            h = step["hypothesis"]
            assert e.options.target(int(e.graph.option[h])).size and table.stack[h] == step["stack"]
        if where["fell_out"] is None:
            assert stacks[-1] == len(words)
        else:
            fell += 1
            rep = where["fell_out"]["hypothesis"]
            rule = where["fell_out"]["rule"]
            if rule == "stack size":
                assert table.status[rep] == HISTOGRAM and where["fell_out"]["stack"] == table.stack[rep]
            elif table.status[rep] == BEAM:
                assert rule == "beam threshold"
            assert where["verdict"] == "search error"
    assert fell  # a stack of one loses some


def test_without_pruning_every_reachable_reference_reaches_the_last_stack(tiny):
    model = dataclasses.replace(tiny, settings=SearchSettings(distortion_limit=2, stack_size=10**6,
                                                              beam_threshold=0.0, search="stack"))
    for source in TINY_SOURCES:
        words = source.split()
        e = explain(model, words, n_best=4)
        for entry in e.nbest:
            where = reference_path(e, model, e.options.vocab.words(entry.derivation.target_words(e.options)))
            assert where["fell_out"] is None and where["verdict"] in ("correct", "model error")
    where = reference_path(explain(model, ["a"]), model, ["zebra"])
    assert where["verdict"] == "unreachable" and "zebra" in where["why"]


def test_explain_reference_from_the_command_line(tiny_model_dir, capsys):
    assert main(["explain", "-f", str(tiny_model_dir / "moses.ini"), "--tokenized", "e d c b a", "--stack", "1",
                 "--search", "stack", "--reference", "the lord"]) == 0
    out = capsys.readouterr().out
    assert "THE REFERENCE: the lord" in out

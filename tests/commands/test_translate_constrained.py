"""``pbmt translate --constraint``: forced decoding from the command line."""

from pbmt.commands.cli import main
from pbmt.base.nbest import read_nbest


def test_forced_translations_are_the_references_with_their_derivations(tiny_model_dir, tiny_dev, tmp_path, capsys):
    refs = (tiny_dev / "dev.ref").read_text().splitlines()
    code = main(["translate", "--tokenized", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(tiny_dev / "dev.src"),
                 "--constraint", str(tiny_dev / "dev.ref"), "-o", str(tmp_path / "out"),
                 "--n-best", str(tmp_path / "nbest"), "--n-best-size", "3", "--alignment", str(tmp_path / "align")])
    assert code == 0
    assert (tmp_path / "out").read_text().splitlines() == refs
    entries = list(read_nbest(tmp_path / "nbest"))
    assert {e.sentence for e in entries} == set(range(len(refs)))
    for e in entries:
        assert e.text == refs[e.sentence] and e.segmentation and e.alignment
    for k in range(len(refs)):
        totals = [e.total for e in entries if e.sentence == k]
        assert totals == sorted(totals, reverse=True)
    assert f"reached {len(refs)} of {len(refs)} references" in capsys.readouterr().err


def test_an_unreachable_reference_gives_an_empty_line_and_why(tiny_model_dir, tmp_path, capsys):
    (tmp_path / "src").write_text("a b\nc\n")
    (tmp_path / "refs").write_text("the zebra\nc\n")
    assert main(["translate", "--tokenized", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(tmp_path / "src"),
                 "--constraint", str(tmp_path / "refs"), "-o", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out").read_text() == "\n\n"
    err = capsys.readouterr().err
    assert "line 1: no translation produces the reference" in err and "'zebra' (word 2)" in err
    assert "line 2: no translation produces the reference" in err
    assert "reached 0 of 2 references" in err


def test_a_constraint_file_of_another_length_is_an_error_naming_both(tiny_model_dir, tmp_path, capsys):
    (tmp_path / "src").write_text("a b\nc\n")
    (tmp_path / "refs").write_text("the\n")
    assert main(["translate", "-q", "--tokenized", "-f", str(tiny_model_dir / "moses.ini"), "-i",
                 str(tmp_path / "src"), "--constraint", str(tmp_path / "refs"), "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert f"{tmp_path / 'refs'} has 1 line but the input {tmp_path / 'src'} has 2" in err
    assert not (tmp_path / "out").exists()


def test_prefix_completions_begin_with_the_prefix(tiny_model_dir, tiny_dev, tmp_path, capsys):
    refs = (tiny_dev / "dev.ref").read_text().splitlines()
    # the first word, a word and a half, and nothing
    prefixes = [" ".join(r.split()[:1]) + " " for r in refs[:3]]
    prefixes += [" ".join(r.split()[:1] + [r.split()[1][:1]]) if len(r.split()) > 1 else r for r in refs[3:6]]
    prefixes += [""] * (len(refs) - 6)
    (tmp_path / "prefixes").write_text("\n".join(prefixes) + "\n")
    ini = str(tiny_model_dir / "moses.ini")
    assert main(["translate", "--tokenized", "-f", ini, "-i", str(tiny_dev / "dev.src"), "--prefix",
                 str(tmp_path / "prefixes"), "-o", str(tmp_path / "out"), "--n-best", str(tmp_path / "nbest"),
                 "--n-best-size", "3"]) == 0
    out = (tmp_path / "out").read_text().splitlines()
    for line, prefix in zip(out, prefixes):
        assert line.startswith(prefix.strip()), (line, prefix)
    for e in read_nbest(tmp_path / "nbest"):
        assert e.text.startswith(prefixes[e.sentence].strip())
    assert f"completed {len(refs)} of {len(refs)} prefixes" in capsys.readouterr().err
    # an empty prefix is plain translation
    assert main(["translate", "-q", "--tokenized", "-f", ini, "-i", str(tiny_dev / "dev.src"), "-o",
                 str(tmp_path / "plain")]) == 0
    assert (tmp_path / "plain").read_text().splitlines()[6:] == out[6:]


def test_constraint_and_prefix_exclude_each_other(tiny_model_dir, tmp_path, capsys):
    (tmp_path / "src").write_text("a\n")
    assert main(["translate", "-q", "-f", str(tiny_model_dir / "moses.ini"), "-i", str(tmp_path / "src"),
                 "--constraint", str(tmp_path / "src"), "--prefix", str(tmp_path / "src")]) == 1
    assert "exclude each other" in capsys.readouterr().err


def test_completions_of_one_sentence_reuse_its_options(tiny_model_dir, tiny_dev):
    """The options of a sentence being completed are built once for its many prefixes (one a keystroke), by
    any translator of the same model; a model with other weights builds its own. Completions with kept
    options equal completions from options built afresh."""
    from pbmt.model.model import TranslationModel
    from pbmt.search.forced import prefix_decode
    from pbmt.search.options import TranslationOptions
    from pbmt.features.translation import Translator

    model = TranslationModel.load(tiny_model_dir / "moses.ini")
    line = (tiny_dev / "dev.src").read_text().splitlines()[0]
    kept = Translator(model, tokenized=True)._recent_options(line)[1]
    assert Translator(model, n_best=3, tokenized=True)._recent_options(line)[1] is kept
    other = model.with_weights(model.weights * 2)
    assert Translator(other, tokenized=True)._recent_options(line)[1] is not kept
    translator = Translator(model, n_best=3, tokenized=True)
    best = translator.translate(0, line).text.split()
    for k in range(len(best) + 1):
        prefix = " ".join(best[:k]) + (" " if k else "")
        fresh = prefix_decode(model, TranslationOptions.of_words(model, line.split()), best[:k], n_best=3)
        got = translator.complete(0, line, prefix)
        assert [e.total for e in got.nbest] == [f.score for f in fresh.found]
        assert got.text.startswith(prefix.strip())


def test_a_completion_begins_with_the_prefix_as_typed_whatever_the_source_s_first_letter(tmp_path, capsys):
    """A source starting lowercase gives a lowercase translation, but not when the prefix typed starts uppercase
    (and the other way round): the embedded model, plain text."""
    (tmp_path / "in.es").write_text("y dijo Dios: Sea la luz.\nY dijo Dios: Sea la luz.\n", encoding="utf-8")
    (tmp_path / "prefixes.en").write_text("And\nand God\n", encoding="utf-8")
    assert main(["translate", "-q", "-i", str(tmp_path / "in.es"), "--prefix", str(tmp_path / "prefixes.en")]) == 0
    first, second = capsys.readouterr().out.splitlines()
    assert first.startswith("And God said") and second.startswith("and God said")
    assert main(["translate", "-q", "-i", str(tmp_path / "in.es")]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == ["and", "And"]


def test_a_prefix_may_end_inside_a_token_the_tokeniser_cuts_while_it_is_unfinished(tmp_path, capsys):
    """``10:`` of ``10:30``, ``http:`` of a URL, ``<b`` of ``<b>``, ``{nom`` of ``{nombre}``: the tokeniser cuts
    them (``10`` ``:``), so the prefix read as the whole word ``10`` then an unfinished ``:`` and nothing
    began with it; the embedded model, plain text."""
    sources = ["La reunión es a las 10:30.", "Visite http://ejemplo.org/a hoy.", "Dios es <b>amor</b>.",
               "Dios es {nombre}.", "Dios es amor."]
    prefixes = ["The congregation is a the 10:", "Visit http:", "God is <b", "God is {nom", "God i"]
    (tmp_path / "in.es").write_text("\n".join(sources) + "\n", encoding="utf-8")
    (tmp_path / "prefixes.en").write_text("\n".join(prefixes) + "\n", encoding="utf-8")
    assert main(["translate", "-q", "-i", str(tmp_path / "in.es"), "--prefix", str(tmp_path / "prefixes.en")]) == 0
    completions = capsys.readouterr().out.splitlines()
    assert [c[:len(p)] for c, p in zip(completions, prefixes)] == prefixes
    for completion, whole in zip(completions, ["10:30", "http://ejemplo.org/a", "<b>love</b>", "{nombre}", "is"]):
        assert whole in completion.split() or whole in completion, completion

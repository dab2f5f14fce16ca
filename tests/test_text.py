"""``pbmt.base.text`` against sacremoses (Moses's tokeniser, truecaser and detokeniser ported) on the shared Bible
texts, and the ``pbmt tokenize`` / ``pbmt detokenize`` verbs."""

import gzip

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st
from sacremoses import MosesDetokenizer, MosesDetruecaser, MosesTokenizer, MosesTruecaser

from pbmt.commands.cli import main
from pbmt.base.errors import FormatError
from pbmt.base.files import read_lines
from pbmt.base.text import TextForm, Truecaser, detruecase

N = 400


def lines(path, n=None):
    found = [line for _, line in read_lines(path)]
    return found[:n] if n else found


@pytest.fixture(scope="module")
def truecasers(repo_corpus, tmp_path_factory):
    """A truecaser of each language learnt by pbmt on the first N training lines and written to a file, with
    sacremoses's own, learnt on the same tokens."""
    folder = tmp_path_factory.mktemp("truecasers")
    found = {}
    for lang in ("es", "en"):
        tokenised = [MosesTokenizer(lang).tokenize(line, escape=False)
                     for line in lines(repo_corpus / f"train.{lang}", N)]
        Truecaser.train(tokenised).write(folder / f"truecase.{lang}.gz")
        theirs = MosesTruecaser()
        theirs.train(tokenised)
        found[lang] = (folder / f"truecase.{lang}.gz", theirs)
    return found


@pytest.mark.parametrize("lang", ["es", "en"])
def test_detokenize_of_tokenize_restores_the_lines_sacremoses_restores(repo_corpus, lang):
    tokenizer, detokenizer = MosesTokenizer(lang), MosesDetokenizer(lang)
    texts = lines(repo_corpus / f"test.{lang}")
    restorable = [x for x in texts if detokenizer.detokenize(tokenizer.tokenize(x, escape=False)) == x]
    assert len(restorable) > 0.9 * len(texts)
    form = TextForm(lang, tokenize=True)
    assert [form.text(form.tokens(x)) for x in restorable] == restorable
    # quotes stay quotes (no &quot; / &apos; escapes, which a model never sees)
    assert form.tokens('"Dijo: \'no\'"') == ['"', "Dijo", ":", "'", "no", "'", '"']


@pytest.mark.parametrize("lang", ["es", "en"])
def test_truecasing_agrees_with_sacremoses_as_truecase_perl(repo_corpus, truecasers, lang):
    path, theirs = truecasers[lang]
    form = TextForm(lang, tokenize=True, casing="truecase", truecaser=path)
    kept = 0
    for x in lines(repo_corpus / f"dev.{lang}", 200):
        words = MosesTokenizer(lang).tokenize(x, escape=False)
        for word, ours, moses in zip(words, form.tokens(x), theirs.truecase(" ".join(words), use_known=True),
                                     strict=True):
            if ours != moses:  # only where Moses would capitalise a lowercase word inside a sentence
                assert ours == word and word.islower() and moses != word
                kept += 1
    assert kept < 20
    # sacremoses reads the model file pbmt writes (Moses's format)
    plain = path.with_suffix("")
    plain.write_bytes(gzip.decompress(path.read_bytes()))
    assert MosesTruecaser(load_from=str(plain)).model["best"] == theirs.model["best"]


def test_the_truecaser_keeps_a_lowercase_word_inside_a_sentence_lowercase():
    # as in the 1909 Bible, "a" is seen capitalised only: opening a quoted question, once after a comma
    model = Truecaser.train([["dijo", ":", "¿", "A", "quién", "vino", "?"],
                             ["y", "vive", "en", "casa", "de", "Pedro"], ["y", "dijo", ",", "A", "ti", "te", "digo"]])
    assert model.truecase(["Vive", "a", "partir", "de", "hoy", "en", "casa", "de", "pedro"]) == \
        ["vive", "a", "partir", "de", "hoy", "en", "casa", "de", "pedro"]
    assert model.truecase(["A", "partir", "de", "hoy"])[0] == "A"  # the best casing, at a sentence's start
    assert model.truecase(["a", "partir", "de", "hoy", ".", "pedro", "vive"]) == \
        ["a", "partir", "de", "hoy", ".", "pedro", "vive"]  # a lowercase first word as well
    assert model.truecase(["¿", "Quién", "vino", "?", "Vino", "PEDRO", "."]) == \
        ["¿", "quién", "vino", "?", "vino", "Pedro", "."]
    assert model.truecase(["Dijo", ":", "¿", "A", "quién", "?"])[3] == "A"  # seen so: a quoted sentence's capital


def test_detruecase_capitalises_like_moses_at_the_start_and_after_a_full_stop(repo_corpus):
    checked = 0
    for line in lines(repo_corpus / "dev.tok.en"):
        words = line.split()
        if not words or not words[0][:1].isalpha() or {":", "?", "!"} & set(words):
            continue  # Moses also capitalises after these; pbmt does not (see pbmt.base.text)
        assert detruecase(words) == MosesDetruecaser().detruecase(line)
        checked += 1
    assert checked > 100
    assert detruecase(['"', "and", "he", "said", ":", "who", "?", "the", "lord", ".", "amen"]) == [
        '"', "And", "he", "said", ":", "who", "?", "the", "lord", ".", "Amen"]


def test_a_malformed_truecaser_model_names_its_line(tmp_path):
    bad = tmp_path / "truecase.en"
    bad.write_text("The (3/4) the (1)\nLord (2/2) lord\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"truecase.en:2: expected 'word \(count/total\)"):
        Truecaser.read(bad)


def test_tokenize_and_detokenize_verbs_with_a_language(tmp_path, capsys, monkeypatch):
    text = tmp_path / "in.es"
    text.write_text('"Hola, mundo," dijo Pablo.\n¿Qué?\n', encoding="utf-8")
    assert main(["tokenize", "--language", "es", "-i", str(text), "-o", str(tmp_path / "tok")]) == 0
    assert lines(tmp_path / "tok") == ['" Hola , mundo , " dijo Pablo .', "¿ Qué ?"]
    assert main(["tokenize", "--language", "es", "--lowercase", "-i", str(text)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == '" hola , mundo , " dijo pablo .'
    assert main(["detokenize", "--language", "es", "-i", str(tmp_path / "tok")]) == 0
    assert capsys.readouterr().out.splitlines() == lines(text)


def test_a_language_moses_has_no_rules_for_is_a_warning_naming_it(tmp_path, capsys):
    """Moses's scripts use English's rules for a code they do not know (a typo, ``--language sp``; Galician's
    ``train.gl``) without a word; pbmt says so, once, and goes on as Moses does."""
    text = tmp_path / "in.txt"
    text.write_text("Sr. García\n", encoding="utf-8")
    for code, warned in (("es", False), ("ko", False), ("sp", True)):
        assert main(["tokenize", "--language", code, "-i", str(text)]) == 0
        err = capsys.readouterr().err
        assert ("warning" in err) == warned and (f"language '{code}'" in err) == warned, err
    assert main(["detokenize", "--language", "sp", "-i", str(text)]) == 0
    assert capsys.readouterr().err.count("pbmt detokenize: warning: Moses's scripts have no rules for language "
                                         "'sp': English's are used") == 1


def test_a_model_that_says_nothing_of_its_form_copies_the_text_with_a_warning(tmp_path, capsys):
    """A Moses model without a pbmt.toml: -f has no form to apply, so the text goes through as it is, and the
    warning names the model and what does apply Moses's tokeniser."""
    (tmp_path / "moses.ini").write_text("[feature]\nWordPenalty\n\n[weight]\nWordPenalty0= -1\n", encoding="utf-8")
    text = tmp_path / "in.es"
    text.write_text("Y dijo: «Hola».\n", encoding="utf-8")
    for verb, out in (("tokenize", "Y dijo: «Hola»."), ("detokenize", "Y dijo: «Hola».")):
        assert main([verb, "-f", str(tmp_path / "moses.ini"), "-i", str(text)]) == 0
        got = capsys.readouterr()
        assert got.out == out + "\n"
        assert got.err.startswith(f"pbmt {verb}: warning: {tmp_path / 'moses.ini'}: no pbmt.toml beside it") \
            and "--language L" in got.err and got.err.count("\n") == 1
        assert main([verb, "-q", "-f", str(tmp_path / "moses.ini"), "-i", str(text)]) == 0
        assert capsys.readouterr() == (out + "\n", "")  # -q: errors only
    (tmp_path / "pbmt.toml").write_text('[preprocess]\ntokenize = true\nlowercase = true\n', encoding="utf-8")
    assert main(["tokenize", "-f", str(tmp_path / "moses.ini"), "-i", str(text)]) == 0
    assert capsys.readouterr() == ("y dijo : « hola » .\n", "")

def test_tokenize_verb_errors(tmp_path, capsys):
    assert main(["tokenize", "--language", "es", "-i", str(tmp_path / "missing.es")]) == 1
    assert "missing.es" in capsys.readouterr().err
    assert main(["tokenize", "-f", str(tmp_path / "moses.ini"), "-i", "-"]) == 1
    assert f"{tmp_path / 'moses.ini'}: no such model configuration" in capsys.readouterr().err
    assert main(["tokenize", "--lowercase", "-i", "-"]) == 1
    assert "--lowercase goes with --language" in capsys.readouterr().err


# (line, its Spanish tokens): no character as a reader sees it is cut, nor a Korean word; Moses's tokeniser gives
# '👍 🏽', '🇪 🇸', 'ẹ ̀ ran' and, in sacremoses outside Korean, one token a Hangul syllable
WHOLE_CHARACTERS = [
    ("Me encanta 👍🏽 y 🇪🇸, ¡qué bien!", ["Me", "encanta", "👍🏽", "y", "🇪🇸", ",", "¡", "qué", "bien", "!"]),
    ("Familia 👨\u200d👩\u200d👧: 1️⃣ ❤️ (🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f)",
     ["Familia", "👨\u200d👩\u200d👧", ":", "1️⃣", "❤️", "(", "🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f",
      ")"]),
    ("x̅ y ẹ̀ran q̣̇.", ["x̅", "y", "ẹ̀ran", "q̣̇", "."]),
    ("Visite 서울 o 한국어 텍스트.", ["Visite", "서울", "o", "한국어", "텍스트", "."]),
    ("compu\u00adtadora y Donau\u00addampf, a\u2060b.", ["compu\u00adtadora", "y", "Donau\u00addampf", ",",
                                                       "a\u2060b", "."]),  # Moses: 'compu \u00ad tadora'
]


@pytest.mark.parametrize("line,expected", WHOLE_CHARACTERS)
def test_no_character_and_no_korean_word_is_cut_and_each_comes_back_as_written(line, expected):
    assert TextForm("es", tokenize=True).tokens(line) == expected
    assert TextForm("en", tokenize=True).text(expected) == line
    assert TextForm("fa", tokenize=True).tokens("می\u200cخواهم کتاب") == ["می\u200cخواهم", "کتاب"]  # ZWNJ inside


_CLUSTERS = ["👍🏽", "🇪🇸", "👨\u200d👩\u200d👧", "1️⃣", "❤️", "x̅", "ẹ̀", "q̣̇", "한국", "😀", "é", "(", ":", "%"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_CLUSTERS + ["casa", "de", "12"]), st.sampled_from(["", " "])),
                min_size=1, max_size=10))
def test_every_character_of_a_line_is_inside_one_token_and_comes_back(pieces):
    """Against the grapheme clusters of ``regex``'s ``\\X``: each of the line's characters of several code points is
    inside one token, and the detokenised line has each of them in order."""
    line = "".join(text + gap for text, gap in pieces).strip()
    words = TextForm("es", tokenize=True).tokens(line)
    clusters = [c for c in regex.findall(r"\X", line) if len(c) > 1]
    assert sorted(c for c in clusters) == sorted(c for w in words for c in regex.findall(r"\X", w) if len(c) > 1)
    out, position = TextForm("en", tokenize=True).text(words), 0
    for cluster in clusters:
        position = out.index(cluster, position) + len(cluster)


@pytest.mark.parametrize("words, text", [
    (["12", "€", "al", "mes"], "12 € al mes"),  # Moses: '12 €al mes'
    (["1.234,56", "€", "(", "unos", "$", "1,300.00", ")"], "1.234,56 € (unos $1,300.00)"),
    (["5,99", "£", "por", "semana", "."], "5,99 £ por semana."),
    (["cuesta", "€", "5", "."], "cuesta €5."),  # before an amount, against it, as Moses writes it
    (["a", "$", "5", "bill"], "a $5 bill"),
])
def test_a_currency_sign_after_an_amount_is_spaced_and_before_one_is_written_against_it(words, text):
    assert TextForm("es", tokenize=True).text(words) == text
    assert TextForm("es", tokenize=True).tokens(text) == words


@pytest.mark.parametrize("line", [
    "ｈｏｌａ！ ｍｕｎｄｏ（ｘ）、。「えい」",  # Moses: 'ｈｏｌａ ！ ｍｕｎｄｏ （ ｘ ） 、 。 「 えい 」'
    "\u200fمرحبا\u200f y hola \u2067abc\u2069 fin, \u202bx\u202c.",  # bidirectional marks (Moses: '\u200f مرحبا \u200f')
])
def test_full_width_punctuation_and_bidirectional_marks_come_back_as_written(line):
    words = TextForm("es", tokenize=True).tokens(line)
    assert len(words) > 5 and TextForm("en", tokenize=True).text(words) == line


@pytest.mark.parametrize("line, moses", [
    ("%d shift/reduce conflicts, input/output error", "%d shift / reduce conflicts, input / output error"),
    ("Copyright © 2012–2021 and 1/2", "Copyright © 2012 – 2021 and 1/2"),
])
def test_a_slash_between_words_and_a_dash_between_numbers_are_written_against_them(line, moses):
    """Moses's tokeniser splits both, its detokeniser spaces them (sacremoses, the reference's ``moses``); a slash
    spaced in the source (``Brown / Yellow``) comes back unspaced, the price of the far more common ``and/or``."""
    from sacremoses import MosesDetokenizer

    words = TextForm("en", tokenize=True).tokens(line)
    assert MosesDetokenizer("en").detokenize(words) == moses
    assert TextForm("en", tokenize=True).text(words) == line
    assert TextForm("en", tokenize=True).text(TextForm("en", tokenize=True).tokens("Brown / Yellow")) == "Brown/Yellow"

"""check_token_form's shortcut: a word of letters and digits alone is never sent to Moses's tokeniser (its
sacremoses load is 0.3 s of a --tokenized run's start-up), which is right only if the tokeniser never splits
one: checked against the tokeniser itself."""

import pytest
from hypothesis import given, settings, strategies as st

from pbmt.base.errors import FormatError
from pbmt.base.text import tokenizer
from pbmt.features import translation
from pbmt.features.translation import check_token_form

SPLITTERS = {language: tokenizer(language) for language in ("en", "es", "fr", "de")}


@settings(max_examples=300, deadline=None)
@given(word=st.text(st.characters(categories=("Lu", "Ll", "Lt", "Lm", "Lo", "Nd", "Nl", "No", "Mn", "Po")),
                    min_size=2, max_size=12).filter(translation.unsplittable)
       | st.lists(st.text(st.characters(max_codepoint=0x052F, categories=("Lu", "Ll", "Lt", "Lo", "Nd")),
                          min_size=1, max_size=8), min_size=1, max_size=3).map("-".join).filter(lambda w: len(w) > 1),
       language=st.sampled_from(sorted(SPLITTERS)))
def test_moses_tokeniser_splits_no_word_of_letters_and_decimal_digits(word, language):
    assert SPLITTERS[language](word) == [word]


def test_token_form_with_unknown_words_of_letters_and_digits_loads_no_tokeniser(monkeypatch):
    def no_tokeniser(language):
        raise AssertionError(f"the tokeniser for {language} was made")

    monkeypatch.setattr(translation, "tokenizer", no_tokeniser)
    known = {"y", "dijo", "dios", ",", ".", "la", "luz"}
    check_token_form("in.tok", [["y", "dijo", "Jehová", ","], ["la", "luz", "1999", "."]], known, "es")
    with pytest.raises(AssertionError, match="the tokeniser for es was made"):
        check_token_form("in.tok", [["y", "dijo", "Jehová,"]], known, "es")


def test_plain_text_is_still_named_with_its_first_such_line():
    known = {"y", "dijo", "dios", ",", ".", ":", "sea", "la", "luz", "Dios"}
    with pytest.raises(FormatError, match=r"^in.txt:2: 'Dios:' is 'Dios :' in the model's tokens; 2 of 3 lines"):
        check_token_form("in.txt", [["y", "dijo", "Dios", ",", "sea", "la", "luz", "."],
                                    ["y", "dijo", "Dios:", "sea", "la", "luz."], ["Y", "dijo"]], known, "es")

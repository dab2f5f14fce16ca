"""Placeholder classes (``pbmt.base.placeholders``): numbers and protected tokens as class tokens in the model, the
originals put back through the word alignment; protected tokens through an identity model in order."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pbmt.commands.cli import main
from pbmt.model.model import TranslationModel
from pbmt.base.placeholders import classes, restore, unmarked
from pbmt.base.protected import ProtectedPatterns
from pbmt.features.translation import Translator
from test_protected import PROTECTED

WORDS = ["archivo", "carpeta", "copiados", "de", "en", "nuevo", "abrir", "guardar", "antes"]
CLASSES = ["@num@", "@ph@", "@url@", "@tag@"]
P = ProtectedPatterns()


def _model(folder, pairs, placeholders, distortion=0):
    """A model folder: the phrase pairs (source, target, alignment) at equal scores, a unigram LM of the
    target words, Moses's default weights but distortion; plain text in, tokenised by Moses's tokeniser."""
    folder.mkdir()
    table = sorted(f"{f} ||| {e} ||| 0.5 0.5 0.5 0.5 ||| {a} |||" for f, e, a in pairs)
    (folder / "phrase-table").write_text("\n".join(table) + "\n", encoding="utf-8")
    words = sorted({w for _, e, _ in pairs for w in e.split()})
    p = math.log10(1 / (len(words) + 2))
    (folder / "lm.arpa").write_text(
        f"\\data\\\nngram 1={len(words) + 3}\n\n\\1-grams:\n{p:.6f}\t<unk>\n-99\t<s>\n{p:.6f}\t</s>\n"
        + "".join(f"{p:.6f}\t{w}\n" for w in words) + "\n\\end\\\n", encoding="utf-8")
    (folder / "moses.ini").write_text(f"""[distortion-limit]
{distortion}

[feature]
UnknownWordPenalty
WordPenalty
PhrasePenalty
PhraseDictionaryMemory name=TranslationModel0 num-features=4 path=phrase-table input-factor=0 output-factor=0
Distortion
KENLM name=LM0 factor=0 path=lm.arpa order=1

[weight]
UnknownWordPenalty0= 1
WordPenalty0= -1
PhrasePenalty0= 0.2
TranslationModel0= 0.2 0.2 0.2 0.2
Distortion0= 0.3
LM0= 0.5
""")
    (folder / "pbmt.toml").write_text(f"""[preprocess]
tokenize = true
source_language = "es"
target_language = "en"
placeholders = {str(placeholders).lower()}
""")
    return folder


@pytest.fixture(scope="module")
def identity(tmp_path_factory):
    """Translators of an identity model of WORDS and the class tokens, with placeholders and without."""
    root = tmp_path_factory.mktemp("identity")
    pairs = [(w, w, "0-0") for w in WORDS + CLASSES]
    return {ph: Translator(TranslationModel.load(_model(root / str(ph), pairs, ph) / "moses.ini"))
            for ph in (True, False)}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(WORDS), PROTECTED, st.integers(0, 10 ** 6).map(str)), min_size=1,
                max_size=8), st.booleans())
def test_an_identity_model_gives_back_the_protected_tokens_in_order(identity, pieces, placeholders):
    line = " ".join(pieces)
    out = identity[placeholders].translate(0, line).text
    expected = [s for s in (line[x.start:x.end] for x in P.spans(line))]
    found = [out[x.start:x.end] for x in P.spans(out)]
    assert found == expected, (line, out)
    assert [w for w in out.split() if w.isdigit()] == [w for w in line.split() if w.isdigit()]


def test_class_tokens_and_accelerator_marks():
    words = ["Abrir", "_Archivo", "%1$s", "de", "12.500", "en", "https://x.es/a", "<b>", "&amp;", "snake_case"]
    assert unmarked(words, P) == ["Abrir", "Archivo", "%1$s", "de", "12.500", "en", "https://x.es/a", "<b>",
                                  "&amp;", "snakecase"]
    assert classes(unmarked(words, P), P) == ["Abrir", "Archivo", "@ph@", "de", "@num@", "en", "@url@", "@tag@",
                                              "@tag@", "snakecase"]
    # through the alignment first, then in source order; a class token with no original is dropped
    source = ["%1", "antes", "de", "%2", "_Abrir", "3"]
    assert restore(["@ph@", "after", "@ph@", "Open", "@num@", "@num@"], [(0, 2), (3, 0), (4, 3)], source, P) == \
        ["%2", "after", "%1", "_Open", "3"]
    assert restore(["@ph@", "@ph@", "@url@"], [], source, P) == ["%1", "%2"]
    assert classes(["a", "las", "10:30", "del", "31/12/2024"], P) == ["a", "las", "@num@", "del", "@num@"]
    # a mark with no aligned target word goes on the first word that has none
    assert restore(["Open", "it", "@num@"], [(5, 2)], source, P) == ["_Open", "it", "3"]


@pytest.fixture(scope="module")
def reordering(tmp_path_factory):
    """A model whose phrase table swaps two placeholders ("A antes de B" is "B after A") and knows a number
    and a word only as classes, plus its plain-text form."""
    root = tmp_path_factory.mktemp("reordering")
    pairs = [("@ph@ antes de @ph@", "@ph@ after @ph@", "0-2 1-1 2-1 3-0"), ("@num@", "@num@", "0-0"),
             ("archivos", "files", "0-0"), ("copiados", "copied", "0-0"), ("carpeta", "folder", "0-0"),
             ("crear", "create", "0-0"), ("@tag@", "@tag@", "0-0"), ("«", '"', "0-0"), ("»", '"', "0-0"),
             (".", ".", "0-0")]
    return _model(root / "model", pairs, True, distortion=6)


def test_placeholders_come_back_through_the_alignment(reordering, tmp_path, capsys):
    text = tmp_path / "in.es"
    text.write_text("%1 antes de %2\n{nombre} antes de %(x)s\n1.234.567 archivos copiados\ncrear _carpeta\n"
                    "crear <b>carpeta</b>\n«%s» 3\n", encoding="utf-8")
    assert main(["translate", "-q", "-f", str(reordering / "moses.ini"), "-i", str(text)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "%2 after %1", "%(x)s after {nombre}", "1.234.567 files copied", "create _folder", "create <b>folder</b>",
        '"%s" 3']


@pytest.mark.filterwarnings("ignore:.*Kneser-Ney:UserWarning")
def test_train_with_placeholders_records_them_and_translate_puts_the_originals_back(tmp_path, capsys):
    import random

    rng = random.Random(3)
    verbs = [("Copiando", "Copying"), ("Borrando", "Deleting"), ("Moviendo", "Moving"), ("Abriendo", "Opening")]
    units = [("segundos", "seconds"), ("minutos", "minutes")]
    things = ["%s", "%1", "{name}", "/usr/share/doc", "https://ejemplo.es/a.html", "$HOME", "{0}"]
    src, tgt = [], []
    for _ in range(60):
        (v, ve), (u, ue) = rng.choice(verbs), rng.choice(units)
        thing, n = rng.choice(things), rng.randint(1, 99)
        src.append(f"{v} {thing} en {n} {u}")
        tgt.append(f"{ve} {thing} in {n} {ue}")
        src.append(f"{v} <b>TICKET-{n}</b>")
        tgt.append(f"{ve} <b>TICKET-{n}</b>")
        src.append(f"_{v} en {n} {u}")
        tgt.append(f"_{ve} in {n} {ue}")
    (tmp_path / "train.es").write_text("\n".join(src) + "\n", encoding="utf-8")
    (tmp_path / "train.en").write_text("\n".join(tgt) + "\n", encoding="utf-8")
    (tmp_path / "tickets.txt").write_text("TICKET-\\d+\n", encoding="utf-8")
    out = tmp_path / "model"
    assert main(["train", "--src", str(tmp_path / "train.es"), "--tgt", str(tmp_path / "train.en"), "--out", str(out),
                 "--placeholders", "--protected", str(tmp_path / "tickets.txt"),
                 "--word-class-count", "0", "--lm-order", "2", "--discount-fallback", "-q"]) == 0
    toml = (out / "pbmt.toml").read_text(encoding="utf-8")
    assert "placeholders = true" in toml and 'protected = "tickets.txt"' in toml
    assert (out / "tickets.txt").read_text(encoding="utf-8") == "TICKET-\\d+\n"
    corpus = (out / "work" / "corpus.src").read_text(encoding="utf-8")
    assert "@ph@" in corpus and "@num@" in corpus and "@url@" in corpus and "TICKET" not in corpus
    (tmp_path / "in.es").write_text("Moviendo %2$d en 12345 minutos\nBorrando <b>TICKET-7</b>\n"
                                    "Abriendo file:///tmp/x.txt en 3 segundos\n_Borrando %s en 2 minutos\n"
                                    "_Moviendo $HOME\n", encoding="utf-8")
    assert main(["translate", "-q", "-f", str(out / "moses.ini"), "-i", str(tmp_path / "in.es")]) == 0
    assert capsys.readouterr().out.splitlines() == ["Moving %2$d in 12345 minutes", "Deleting <b>TICKET-7</b>",
                                                     "Opening file:///tmp/x.txt in 3 seconds",
                                                     "_Deleting %s in 2 minutes", "_Moving $HOME"]

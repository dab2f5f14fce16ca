"""Moses's XML input markup: parsing, the options it gives, and pbmt against the Moses 1 binary."""

import itertools
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pbmt.commands.cli import main
from pbmt.base.errors import PbmtError
from pbmt.base.markup import Markup, MarkupError, SpanTranslations, matched_quotes, parse, quote_zones
from pbmt.model.model import TranslationModel
from pbmt.base.nbest import read_nbest
from pbmt.base.protected import ProtectedPatterns
from pbmt.search.derivation import Derivation, model_score
from pbmt.search.options import MARKUP, TranslationOptions
from pbmt.base.text import TextForm
from pbmt.features.translation import Translator

MOSES = Path(__file__).resolve().parents[1].parent / "shared" / "tools" / "moses" / "bin" / "moses"


def _parse(line, use="exclusive"):
    return parse(line, str.split, str.split, use)


def test_a_tag_gives_translations_of_the_words_it_encloses():
    words, markup = _parse('das ist <np translation="a cute place||a house" prob="0.8||0.2">ein kleines haus</np> .')
    assert words == "das ist ein kleines haus .".split()
    assert markup.spans == (SpanTranslations(2, 5, (("a", "cute", "place"), ("a", "house")), (0.8, 0.2)),)
    assert markup.spans[0].log_probs() == pytest.approx([np.log(0.8), np.log(0.2)])
    _, markup = _parse('<n english="dwelling">haus</n>')  # Moses's old name of the attribute
    assert markup.spans[0].translations == (("dwelling",),) and markup.spans[0].probs == (1.0,)
    assert _parse('<n translation="x" prob="0">haus</n>')[1].spans[0].log_probs() == [-100.0]


def test_walls_and_zones_are_positions_between_tokens():
    words, markup = _parse("a <wall/> b <zone> c d <wall/> e </zone> f")
    assert words == list("abcdef") and markup.zones == ((2, 5),) and markup.walls == (1, 4)
    zones, walls = markup.constraints(len(words))
    assert zones.tolist() == [[2, 5]] and walls.tolist() == [[1, 0, 6], [4, 2, 5]]  # the second is the zone's
    assert _parse("<wall>a b</wall> c")[1].constraints(3)[1][:, 0].tolist() == [1, 2]  # ends of the line divide nothing


def test_tags_fall_between_tokens_of_text_tokenised_piece_by_piece():
    split = lambda text: text.replace(".", " .").split()  # noqa: E731 - a tokeniser that splits a full stop off
    words, markup = parse('la <n translation="house">casa</n>. fin', split, str.split, "inclusive")
    assert words == ["la", "casa", ".", "fin"] and (markup.spans[0].start, markup.spans[0].end) == (1, 2)


def test_tags_without_translations_and_angles_that_open_no_tag_are_text():
    words, markup = _parse("<b>Fondo</b> a < b, x<5 y")
    assert words == ["Fondo", "a", "<", "b,", "x<5", "y"] and markup == Markup(use="exclusive")


def test_ignore_reads_walls_and_zones_but_drops_translations():
    words, markup = _parse('<zone>a <n translation="x">b</n></zone>', "ignore")
    assert words == ["a", "b"] and markup.spans == () and markup.zones == ((0, 2),)


@pytest.mark.parametrize("line, what", [
    ('a <n translation="x">b', "<n> is never closed"),
    ("a </n> b", "</n> closes a tag that was never opened"),
    ('<a translation="x">b</c>', "<a> is closed by </c>"),
    ("a <n translation=x>b</n>", "attribute translation of <n> has no quotes around its value"),
    ('a <n translation="x" prob="high">b</n>', "prob 'high' of <n> is not a number >= 0"),
    ('a <n translation="x" prob="-1">b</n>', "prob '-1' of <n> is not a number >= 0"),
    ('<n translation="x||y" prob="1">b</n>', "<n> gives 2 translations but 1 probabilities"),
    ('<n translation="x|| ">b</n>', "translation 2 of <n> is empty"),
    ('a <n translation="x"/> b', "encloses no word"),
    ("a <zone></zone> b", "a <zone> encloses no word"),
    ("a <n b", "the tag '<n b' is not closed with '>'"),
])
def test_malformed_markup_says_what_is_wrong(line, what):
    with pytest.raises(MarkupError, match=what.replace("(", r"\(").replace("|", r"\|")):
        _parse(line)


def test_paired_quotes_and_brackets_are_zones_with_their_marks_at_the_ends():
    tokens = 'juan escribió " una carta " ( a « pedro » ) "'.split()
    zones, walls = quote_zones(tokens)
    assert set(zones) == {(2, 6), (8, 11), (6, 12)} and set(walls) >= {3, 5, 9, 10, 7, 11}
    assert quote_zones(") a ( b".split()) == ((), ())


@pytest.mark.parametrize("line, zones", [
    ("no se pudo abrir ` %s ' : %s", {(4, 7)}),  # GNU's `%s'
    ("Use ' %s --help ' para más", {(1, 5)}),  # straight quotes
    ("„ %s “ und ‚ %d ‘ und ‹ x ›", {(0, 3), (4, 7), (8, 11)}),  # German, French single guillemets
    ("“ a ” b ‘ c ’", {(0, 3), (4, 7)}),  # English, not taken for German closing marks
    ("` a ' b ' c", {(0, 3)}),  # the first straight mark closes the backquote; a lone one makes nothing
    ("l ' agua", set()),
    ("** Guardar ** o * cursiva * y a b , ~~ x ~~", {(0, 3), (4, 7), (11, 14)}),  # Markdown
])
def test_quote_marks_of_software_messages_and_other_languages_make_zones(line, zones):
    assert set(quote_zones(line.split())[0]) == zones


def test_paired_tags_are_zones_with_their_tags_at_the_ends():
    tokens = ["<p>", "Haga", "clic", "en", '<a\ue020href="x">', "este", "enlace", "</a>", "para", "continuar", ".",
              "</p>", "<br/>", "&lt;b&gt;", "x", "&lt;/b&gt;", "<i>", "</b>"]
    zones, walls = quote_zones(tokens)
    assert set(zones) == {(4, 8), (0, 12), (13, 16)}  # <br/> is no pair; <i> and </b> are not partners
    assert set(walls) == {5, 7, 1, 11, 14, 15}


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    return TranslationModel.load(tiny_model_dir / "moses.ini")


def _targets(options, start, end):
    return {" ".join(options.vocab.words(options.target(o))) for o in options.span(start, end)}


def test_exclusive_inclusive_and_constraint_options(tiny):
    words = "a b c".split()
    given = Markup((SpanTranslations(1, 3, (("house",),), (0.5,)),), "inclusive")
    table = TranslationOptions.of_words(tiny, words)
    inclusive = TranslationOptions.of_words(tiny, words, given)
    assert _targets(inclusive, 1, 3) == _targets(table, 1, 3) | {"house"}
    assert _targets(inclusive, 1, 2) == _targets(table, 1, 2)
    o = next(o for o in inclusive.span(1, 3) if inclusive.is_markup(o))
    assert inclusive.candidate[o] == MARKUP
    tm = tiny.layout.columns("TranslationModel0")
    assert inclusive.local[o, tm] == pytest.approx([np.log(0.5) / 4] * 4)

    exclusive = TranslationOptions.of_words(tiny, words, Markup(given.spans, "exclusive"))
    assert _targets(exclusive, 1, 3) == {"house"}
    for start, end in [(0, 2), (1, 2), (2, 3), (0, 3)]:  # nothing else reaches into the span
        assert not _targets(exclusive, start, end)
    assert _targets(exclusive, 0, 1) == _targets(table, 0, 1)

    constraint = TranslationOptions.of_words(tiny, words, Markup(given.spans, "constraint"))
    assert _targets(constraint, 0, 3) == {t for t in _targets(table, 0, 3) if "house" in t.split()}
    assert not _targets(constraint, 1, 2) and not _targets(constraint, 0, 2)


def test_the_translator_forces_a_translation_and_reports_malformed_markup(tiny):
    exclusive = Translator(tiny, n_best=5, tokenized=True, xml_input="exclusive")
    found = exclusive.translate(0, 'a <n translation="lord said">b c</n>')
    assert "lord said" in found.text and all("lord said" in e.text for e in found.nbest)
    with pytest.raises(MarkupError):
        exclusive.translate(0, "a <n translation=x>b</n>")
    ignore = Translator(tiny, tokenized=True, xml_input="ignore")
    assert ignore.read("a <n translation=x>b</n>")[0] == ["a", "<n", "translation=x>b</n>"]
    passing = Translator(tiny, tokenized=True)
    assert passing.read('<n translation="x">b</n>')[0] == ['<n', 'translation="x">b</n>']


LINES = [
    'a <n translation="house||moses and" prob="0.3||0.6">b</n> c',
    'e <x translation="lord">d c</x> b a',
    "c a <wall/> e b d",
    "a b <zone> c d e </zone>",
    "e d <zone> c <wall/> b a </zone>",
    'b d <y translation="israel of">a</y> e',
]


@pytest.mark.skipif(not MOSES.exists(), reason="the Moses 1 binary of ../shared/tools/moses is absent")
@pytest.mark.parametrize("mode", ["exclusive", "inclusive", "constraint"])
def test_the_same_translations_and_scores_as_moses(tiny, tiny_model_dir, tmp_path, mode):
    nbest = tmp_path / "moses.nbest"
    subprocess.run([str(MOSES), "-f", "moses.ini", "-xml-input", mode, "-n-best-list", str(nbest), "4"],
                   input="\n".join(LINES) + "\n", text=True, cwd=tiny_model_dir, check=True, capture_output=True)
    rows = [line.split(" ||| ") for line in nbest.read_text().splitlines()]
    theirs = {int(k): [(r[1].strip(), float(r[3])) for r in g] for k, g in itertools.groupby(rows, lambda r: r[0])}
    translator = Translator(tiny, n_best=4, tokenized=True, xml_input=mode)
    for i, line in enumerate(LINES):
        ours = [(e.text, e.total) for e in translator.translate(i, line).nbest]
        assert [t for t, _ in ours[:1]] == [t for t, _ in theirs[i][:1]], line
        np.testing.assert_allclose([s for _, s in ours], [s for _, s in theirs[i]], atol=2e-3, err_msg=line)


def test_pbmt_translate_and_explain_read_markup_and_name_a_malformed_line(tiny_model_dir, tmp_path, capsys):
    src = tmp_path / "in.txt"
    src.write_text('a <n translation="lord said">b c</n> d\nc a <wall/> e b\n')
    ini = str(tiny_model_dir / "moses.ini")
    assert main(["translate", "-q", "--tokenized", "-f", ini, "-i", str(src), "-o", str(tmp_path / "out"),
                 "--xml-input", "exclusive", "--n-best", str(tmp_path / "nbest"), "--n-best-size", "3"]) == 0
    first = (tmp_path / "out").read_text().splitlines()[0]
    assert "lord said" in first and "<" not in first
    assert all("lord said" in e.text for e in read_nbest(tmp_path / "nbest") if e.sentence == 0)
    src.write_text('a b\nc <n translation="x" prob="high">d</n>\n')
    assert main(["translate", "-q", "--tokenized", "-f", ini, "-i", str(src), "-o", str(tmp_path / "bad"),
                 "--xml-input", "inclusive"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{src}:2: malformed markup: prob 'high' of <n> is not a number" in err[0]
    assert not (tmp_path / "bad").exists()
    assert main(["translate", "-q", "--tokenized", "-f", ini, "-i", str(src), "-o", str(tmp_path / "text"),
                 "--xml-input", "ignore"]) == 0
    assert main(["explain", "--tokenized", "-f", ini, "--xml-input", "exclusive",
                 'a <n translation="lord said">b c</n> <wall/> d']) == 0
    shown = capsys.readouterr().out
    assert "(given by the markup)" in shown and "wall before 3:d" in shown
    assert main(["explain", "--tokenized", "-f", ini, "--xml-input", "exclusive", "a <n>b"]) == 1
    assert "malformed markup: <n> is never closed" in capsys.readouterr().err


def test_the_python_api_reads_markup(tiny_model_dir):
    import pbmt

    model = pbmt.load(tiny_model_dir / "moses.ini")
    found = model.translate('a <n translation="lord said">b c</n>', tokenized=True, xml_input="exclusive", n_best=2)
    assert "lord said" in found.text and found.source_tokens == ("a", "b", "c")
    with pytest.raises(PbmtError, match="text: malformed markup"):
        model.translate("a <n>b", tokenized=True, xml_input="exclusive")
    with pytest.raises(PbmtError, match=r"text\[1\]: malformed markup"):
        model.translate(["a", "a <n>b"], tokenized=True, xml_input="exclusive")
    assert "(given by the markup)" in model.explain('a <n translation="x">b</n>', tokenized=True,
                                                    xml_input="inclusive").text


SHARED_LINES = [
    'mi siervo moisés es <n translation="dead">muerto</n> : levántate pues ahora , y pasa este jordán .',
    'yo os he <v translation="given||delivered" prob="0.4||0.6">entregado</v> , como lo había dicho á moisés .',
    'nadie te podrá hacer frente <wall/> en todos los días de tu vida .',
    'desde el desierto y <zone>este líbano hasta el gran río</zone> eufrates , toda la tierra .',
    'esfuérzate y sé <a translation="of good courage">valiente</a> : porque tú repartirás á este pueblo .',
]


@pytest.fixture(scope="module")
def shared_moses(shared, tmp_path_factory):
    """Moses 1's 10-best lists (with segmentations) of ``SHARED_LINES`` under the shared model, per mode."""
    if not MOSES.exists():
        pytest.skip("the Moses 1 binary of ../shared/tools/moses is absent")
    model, _ = shared
    folder, lists = tmp_path_factory.mktemp("moses-markup"), {}
    for mode in ("exclusive", "inclusive", "constraint"):
        subprocess.run([str(MOSES), "-f", "moses.ini", "-xml-input", mode, "-n-best-list", str(folder / mode), "10",
                        "-include-segmentation-in-n-best", "true"], input="\n".join(SHARED_LINES) + "\n",
                       text=True, cwd=Path(model.config.path).parent, check=True, capture_output=True)
        lists[mode] = {k: list(g) for k, g in itertools.groupby(read_nbest(folder / mode), lambda e: e.sentence)}
    return model, lists


def _entry_derivations(entry, options):
    """Every derivation of ``options`` an n-best entry's segmentation describes: a span's table phrase and a
    given translation may produce the same words."""
    words = entry.text.split()
    choices = [[o for o in options.span(s, e)
                if options.vocab.words(options.target(o)) == words[ts:te]] for s, e, ts, te in entry.segmentation]
    return [Derivation.from_options(options, chosen) for chosen in itertools.product(*choices)]


@pytest.mark.parametrize("mode", ["exclusive", "inclusive", "constraint"])
def test_on_the_shared_model_moses_derivations_score_alike_and_pbmt_finds_one_as_good(shared_moses, mode):
    model, lists = shared_moses
    translator = Translator(model, n_best=10, tokenized=True, xml_input=mode, quote_zones=False)
    for i, line in enumerate(SHARED_LINES):
        words, markup = translator.read(line)
        options = translator.options(words, markup)
        theirs = lists[mode][i]
        for entry in theirs:  # a given translation is scored as Moses scores it
            scores = [model_score(d, options, model) for d in _entry_derivations(entry, options)]
            assert min(abs(np.array(scores) - entry.total)) < 2e-3, (line, entry.text, scores, entry.total)
        ours = translator.translate(i, line).nbest
        assert ours[0].total >= theirs[0].total - 1e-3, line
        if mode == "exclusive" and markup.spans:
            given = [" ".join(t) for s in markup.spans for t in s.translations]
            assert all(any(g in e.text for g in given) for e in tuple(ours) + tuple(theirs))


def test_markup_survives_the_text_front_end():
    source, target = TextForm("es", tokenize=True), TextForm("en", tokenize=True)
    words, markup = parse('Pulse <b translation="Save as…">Guardar como…</b>, luego «<n translation="%s">%s</n>».',
                          source.split, target.split, "exclusive")
    assert words == ["Pulse", "Guardar", "como", "…", ",", "luego", "«", "%s", "»", "."]
    (save, placeholder) = markup.spans
    assert (save.start, save.end, placeholder.start, placeholder.end) == (1, 4, 7, 8)
    assert save.translations == (("Save", "as", "…"),) and placeholder.translations == (("%s",),)
    zones, walls = markup.with_quote_zones(words).constraints(len(words))
    assert zones.tolist() == [[6, 9]] and walls.tolist() == [[7, 6, 9], [8, 6, 9]]


def test_the_punctuation_walls_follow_the_models_own_protected_patterns():
    """A token only a model's own pattern protects (a ticket number here) holds a mark in place as a built-in
    placeholder does; the built-in patterns alone leave it a word."""
    words = "ver TICKET-42 : %s".split()
    own = ProtectedPatterns((r"TICKET-\d+",))
    assert Markup().with_punctuation_walls(words).walls == ()
    assert Markup().with_punctuation_walls(words, own).walls == (1, 2, 3)


def test_no_quote_zones_leaves_the_punctuation_walls(tiny):
    """``--no-quote-zones`` is quote zones alone: the walls that hold a mark between placeholders stay."""
    line = "« %s » : %s"
    zoned = Translator(tiny, tokenized=True).read(line)[1]
    unzoned = Translator(tiny, tokenized=True, quote_zones=False).read(line)[1]
    assert zoned.zones == ((0, 3),) and unzoned.zones == ()
    assert unzoned.walls == (2, 3, 4) and set(zoned.walls) == {1, 2, 3, 4}


#: The marks that pair, each opening one with its closing ones: a table of the test's own (the benchmark's, with
#: brackets and German's single quotes)
QUOTE_PAIRS = {"`": "'", "'": "'", '"': '"', "«": "»", "‹": "›", "“": "”", "‘": "’", "„": "“”", "‚": "‘’", "(": ")",
               "[": "]"}


@pytest.mark.parametrize("target, links, expected", [
    # «%1» y «%4» -> '%1' and '%4 ”: the last quote's closing mark came from a phrase » y « -> ” and “
    ("' %1 ' and ' %4 ”".split(), [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6)],
     "' %1 ' and ' %4 '".split()),
    ("“ %1 ” and “ %4 »".split(), [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6)],
     "“ %1 ” and “ %4 ”".split()),
    # a pair already: left alone
    ("„ %1 “ and ‚ %4 ’".split(), [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6)],
     "„ %1 “ and ‚ %4 ’".split()),
    # the marks aligned to words, two target tokens on one mark, or the closing mark first: left alone
    ("' %1 ' and %4 ”".split(), [(0, 0), (1, 1), (2, 2), (3, 3), (5, 4), (6, 5)], "' %1 ' and %4 ”".split()),
    ("' %1 ' and ' ' %4 ”".split(), [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (4, 5), (5, 6), (6, 7)],
     "' %1 ' and ' ' %4 ”".split()),
    ("» %4 '".split(), [(4, 0), (5, 1), (6, 2)], "» %4 '".split()),
])
def test_a_quotes_closing_mark_is_made_its_opening_marks_partner(target, links, expected):
    source = "« %1 » y « %4 »".split()
    zones, _ = quote_zones(source)
    assert matched_quotes(target, links, source, zones) == expected


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(list("'\"`«»‹›“”‘’„‚()[]") + ["a", "%s"]), min_size=1, max_size=10), st.randoms())
def test_matched_quotes_changes_only_closing_marks_that_do_not_pair_with_their_opening_mark(source, rng):
    """Target: the source's tokens with the marks replaced at random, aligned one to one (a monotone
    translation): every quoted zone's marks then pair, by the test's own table, and nothing else changes."""
    marks = list("'\"`«»‹›“”‘’„‚()[]")
    target = [rng.choice(marks) if t in marks else t for t in source]
    zones, _ = quote_zones(source)
    out = matched_quotes(target, [(i, i) for i in range(len(source))], source, zones)
    pairs = QUOTE_PAIRS
    changed = {i for i, (a, b) in enumerate(zip(target, out)) if a != b}
    for start, end in zones:
        if source[start] in pairs and source[end - 1] in pairs[source[start]] and target[start] in pairs:
            if target[end - 1] in "".join(pairs.values()):
                assert out[end - 1] in pairs[target[start]]
            changed.discard(end - 1)
    assert not changed

"""The operation sequence model as a search feature: its kernels' scores equal a from-scratch rescoring of
every derivation (the operations in Python, scored by the ``kenlm`` module) and Moses 1's OpSequenceModel
scores, the searches find what enumeration finds, and moses.ini lines it cannot read are one-line errors."""

import dataclasses
import gzip
import random

import kenlm
import numpy as np
import pytest

from pbmt.base.errors import FormatError
from pbmt.model.model import SearchSettings, TranslationModel
from pbmt.model.osm import CONTINUE, GENERATE, SOURCE_ONLY, TARGET_ONLY, Generator, program
from pbmt.search.decoder import decode
from pbmt.search.derivation import model_score, score_derivation
from pbmt.search.options import TranslationOptions
from pbmt.search.sampler import Sampler, gloss
from pbmt.train.lm_estimate import write_lm
from pbmt.train.osm import operation_sequence

from enumeration import all_derivations
from repo_data import REPO
from support import assert_reproduces_moses, moses_nbest, write_moses_ini

# phrase pairs (source, target, alignment): every kind of cept the operations know
PAIRS = [
    ("a", "the", "0-0"), ("a", "lord", "0-0"), ("b", "said", "0-0"), ("b", "unto moses", "0-1"),
    ("c", "house", "0-0"), ("c", "of israel", "0-0 0-1"), ("d", "go", "0-0"), ("d", "and", "0-0"),
    ("e", "israel", "0-0"), ("e", "the house", "0-1"),
    ("a b", "the lord said", "0-0 0-1 1-2"), ("b c", "house said", "0-1 1-0"), ("c d", "go", "1-0"),
    ("d e", "and", "0-0"), ("a b c", "the house", "0-0 2-0 1-1"), ("b c d", "unto the lord", "0-2 2-0"),
    ("c d e", "moses and israel", "0-0 2-2 0-1"), ("e a", "israel", ""), ("d a", "go the lord", "1-2 0-0"),
]
WEIGHTS = "OpSequenceModel0= 0.5 -0.1 0.1 -0.05 0.1"


def _op_corpus(rng):
    """Operation sequences of random concatenations of the phrase pairs, their targets shuffled."""
    lines = []
    for _ in range(300):
        chosen = [PAIRS[rng.randrange(len(PAIRS))] for _ in range(rng.randint(1, 4))]
        order = list(range(len(chosen)))
        rng.shuffle(order)
        src, tgt, links, tgt_start = [], [], [], {}
        for k in order:
            tgt_start[k] = len(tgt)
            tgt.extend(chosen[k][1].split())
        for k, (f, _, a) in enumerate(chosen):
            links += [(len(src) + int(p.split("-")[0]), tgt_start[k] + int(p.split("-")[1])) for p in a.split()]
            src.extend(f.split())
        lines.append(" ".join(operation_sequence(src, tgt, links)))
    return lines


@pytest.fixture(scope="module")
def osm_model(tmp_path_factory, repo_corpus):
    folder = tmp_path_factory.mktemp("osm-model")
    with gzip.open(folder / "phrase-table.gz", "wt") as f:
        f.write("".join(f"{s} ||| {t} ||| 0.5 0.4 0.3 0.2 ||| {a} |||\n" for s, t, a in sorted(PAIRS)))
    (folder / "ops.txt").write_text("\n".join(_op_corpus(random.Random(5))) + "\n")
    write_lm(folder / "ops.txt", 3, folder / "osm.arpa", discount_fallback=(0.5, 1.0, 1.5))
    write_moses_ini(folder, [
        ("UnknownWordPenalty", "1"), ("WordPenalty", "-0.5"), ("PhrasePenalty", "0.2"),
        ("PhraseDictionaryMemory name=TranslationModel0 num-features=4 path=phrase-table.gz input-factor=0 "
         "output-factor=0", "0.2 0.1 0.3 0.1"),
        ("Distortion", "0.3"), (f"KENLM name=LM0 factor=0 path={repo_corpus / 'lm3.arpa.gz'} order=3", "0.5"),
        ("OpSequenceModel name=OpSequenceModel0 num-features=5 path=osm.arpa input-factor=0 output-factor=0",
         WEIGHTS.partition("= ")[2])], 3)
    return folder


def reference(derivation, options, lm):
    """The OSM columns of a derivation from scratch: Moses's decoder's operations block by block
    (``Generator.phrase``), scored by the kenlm module from ``<s>`` (log10, no ``</s>``), and the counts."""
    run = Generator()
    words = options.vocab.words
    source = words(options.sentence)
    for s, e, o in zip(derivation.src_start, derivation.src_end, derivation.option):
        lo, hi = options.align_offsets[o], options.align_offsets[o + 1]
        run.phrase(int(s), source[s:e], words(options.target(o)), options.align[lo:hi].tolist(),
                   options.is_unknown(o))
    return [log10(lm, run.operations), run.gap_width, run.gap_count, run.open_gaps, run.source_alone], run.operations


def log10(lm, operations, bos=True):
    """The kenlm module's log10 probability of ``operations`` from ``<s>`` (``bos``) or the empty context, no
    ``</s>``."""
    state, out = kenlm.State(), kenlm.State()
    (lm.BeginSentenceWrite if bos else lm.NullContextWrite)(state)
    total = 0.0
    for op in operations:
        total += lm.BaseScore(state, op, out)
        state, out = out, state
    return total


SENTENCES = ["a b c", "c d e a", "b c d e", "e a b", "d a c b", "a f c"]  # f: unknown


@pytest.mark.parametrize("sentence", SENTENCES)
def test_every_derivation_scores_as_from_scratch(osm_model, sentence):
    """Every derivation (exhaustive): score_derivation's OSM columns, the kernels' per-column form, equal the
    operations rebuilt in Python and scored by kenlm; the searches' n-best scores equal model scores, and the
    best is enumeration's best."""
    model = TranslationModel.load(osm_model / "moses.ini")
    lm = kenlm.Model(str(osm_model / "osm.arpa"))
    columns = model.layout.columns("OpSequenceModel0")
    options = TranslationOptions.of_words(model, sentence.split())
    everything = all_derivations(options, 3)
    assert len(everything) > 20
    for d in everything:
        expected, operations = reference(d, options, lm)
        np.testing.assert_allclose(score_derivation(d, options, model)[columns], expected, atol=1e-4,
                                   err_msg=" ".join(operations))
    best = max(model_score(d, options, model) for d in everything)
    for search in ("stack", "cube"):
        exact = dataclasses.replace(model, settings=SearchSettings(stack_size=10**6, beam_threshold=0.0,
                                                                  pop_limit=0, search=search, distortion_limit=3))
        found = decode(exact, options, n_best=20)
        assert found[0].score == pytest.approx(best, abs=1e-6)
        for f in found:
            assert f.score == pytest.approx(model_score(f.derivation, options, model), abs=1e-6)


def test_the_sentences_take_every_operation(osm_model):
    """The derivations of the sentences above generate every kind of operation."""
    model = TranslationModel.load(osm_model / "moses.ini")
    lm = kenlm.Model(str(osm_model / "osm.arpa"))
    kinds = set()
    for sentence in SENTENCES:
        options = TranslationOptions.of_words(model, sentence.split())
        for d in all_derivations(options, 3):
            kinds.update(op if op.endswith("_") else op.split("_")[1] for op in reference(d, options, lm)[1])
    assert {"_INS_GAP_", "_JMP_FWD_", "_CONT_CEPT_", "_TRANS_SLF_", "JMP", "INS", "DEL", "TRANS"} <= kinds


def test_decoded_operations_are_the_training_operations(osm_model):
    """Where no source word of a block is linked to nothing, a derivation's operations block by block are the
    operation sequence of the sentence pair it makes (the training corpus's conversion)."""
    model = TranslationModel.load(osm_model / "moses.ini")
    lm = kenlm.Model(str(osm_model / "osm.arpa"))
    checked = 0
    for sentence in SENTENCES[:5]:
        options = TranslationOptions.of_words(model, sentence.split())
        words = options.vocab.words
        for d in all_derivations(options, 3):
            links, target, unlinked = [], [], False
            for s, o in zip(d.src_start, d.option):
                lo, hi = options.align_offsets[o], options.align_offsets[o + 1]
                pairs = options.align[lo:hi].tolist()
                unlinked |= len({i for i, _ in pairs}) < options.end[o] - s
                links += [(int(s) + i, len(target) + t) for i, t in pairs]
                target += words(options.target(o))
            if unlinked:
                continue
            checked += 1
            assert reference(d, options, lm)[1] == operation_sequence(words(options.sentence), target, links)
    assert checked > 100


def test_open_gaps_follow_from_the_coverage():
    """The kernels keep no set of open gaps: after every generated word it is every source position before
    the frontier that is not generated while the one before it is (or that is 0), but the current one."""
    rng = random.Random(11)
    for _ in range(3000):
        order = list(range(rng.randint(1, 12)))
        rng.shuffle(order)
        run = Generator()
        for position in order:
            run.step(position, "x", GENERATE)
            derived = [i for i in range(run.frontier) if i not in run.generated and i != run.j
                       and (i == 0 or i - 1 in run.generated)]
            assert derived == run.gaps, order


def test_a_phrase_pairs_steps():
    """Moses's decoder's order: a source word linked to nothing first when it starts the phrase, else right
    after the word before it; a target word linked to nothing after the cept before it."""
    assert program("x a y b".split(), "A B C".split(), [(1, 0), (3, 1), (3, 2)]) == [
        (SOURCE_ONLY, 0, "_INS_x"), (GENERATE, 1, "_TRANS_A_TO_a"), (SOURCE_ONLY, 2, "_INS_y"),
        (GENERATE, 3, "_TRANS_B^_^C_TO_b")]
    assert program("a b".split(), "A X B".split(), [(0, 0), (1, 0), (1, 2)]) == [
        (GENERATE, 0, "_TRANS_A^_^B_TO_a^_^b"), (CONTINUE, 1, "_CONT_CEPT_"), (TARGET_ONLY, -1, "_DEL_X")]
    assert program(["f"], ["f"], [(0, 0)], unknown=True) == [(GENERATE, 0, "_TRANS_SLF_")]


def test_the_estimate_is_each_pairs_operations_alone(osm_model, repo_corpus):
    """Every option's estimate (pruning and future costs) is the LM's of its target words plus the OSM's of its
    pair alone, as Moses's OpSequenceModel estimates in isolation: the pair's operations from source position 0
    with nothing covered (``Generator.phrase``), scored by kenlm from the empty context (no ``<s>``), and the
    counts they make, under the weights; the table's candidates and an unknown word (Generate Identical)."""
    model = TranslationModel.load(osm_model / "moses.ini")
    osm, lm3 = kenlm.Model(str(osm_model / "osm.arpa")), kenlm.Model(str(repo_corpus / "lm3.arpa.gz"))
    weights = model.layout.as_dict(model.weights)
    checked, counted = 0, 0
    for sentence in SENTENCES:
        options = TranslationOptions.of_words(model, sentence.split())
        words = options.vocab.words
        for o in range(len(options)):
            lo, hi = options.align_offsets[o], options.align_offsets[o + 1]
            run = Generator()
            run.phrase(0, words(options.sentence[options.start[o]:options.end[o]]), words(options.target(o)),
                       options.align[lo:hi].tolist(), options.is_unknown(o))
            columns = [log10(osm, run.operations, bos=False), run.gap_width, run.gap_count, run.open_gaps,
                       run.source_alone]
            target = " ".join(words(options.target(o)))
            expected = (weights["LM0"][0] * np.log(10) * lm3.score(target, bos=False, eos=False)
                        + np.dot(weights["OpSequenceModel0"], columns))
            assert options.lm_estimate[o] == pytest.approx(expected, abs=1e-4), (o, run.operations)
            checked += 1
            counted += any(columns[1:])
    assert checked > 50 and counted > 10  # some pairs reorder or generate source words alone within themselves


@pytest.mark.parametrize("line, message", [
    ("num-features=4 path=osm.arpa", "5 features"),
    ("num-features=5 path=osm.arpa support-features=no", "support-features=no goes with num-features=1"),
    ("num-features=5 path=nope.arpa", "nope.arpa"),
])
def test_bad_lines_name_the_line(osm_model, line, message):
    ini = osm_model / "bad.ini"
    text = (osm_model / "moses.ini").read_text()
    text = text.replace("num-features=5 path=osm.arpa", line)
    if "num-features=4" in line:
        text = text.replace(WEIGHTS, "OpSequenceModel0= 0.5 -0.1 0.1 -0.05")
    ini.write_text(text)
    with pytest.raises(FormatError, match=r":11:.*" + message):
        TranslationModel.load(ini)


def test_the_n_gram_score_alone(osm_model):
    """support-features=no: one column, the operations' log10 probability, as in Moses."""
    ini = osm_model / "one.ini"
    ini.write_text((osm_model / "moses.ini").read_text()
                   .replace("num-features=5 path=osm.arpa", "num-features=1 support-features=no path=osm.arpa")
                   .replace(WEIGHTS, "OpSequenceModel0= 0.5"))
    model = TranslationModel.load(ini)
    options = TranslationOptions.of_words(model, "d a c b".split())
    lm = kenlm.Model(str(osm_model / "osm.arpa"))
    for found in decode(model, options, n_best=5):
        value = score_derivation(found.derivation, options, model)[model.layout.columns("OpSequenceModel0")]
        assert value.tolist() == pytest.approx(reference(found.derivation, options, lm)[0][:1], abs=1e-4)


MOSES = REPO.parent / "shared" / "tools" / "moses" / "bin" / "moses"


@pytest.mark.skipif(not MOSES.exists(), reason=f"Moses 1 not found at {MOSES}")
def test_moses_scores_the_operations_alike(osm_model, tmp_path):
    """Moses 1's OpSequenceModel on the same moses.ini: every feature (the OSM's five columns among them) and
    the total of its 10-best entries equal pbmt's rescoring of the same derivations."""
    model = TranslationModel.load(osm_model / "moses.ini")
    for sentence, entries in zip(SENTENCES, moses_nbest(MOSES, osm_model, SENTENCES, tmp_path / "nbest.txt")):
        options = TranslationOptions.of_words(model, sentence.split())
        for entry in entries:
            assert_reproduces_moses(entry, options, model)


def test_sampler_deltas_equal_rescoring(osm_model):
    """The Gibbs sampler's delta of every move it proposes, the OSM's columns included, equals rescoring the
    derivation before and after from scratch."""
    model = TranslationModel.load(osm_model / "moses.ini")
    rng = np.random.default_rng(5)
    checked = 0
    for sentence in SENTENCES:
        options = TranslationOptions.of_words(model, sentence.split())
        sampler = Sampler(model, options)
        chain = sampler.start(gloss(options))
        for _ in range(150):
            nb = sampler.propose(chain, rng)
            before = score_derivation(nb.base, options, model)
            for c in range(len(nb)):
                after = score_derivation(nb.derivation(c), options, model)
                np.testing.assert_allclose(nb.delta[c], after - before, atol=1e-6)
                checked += 1
            p = np.exp(nb.score - nb.score.max())
            sampler.apply(chain, nb, int(rng.choice(len(nb), p=p / p.sum())))
        np.testing.assert_allclose(chain.features, score_derivation(chain.derivation, options, model), atol=1e-6)
    assert checked > 1000

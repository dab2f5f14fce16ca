"""Built-in global features: values against hand computations, deltas against recomputation on random moves."""

import math

import numpy as np
import pytest

from pbmt.base.errors import PbmtError
from pbmt.features import Hypothesis, build, feature_values, name_features, parse_requests
from pbmt.model.model import TranslationModel
from pbmt.search.document_decoder import DocumentSampler
from pbmt.search.options import TranslationOptions
from pbmt.search.sampler import gloss
from pbmt.base.vocab import Vocab


def features(text, vocab):
    return build(name_features(parse_requests(text), nbest=False), vocab)


@pytest.fixture
def vocab():
    return Vocab("señor dijo de casa dios lord god said of house the".split())


def hyp(vocab, source, target, links):
    return Hypothesis(vocab.ids(source.split()), vocab.ids(target.split()), np.array(links).reshape(-1, 2))


def test_lexical_consistency_by_hand(vocab):
    (consistency,) = features("lexical-consistency", vocab)  # words of >= 4 characters: señor, dijo, casa
    doc = [hyp(vocab, "señor dijo", "lord said", [(0, 0), (1, 1)]),
           hyp(vocab, "dijo señor de casa", "said god of house", [(0, 0), (1, 1), (2, 2), (3, 3)]),
           hyp(vocab, "señor casa de", "the lord house", [(0, 0), (0, 1), (1, 2)])]
    # señor: (lord) (god) (the lord) -> 3 tokens, majority 1: cost 2; dijo: (said) x2: 0;
    # casa: (house) x2: 0; "de" is too short (3 characters) to count
    assert consistency.values(doc) == pytest.approx([-2.0])
    (every_word,) = features("lexical-consistency:1", vocab)
    # now de counts too: (of) and () (unlinked in sentence 3): cost 1
    assert every_word.values(doc) == pytest.approx([-3.0])
    assert consistency.values(doc[:1]) == pytest.approx([0.0])
    with pytest.raises(ValueError, match="alignment"):
        consistency.values([Hypothesis(vocab.ids(["señor"]), vocab.ids(["lord"]))])


def test_length_ratio_by_hand(vocab, tmp_path):
    (ratio,) = features("length-ratio:1.5", vocab)
    h = hyp(vocab, "señor dijo de", "lord said of the house", [])
    assert ratio.values([h]) == pytest.approx([-abs(math.log(6 / 4) - math.log(1.5))])
    assert ratio.values([h, h]) == pytest.approx(2 * ratio.values([h]))
    (source, target) = tmp_path / "train.es", tmp_path / "train.en"
    source.write_text("a b\nc d e f\n")
    target.write_text("a b c\nd e f g h i\n")
    (from_files,) = features(f"length-ratio:{source}+{target}", vocab)
    assert from_files.ratio == pytest.approx(9 / 6)
    (default,) = features("length-ratio", vocab)
    assert default.values([h]) == pytest.approx([-math.log(6 / 4)])
    with pytest.raises(PbmtError, match="ratio"):
        features("length-ratio:abc", vocab)


def test_repetition_by_hand(vocab):
    (rep,) = features("repetition:4", vocab)
    h = hyp(vocab, "dijo", "of the lord of the lord the", [])
    assert rep.size == 3
    # bigrams: of the, the lord, lord of, of the*, the lord*, lord the -> 2; trigrams: 1 (of the lord);
    # 4-grams: of the lord of, the lord of the, lord of the lord, of the lord the -> 0
    assert rep.values([h]).tolist() == [-2.0, -1.0, 0.0]
    assert features("repetition", vocab)[0].size == 2
    with pytest.raises(PbmtError, match="at least 2"):
        features("repetition:1", vocab)


def test_unknown_and_nbest_only_kinds_are_refused(vocab):
    with pytest.raises(PbmtError, match="unknown global feature"):
        features("no-such-feature", vocab)
    with pytest.raises(PbmtError, match="only 'pbmt rescore'"):
        features("consensus", vocab)
    with pytest.raises(PbmtError, match="needs an argument"):
        features("lm", vocab)


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    return TranslationModel.load(tiny_model_dir / "moses.ini")


def test_deltas_equal_recomputation_on_random_document_moves(tiny, repo_corpus):
    """Thousands of random moves over a three-sentence document, every candidate's global delta checked."""
    model = tiny
    found = build(name_features(parse_requests(f"lexical-consistency:1,length-ratio:1.2,repetition:3,"
                                               f"lm:{repo_corpus / 'lm3.arpa.gz'}"), model.layout.names, nbest=False),
                  model.vocab)
    options = [TranslationOptions.build(model, model.vocab.ids(s.split()))
               for s in ("a b c d e", "c a e b a", "b a d a")]
    width = sum(f.size for f in found)
    sampler = DocumentSampler(model, options, found, np.linspace(-1, 1, width))
    chains = sampler.start([gloss(o) for o in options])
    rng = np.random.default_rng(3)
    dense = model.layout.size
    checked = 0
    for _ in range(1500):
        j = int(rng.integers(len(options)))
        s, chain = sampler.samplers[j], chains[j]
        document = [sampler.samplers[i].hypothesis(c.derivation) for i, c in enumerate(chains)]
        before = feature_values(found, document)
        np.testing.assert_allclose(chain.global_values, before, atol=1e-9)
        nb = s.propose(chain, rng)
        for c in range(len(nb)):
            changed = document[:j] + [s.hypothesis(nb.derivation(c))] + document[j + 1:]
            np.testing.assert_allclose(nb.delta[c, dense:], feature_values(found, changed) - before, atol=1e-9)
            checked += 1
        s.apply(chain, nb, int(rng.integers(len(nb))))
    assert checked > 3000
    np.testing.assert_allclose(sampler.features(chains), sampler._features([c.derivation for c in chains]),
                               atol=1e-9)

"""NgramLM against the kenlm module: scores, states, batch scoring, cache, errors."""

import gzip
import itertools
import os

import numpy as np
import pytest
from numba import njit

from pbmt.base.errors import FormatError, PbmtError
from pbmt.model._lm_kernels import score_word
from pbmt.model.lm import NgramLM
from pbmt.base.vocab import Vocab
from repo_data import EMBEDDED_MODEL, data_lines

kenlm = pytest.importorskip("kenlm")

# A 3-gram model pruned SRILM-style: "a b c" is listed but "b c" is not, so
# scoring "c" after "a b" must still use the trigram (KenLM fills such holes).
# There is no <unk> 1-gram: unknown words get log10 -100, as in KenLM.
TINY = """\\data\\
ngram 1=5
ngram 2=4
ngram 3=2

\\1-grams:
-1.0\t<s>\t-0.5
-1.2\t</s>
-0.8\ta\t-0.3
-0.9\tb\t-0.2
-1.5\tc\t-0.1

\\2-grams:
-0.4\t<s> a\t-0.25
-0.3\ta b\t-0.15
-0.35\tb a\t0
-0.6\tc b\t-0.05

\\3-grams:
-0.1\t<s> a b
-0.2\ta b c

\\end\\
"""


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def csr(sentences):
    """(offsets int64[n+1], words int32[...]) of a list of id arrays."""
    offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(s) for s in sentences])
    words = np.concatenate(sentences) if sentences else np.zeros(0, dtype=np.int32)
    return offsets, words.astype(np.int32)


def kenlm_state_after(model, words, bos=True):
    state = kenlm.State()
    (model.BeginSentenceWrite if bos else model.NullContextWrite)(state)
    for word in words:
        out = kenlm.State()
        model.BaseScore(state, word, out)
        state = out
    return state


# --- the embedded 3-gram model on the dev set, and the shared 5-gram model on dev + test -------------------


@pytest.fixture(scope="module", params=["embedded-lm3", "lm5"])
def model(request):
    """(NgramLM, kenlm.Model, Vocab, sentences as str, sentences as id arrays): the embedded model's trigram LM
    (``data/model``, truecased English) on the dev set's lowercased tokens, which leaves it many unknown words,
    or the shared 5-gram LM (skips without ``../shared``) on dev and test."""
    if request.param == "embedded-lm3":
        path, sentences = EMBEDDED_MODEL.parent / "lm.arpa.gz", data_lines("dev.tok.en")
    else:
        bible = request.getfixturevalue("bible")
        path = bible / f"{request.param}.arpa.gz"
        sentences = []
        for name in ("dev.tok.en", "test.tok.en"):
            sentences += (bible / name).read_text(encoding="utf-8").splitlines()
    vocab = Vocab(["a-word-the-lm-lacks"])
    lm = NgramLM.load(path, vocab)
    reference = kenlm.Model(str(path))
    # Words of dev/test that the LM lacks are added after loading: their ids
    # lie past the end of the LM's word map and must score as <unk>.
    ids = [vocab.ids(s.split()) for s in sentences]
    return lm, reference, vocab, sentences, ids


def test_every_token_scores_as_kenlm(model):
    lm, reference, vocab, sentences, ids = model
    assert lm.order == reference.order
    worst = 0.0
    for sentence, sentence_ids in zip(sentences, ids):
        expected = np.array([score for score, _, _ in reference.full_scores(sentence)])
        got = lm.score_tokens(sentence_ids)
        assert got.shape == expected.shape
        worst = max(worst, float(np.abs(got - expected).max()))
    assert worst < 1e-4


@pytest.mark.parametrize("bos, eos", [(True, True), (True, False), (False, True), (False, False)])
def test_sentence_totals_match_tokens_and_kenlm(model, bos, eos):
    lm, reference, vocab, sentences, ids = model
    # Empty sentences at both ends and in the middle, to exercise the lanes.
    ids = [ids[0][:0]] + ids[:500] + [ids[0][:0]] + ids[500:] + [ids[0][:0]]
    sentences = [""] + sentences[:500] + [""] + sentences[500:] + [""]
    totals = lm.score_sentences(*csr(ids), bos=bos, eos=eos)
    by_tokens = np.array([lm.score_tokens(s, bos, eos).sum() for s in ids])
    expected = np.array([reference.score(s, bos=bos, eos=eos) for s in sentences])
    np.testing.assert_allclose(totals, by_tokens, rtol=0, atol=1e-9)
    np.testing.assert_allclose(totals, expected, rtol=0, atol=1e-3)


def test_phrase_scores_start_from_the_null_context(model):
    lm, reference, vocab, sentences, ids = model
    phrases = [
        s[i : i + n] for s in ids[:60] for n in range(1, 6) for i in range(0, len(s) - n + 1, 2)
    ]
    got = lm.phrase_scores(*csr(phrases))
    expected = [reference.score(" ".join(vocab.words(p)), bos=False, eos=False) for p in phrases]
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-4)


def test_states_equal_kenlm_minimised_states(model):
    """pbmt's states partition histories exactly as KenLM's (minimised) states do,
    and scoring from a state equals KenLM scoring after the full history."""
    lm, reference, vocab, sentences, ids = model
    rng = np.random.default_rng(0)
    next_words = [str(w) for w in rng.choice(lm.words, 40, replace=False)]
    next_words += ["</s>", "the", "unseen-word"]
    next_ids = vocab.ids(next_words)
    kenlm_of_state: dict[int, kenlm.State] = {}
    state_of_kenlm: dict[kenlm.State, int] = {}
    histories = 0
    for sentence in sentences[:300]:
        words = sentence.split()
        state, kstate = lm.begin_state, kenlm_state_after(reference, [])
        for i, word in enumerate(words):
            assert kenlm_of_state.setdefault(state, kstate) == kstate
            assert state_of_kenlm.setdefault(kstate, state) == state
            histories += 1
            if i % 5 == 0:
                out = kenlm.State()
                for next_word, next_id in zip(next_words, next_ids):
                    expected = reference.BaseScore(kstate, next_word, out)
                    assert lm.score(state, next_id)[0] == pytest.approx(expected, abs=1e-4)
            _, state = lm.score(state, vocab.get(word))
            out = kenlm.State()
            reference.BaseScore(kstate, word, out)
            kstate = out
    # Minimisation merges histories: far fewer states than histories.
    assert len(kenlm_of_state) < 0.9 * histories


def test_histories_sharing_a_state_score_alike(model):
    lm, reference, vocab, sentences, ids = model
    rng = np.random.default_rng(1)
    by_state: dict[int, list[list[str]]] = {}
    for sentence in sentences[:400]:
        words = sentence.split()
        state = lm.begin_state
        for i, word in enumerate(words):
            _, state = lm.score(state, vocab.get(word))
            by_state.setdefault(state, []).append(words[: i + 1])
    shared = [h for h in by_state.values() if len({tuple(x[-(lm.order - 1) :]) for x in h}) > 1]
    assert len(shared) > 20
    next_words = [str(w) for w in rng.choice(lm.words, 30, replace=False)] + ["</s>"]
    for histories in shared[:40]:
        first, other = histories[0], histories[-1]
        a, b = kenlm_state_after(reference, first), kenlm_state_after(reference, other)
        out = kenlm.State()
        for word in next_words:
            assert reference.BaseScore(a, word, out) == pytest.approx(
                reference.BaseScore(b, word, out), abs=1e-4
            )


@njit
def _walk(lm, words):
    state = np.int64(lm.begin)
    total = 0.0
    for word in words:
        p, state = score_word(lm, state, np.int64(word))  # as pbmt's callers pass it: one specialisation
        total += p
    return total


def test_score_word_is_callable_from_other_kernels(model):
    lm, reference, vocab, sentences, ids = model
    for sentence_ids in ids[:20]:
        expected = lm.score_tokens(sentence_ids, eos=False).sum()
        assert _walk(lm.arrays, sentence_ids) == pytest.approx(expected, abs=1e-9)


# --- the tiny pruned model: brute force against kenlm ------------------------


def test_pruned_model_and_missing_unk_match_kenlm(tmp_path):
    path = write(tmp_path / "tiny.arpa", TINY)
    vocab = Vocab()
    lm = NgramLM.load(path, vocab)
    reference = kenlm.Model(str(path))
    words = ["a", "b", "c", "x"]
    for length in range(5):
        for sequence in itertools.product(words, repeat=length):
            sentence = " ".join(sequence)
            for bos, eos in [(True, True), (False, False), (False, True)]:
                expected = [s for s, _, _ in reference.full_scores(sentence, bos=bos, eos=eos)]
                got = lm.score_tokens(vocab.ids(sequence), bos=bos, eos=eos)
                np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5, err_msg=sentence)
    unk, _ = lm.score(0, vocab.get("x"))
    assert unk == pytest.approx(-100.0)
    assert lm.score(0, len(vocab) + 10) == lm.score(0, vocab.get("x"))


# --- binary cache ---------------------------------------------------------------


def test_second_load_maps_the_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("PBMT_CACHE_DIR", raising=False)
    path = write(tmp_path / "tiny.arpa", TINY)
    first = NgramLM.load(path, Vocab())
    second = NgramLM.load(path, Vocab())
    assert not first.from_cache and second.from_cache
    assert (tmp_path / "tiny.arpa.pbmt-cache" / "lm").is_dir()
    assert first.words == second.words and first.counts == second.counts == (5, 4, 2)
    for a, b in zip(first.arrays, second.arrays):
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
        else:
            assert a == b


def test_stale_cache_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("PBMT_CACHE_DIR", str(tmp_path / "cache"))
    path = write(tmp_path / "tiny.arpa", TINY)
    vocab = Vocab()
    before = NgramLM.load(path, vocab)
    assert (tmp_path / "cache").is_dir()
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    touched = NgramLM.load(path, vocab)
    assert not touched.from_cache
    write(path, TINY.replace("-0.2\ta b c", "-0.7\ta b c"))
    changed = NgramLM.load(path, vocab)
    assert not changed.from_cache
    abc = vocab.ids(["a", "b", "c"])
    assert before.score_tokens(abc, eos=False)[-1] == pytest.approx(-0.2)
    assert changed.score_tokens(abc, eos=False)[-1] == pytest.approx(-0.7)


def test_gzip_and_crlf_files_read_like_plain(tmp_path):
    plain = write(tmp_path / "tiny.arpa", TINY)
    packed = tmp_path / "tiny.arpa.gz"
    packed.write_bytes(gzip.compress(TINY.encode()))
    crlf = tmp_path / "crlf.arpa"
    crlf.write_bytes(TINY.replace("\n", "\r\n").encode())
    vocab = Vocab()
    expected = NgramLM.load(plain, vocab)
    sentence = vocab.ids("a b c b a".split())
    for path in (packed, crlf):
        lm = NgramLM.load(path, vocab)
        np.testing.assert_array_equal(lm.score_tokens(sentence), expected.score_tokens(sentence))



@pytest.mark.parametrize("blank", [" ", "\t", " \r", "\n"])
def test_lines_of_whitespace_alone_separate_sections_as_in_kenlm(tmp_path, blank):
    """A line of spaces or tabs between the sections is blank to KenLM (an editor's or a script's leftover)."""
    path = write(tmp_path / "spaced.arpa", TINY.replace("\n\n", f"\n{blank}\n"))
    reference = kenlm.Model(str(path))
    vocab = Vocab()
    lm = NgramLM.load(path, vocab)
    for sentence in ("a b c b a", "c a b", "b"):
        total = lm.score_tokens(vocab.ids(sentence.split())).sum()
        assert total == pytest.approx(reference.score(sentence), abs=1e-5)

# --- errors -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "old, new, line, message",
    [
        ("ngram 2=4", "ngram 2=5", 13, "line 3 declares 5 2-grams but this section has 4"),
        ("ngram 3=2", "ngram 3=1", 19, "declares 1 3-grams but this section has 2"),
        ("-0.3\ta b", "-0.3x\ta b", 15, "log10 probability '-0.3x' is not a number"),
        ("b a\t0", "b a\tzero", 16, "backoff 'zero' is not a number"),
        ("-0.6\tc b\t-0.05", "-0.6\tc b a\t-0.05", 17, "expected a log10 probability, 2 words"),
        ("-0.2\ta b c", "-0.2\ta b", 21, "found 3 fields"),
        ("-0.2\ta b c", "-0.2\tb b c", 21, "the context 'b b' of this 3-gram is not a 2-gram"),
        ("-0.2\ta b c", "-0.2\ta b d", 21, "the word 'd' is not a 1-gram"),
        ("-0.35\tb a\t0", "-0.35\ta b\t0", 16, "duplicate 2-gram"),
        ("-0.9\tb\t-0.2", "-0.9\ta\t-0.2", 10, "duplicate 1-gram 'a' (also on line 9)"),
        ("\\end\\\n", "", 22, "missing '\\end\\'"),
        ("\\end\\", "\\4-grams:", 23, "expected '\\end\\' after the 3-grams"),
        ("\\data\\\n", "", 1, "expected the ARPA header '\\data\\'"),
        ("ngram 3=2", "ngram three=2", 4, "expected 'ngram N=count'"),
        ("\\2-grams:", "\\two-grams:", 13, "expected the section header '\\2-grams:'"),
        ("-1.0\t<s>\t-0.5", "-1.0\t<S>\t-0.5", 6, "the 1-grams lack <s>"),
        ("-0.3\ta b", "0.3\ta b", 15, "log10 probability '0.3' is not a finite number of at most 0"),
        ("-0.3\ta b", "nan\ta b", 15, "log10 probability 'nan' is not a finite number"),
        ("-0.3\ta b", "-inf\ta b", 15, "log10 probability '-inf' is not a finite number"),
        ("b a\t0", "b a\t1e999", 16, "backoff '1e999' is not a finite number"),
        ("b a\t0", "b a\t1_0", 16, "backoff '1_0' is not a number"),
        ("ngram 3=2", "\n".join(f"ngram {k}={2 if k == 3 else 0}" for k in range(3, 129)), 129,
         "'ngram 128=': pbmt loads n-grams of order at most 127"),  # orders are int8 in the trie
    ],
)
def test_malformed_arpa_names_file_and_line(tmp_path, old, new, line, message):
    assert old in TINY
    path = write(tmp_path / "bad.arpa", TINY.replace(old, new, 1))
    with pytest.raises(FormatError) as caught:
        NgramLM.load(path, Vocab())
    assert caught.value.path == str(path)
    assert caught.value.line == line, str(caught.value)
    assert message in caught.value.reason


def test_a_byte_order_mark_is_not_part_of_the_header(tmp_path):
    vocab = Vocab()
    plain = NgramLM.load(write(tmp_path / "plain.arpa", TINY), vocab)
    marked = tmp_path / "bom.arpa"
    marked.write_bytes(b"\xef\xbb\xbf" + TINY.encode())
    sentence = vocab.ids("a b c b a".split())
    np.testing.assert_array_equal(NgramLM.load(marked, vocab).score_tokens(sentence), plain.score_tokens(sentence))


def test_kenlm_binary_file_is_refused_with_advice(tmp_path):
    path = tmp_path / "model.binary"
    path.write_bytes(b"mmap lm http://kheafield.com/code format version 5\n\x00\x01")
    with pytest.raises(PbmtError, match="KenLM binary file.*ARPA"):
        NgramLM.load(path, Vocab())


def test_bad_arguments_raise(tmp_path):
    lm = NgramLM.load(write(tmp_path / "tiny.arpa", TINY), Vocab())
    with pytest.raises(ValueError, match="offsets"):
        lm.score_sentences(np.array([0, 3]), np.array([3, 4], dtype=np.int32))
    with pytest.raises(ValueError, match="non-negative"):
        lm.score_tokens(np.array([3, -1]))

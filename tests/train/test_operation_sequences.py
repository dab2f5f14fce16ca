"""Operation sequences of aligned sentence pairs: the papers' examples by hand, and every alignment of small
pairs replayed back into the pair they came from."""

import itertools
import random
import re

import pytest

from pbmt.base.errors import FormatError
from pbmt.model.osm import cepts
from pbmt.train.osm import identical_singletons, operation_sequence, write_operation_corpus


def links(text):
    return [tuple(map(int, p.split("-"))) for p in text.split()]


# Durrani, Schmid & Fraser (2011), Figure 1 and Table 1 and 2's examples, and Moses's spelling of the operations
@pytest.mark.parametrize("src, tgt, alignment, expected", [
    # Generate, Insert Gap, Jump Back: "Er hat eine Pizza gegessen" -> "He has eaten a pizza"
    ("Er hat eine Pizza gegessen", "He has eaten a pizza", "0-0 1-1 4-2 2-3 3-4",
     "_TRANS_He_TO_Er _TRANS_has_TO_hat _INS_GAP_ _TRANS_eaten_TO_gegessen _JMP_BCK_1 _TRANS_a_TO_eine "
     "_TRANS_pizza_TO_Pizza"),
    # a discontinuous source cept: Continue Source Cept ("hat ... gelesen" -> "read")
    ("Er hat ein Buch gelesen", "He read a book", "0-0 1-1 4-1 2-2 3-3",
     "_TRANS_He_TO_Er _TRANS_read_TO_hat^_^gelesen _INS_GAP_ _CONT_CEPT_ _JMP_BCK_1 _TRANS_a_TO_ein "
     "_TRANS_book_TO_Buch"),
    # Jump Forward out of a filled gap to the rightmost generated word
    ("a b c d", "C A B D", "2-0 0-1 1-2 3-3",
     "_INS_GAP_ _TRANS_C_TO_c _JMP_BCK_1 _TRANS_A_TO_a _TRANS_B_TO_b _JMP_FWD_ _TRANS_D_TO_d"),
    # two open gaps (the one left behind inside a gap too): the second from the right is the farther one
    ("a b c d e", "E C A B D", "4-0 2-1 0-2 1-3 3-4",
     "_INS_GAP_ _TRANS_E_TO_e _JMP_BCK_1 _INS_GAP_ _TRANS_C_TO_c _INS_GAP_ _JMP_BCK_2 _TRANS_A_TO_a _TRANS_B_TO_b "
     "_JMP_FWD_ _JMP_BCK_1 _TRANS_D_TO_d"),
    # Generate Source Only (a source word linked to nothing) after the word before it, and at the start;
    # Generate Target Only in its place
    ("zu a X b", "A Y B", "1-0 3-2",
     "_INS_zu _TRANS_A_TO_a _INS_X _DEL_Y _TRANS_B_TO_b"),
    # a source word linked to nothing inside a gap comes when its left neighbour is generated
    ("a X b", "B A", "2-0 0-1",
     "_INS_GAP_ _TRANS_B_TO_b _JMP_BCK_1 _TRANS_A_TO_a _INS_X"),
    # many-to-one and one-to-many cepts: both sides joined in their order, a Continue Source Cept per further
    # source word
    ("kick the bucket", "stirb", "0-0 1-0 2-0", "_TRANS_stirb_TO_kick^_^the^_^bucket _CONT_CEPT_ _CONT_CEPT_"),
    ("sterben", "kick the bucket", "0-0 0-1 0-2", "_TRANS_kick^_^the^_^bucket_TO_sterben"),
])
def test_the_papers_examples(src, tgt, alignment, expected):
    assert " ".join(operation_sequence(src.split(), tgt.split(), links(alignment))) == expected


def test_generate_identical_for_singletons():
    pairs = [("Jehová dijo".split(), "Jehová said".split(), links("0-0 1-1")),
             ("Moisés dijo".split(), "Moisés said".split(), links("0-0 1-1")),
             ("Moisés y".split(), "Moses and".split(), links("0-0 1-1")),
             ("dijo X".split(), "dijo Y".split(), links("0-0 1-1"))]
    # Jehová: one link in the corpus, one-to-one and identical; Moisés: twice; dijo: identical once, once not
    assert identical_singletons(pairs) == {"Jehová"}
    ops = operation_sequence(*pairs[0], identical={"Jehová"})
    assert ops == ["_TRANS_SLF_", "_TRANS_said_TO_dijo"]


def replay(operations):
    """Rebuild the source side from operations: the source as a list of words and gap marks, a cursor where the
    next word goes (Insert Gap puts a mark before it, Jump Back takes the n-th mark from the right away and puts
    the cursor there, Jump Forward to the end); returns (source words, target words in order)."""
    source, cursor, pending, target = [], 0, [], []
    for op in operations:
        if op == "_INS_GAP_":
            source.insert(cursor, None)
            cursor += 1
        elif op == "_JMP_FWD_":
            cursor = len(source)
        elif m := re.fullmatch(r"_JMP_BCK_(\d+)", op):
            marks = [k for k, w in enumerate(source) if w is None]
            cursor = marks[-int(m.group(1))]
            del source[cursor]
        elif op == "_CONT_CEPT_":
            source.insert(cursor, pending.pop(0))
            cursor += 1
        elif m := re.fullmatch(r"_TRANS_(.*)_TO_(.*)", op):
            words = m.group(2).split("^_^")
            source.insert(cursor, words[0])
            cursor += 1
            pending = words[1:]
            target.extend(m.group(1).split("^_^"))
        elif op.startswith("_INS_"):
            source.insert(cursor, op[5:])
            cursor += 1
        else:
            assert op.startswith("_DEL_")
            target.append(op[5:])
    assert None not in source and not pending
    return source, target


def all_alignments(n_src, n_tgt):
    points = list(itertools.product(range(n_src), range(n_tgt)))
    for mask in range(1 << len(points)):
        yield [p for k, p in enumerate(points) if mask >> k & 1]


@pytest.mark.parametrize("n_src, n_tgt", [(1, 1), (2, 2), (3, 2), (2, 3), (3, 3), (4, 2)])
def test_every_alignment_replays_to_its_pair(n_src, n_tgt):
    """Every alignment of every pair up to these lengths (exhaustive): the operations rebuild the source
    sentence, and the target sentence wherever no cept's target words are apart (those are generated together,
    at the first one's place)."""
    src = [f"s{i}" for i in range(n_src)]
    tgt = [f"t{j}" for j in range(n_tgt)]
    for alignment in all_alignments(n_src, n_tgt):
        ops = operation_sequence(src, tgt, alignment)
        rebuilt, target = replay(ops)
        assert rebuilt == src, (alignment, ops)
        if all(t == tuple(range(t[0], t[-1] + 1)) for _, t in cepts(n_src, n_tgt, alignment)):
            assert target == tgt, (alignment, ops)


def test_long_permutations_replay():
    """Random one-to-one permutations of 9 words with some words unlinked replay to their pair."""
    rng = random.Random(3)
    src = [f"s{i}" for i in range(9)]
    for _ in range(300):
        order = list(range(9))
        rng.shuffle(order)
        alignment = [(i, j) for j, i in enumerate(order) if rng.random() > 0.2]
        ops = operation_sequence(src, [f"t{j}" for j in range(9)], alignment)
        assert replay(ops)[0] == src, (alignment, ops)


def test_operation_corpus_file(tmp_path):
    (tmp_path / "f").write_text("Er hat eine Pizza gegessen\nsí\n", encoding="utf-8")
    (tmp_path / "e").write_text("He has eaten a pizza\nyes\n", encoding="utf-8")
    (tmp_path / "a").write_text("0-0 1-1 4-2 2-3 3-4\n0-0\n", encoding="ascii")
    written = write_operation_corpus(tmp_path / "f", tmp_path / "e", tmp_path / "a", tmp_path / "ops")
    lines = (tmp_path / "ops").read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("_TRANS_He_TO_Er _TRANS_has_TO_hat _INS_GAP_") and lines[1] == "_TRANS_yes_TO_sí"
    assert (written.sentences, written.operations, written.identical) == (2, 8, 0)
    (tmp_path / "a").write_text("0-0 1-1 9-2\n0-0\n", encoding="ascii")
    with pytest.raises(FormatError, match="point 9-2 outside the sentence pair") as err:
        write_operation_corpus(tmp_path / "f", tmp_path / "e", tmp_path / "a", tmp_path / "ops")
    assert err.value.line == 1
    assert (tmp_path / "ops").read_text(encoding="utf-8").splitlines() == lines  # the old file is kept

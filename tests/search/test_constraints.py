"""Walls and zones (Koehn & Haddow 2009) in both searches and both reordering spaces, against brute force.

Every derivation the reordering space allows is enumerated independently of
the kernels (``test_decoder.all_derivations``, ``test_mon_swap.mon_swap_derivations``)
and kept when it respects the constraints as defined here, over the whole
block sequence: a block that translates a word after a wall comes when every
word before it (within the wall's zone) is translated; the blocks that touch a
zone follow one another. The decoder without pruning must list exactly those.
"""

import dataclasses

import numpy as np
import pytest

from pbmt.base.markup import Markup
from pbmt.model.model import SearchSettings, TranslationModel
from pbmt.search.decoder import decode
from pbmt.search.derivation import score_derivation
from pbmt.search.options import TranslationOptions
from test_decoder import all_derivations
from test_mon_swap import mon_swap_derivations

NO_PRUNING = dict(stack_size=10**6, beam_threshold=0.0, pop_limit=0)

CASES = {  # sentence, zones, walls
    "zone": ("a b c d e", ((1, 4),), ()),
    "wall": ("e d c b a", (), (2,)),
    "zone and wall": ("c a e b d", ((0, 2),), (3,)),
    "nested zones, local wall": ("a b c d e", ((1, 5), (2, 4)), (3,)),
    "quotes": ('a " b c " d', (), ()),
    "tags": ("a <b> b c </b> d", (), ()),
    "punctuation between placeholders": ("c %s : %s a", (), ()),
}


@pytest.fixture(scope="module")
def tiny(tiny_model_dir):
    return TranslationModel.load(tiny_model_dir / "moses.ini")


def respects(derivation, zones, walls) -> bool:
    """Whether the block sequence respects the walls (w, lo, hi) and zones (zs, ze)."""
    blocks = list(zip(derivation.src_start.tolist(), derivation.src_end.tolist()))
    for w, lo, hi in walls:
        for b, (s, e) in enumerate(blocks):
            if s < hi and e > w:
                done = {i for s2, e2 in blocks[:b + 1] for i in range(s2, e2)}
                if not set(range(lo, w)) <= done:
                    return False
    for zs, ze in zones:
        touching = [b for b, (s, e) in enumerate(blocks) if s < ze and e > zs]
        if touching and touching[-1] - touching[0] + 1 != len(touching):
            return False
    return True


def _options(model, sentence, zones, walls):
    words = sentence.split()
    markup = Markup(zones=zones, walls=walls).with_quote_zones(words).with_punctuation_walls(words)
    return TranslationOptions.of_words(model, words, markup)


@pytest.mark.parametrize("space", ["distortion 2", "unlimited", "mon-swap"])
@pytest.mark.parametrize("search", ["stack", "cube"])
@pytest.mark.parametrize("case", CASES)
def test_the_decoder_lists_exactly_the_derivations_that_respect_walls_and_zones(tiny, case, search, space):
    sentence, zones, walls = CASES[case]
    limit = {"distortion 2": 2, "unlimited": -1, "mon-swap": -1}[space]
    model = dataclasses.replace(tiny, settings=SearchSettings(
        **NO_PRUNING, search=search, distortion_limit=limit,
        reordering="mon-swap" if space == "mon-swap" else "distortion"))
    options = _options(model, sentence, zones, walls)
    assert len(options.zones) + len(options.walls) > 0
    space_all = mon_swap_derivations(options) if space == "mon-swap" else all_derivations(options, limit)
    allowed = [d for d in space_all if respects(d, options.zones.tolist(), options.walls.tolist())]
    assert 0 < len(allowed) < len(space_all)  # the constraints cut the space, and leave something
    found = decode(model, options, n_best=len(space_all) + 5)
    assert set(f.derivation for f in found) == set(allowed) and len(found) == len(allowed)
    scores = [score_derivation(f.derivation, options, model) @ model.weights for f in found]
    np.testing.assert_allclose([f.score for f in found], scores, atol=1e-9)


def test_quotes_make_a_zone_with_walls_inside_their_marks(tiny):
    options = _options(tiny, 'a " b c " d', (), ())
    assert options.zones.tolist() == [[1, 5]]
    assert options.walls.tolist() == [[2, 1, 5], [4, 1, 5]]
    assert len(_options(tiny, 'a " b c d', (), ()).zones) == 0  # an unpaired mark makes nothing


@pytest.mark.parametrize("sentence", ["c ` d ' b a", "c ' d ' b a"])
def test_the_best_derivation_keeps_a_quote_zone_whole_where_unconstrained_it_moves_the_closing_mark(tiny, sentence):
    """GNU's `...' and straight '...' quotes: the best derivation of the whole space translates the closing mark
    after the words that follow it (``c ` d b a '``, as `%s': %s` came out `%s %s':`); with the quote zone the
    decoder's best is the best derivation that keeps the zone whole, enumerated by brute force."""
    model = dataclasses.replace(tiny, settings=SearchSettings(**NO_PRUNING, distortion_limit=-1))
    options = _options(model, sentence, (), ())
    assert options.zones.tolist() == [[1, 4]]
    zones, walls = options.zones.tolist(), options.walls.tolist()
    space = all_derivations(options, -1)
    totals = [score_derivation(d, options, model) @ model.weights for d in space]
    assert not respects(space[int(np.argmax(totals))], zones, walls)
    allowed = [k for k, d in enumerate(space) if respects(d, zones, walls)]
    best = max(allowed, key=lambda k: totals[k])
    found = decode(model, options, n_best=1)[0]
    assert found.derivation == space[best]
    assert found.score == pytest.approx(totals[best], abs=1e-9)


@pytest.mark.parametrize("sentence, walls", [
    ("error al leer ` %s ' : %s", [[6, 0, 8], [7, 0, 8]]),  # after a closing mark, before a placeholder
    ("c %s , {0} a", [[1, 0, 5], [2, 0, 5], [3, 0, 5]]),  # between two placeholders
    ("c %s , a %s", []), ("c a : %s", []), ("%s :", []),  # a word on one side, or no token after it
])
def test_a_punctuation_mark_between_protected_tokens_is_walled_in(tiny, sentence, walls):
    """Walls at the mark, before it and after it, as Moses's -monotone-at-punctuation puts them for the mark (the
    mark's wall inside a quote zone, like the zone's own, holds within the zone)."""
    options = _options(tiny, sentence, (), ())
    assert [w for w in options.walls.tolist() if w[1:] == [0, len(sentence.split())]] == walls


def test_without_constraints_nothing_is_cut(tiny):
    model = dataclasses.replace(tiny, settings=SearchSettings(**NO_PRUNING, distortion_limit=-1))
    options = TranslationOptions.of_words(model, "a b c d".split(), Markup())
    assert len(decode(model, options, n_best=10**5)) == len(all_derivations(options, -1))

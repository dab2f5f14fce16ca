"""Command-line options several tuners share (``pbmt.tune.tuner.Option``); each tuner's own sit in its module."""

from __future__ import annotations

from pathlib import Path

from pbmt.base.files import parse_finite
from pbmt.tune.pool import DEDUP
from pbmt.tune.loop import LoopSettings
from pbmt.tune.tuner import TUNER_DEFAULT, Group, Option


def number_or_none(text: str) -> float | None:
    """An option's number, or None for 'none'."""
    return None if text == "none" else parse_finite(text)


number_or_none.__name__ = "number or 'none'"

LOOP = Group("the decode-optimise loop (mert, lattice-mert, pro, apro, listnet, mira, --plugins tuners)")
RANKING = Group("PRO, APRO", "rank candidate pairs by a sentence gain (--gain): PRO (Hopkins & May, 2011) samples "
                "pairs for a logistic regression, APRO (Dreyer & Dong, 2015) takes all pairs in a ranking SVM; the "
                "new weights may interpolate with the previous ones (--interpolation). The papers' settings: --gain "
                "bleu+1 --interpolation 0.1")
MERT = Group("MERT", "Och's exact line search on the pool; weights L1-normalised and UnknownWordPenalty0 fixed, as in "
             "Moses. Against weights that fit the pool and decode word salad: --keep-signs, --max-step, "
             "--significance and --keep")

DEDUP_OPTION = Option(("--dedup",), "pool candidates are distinct derivations (string + segmentation) or strings",
                      choices=DEDUP, default=LoopSettings.dedup)
ITERATIONS = Option(("--iterations",), "at most this many decode-optimise iterations", group=LOOP,
                    default=LoopSettings.max_iterations, type=int)
KEEP = Option(("--keep",), "which weights moses.ini gets: those whose decode had the highest dev BLEU (default), the "
              "last (the optimiser's, mert-moses.pl's), or, costmargin and perceptron only, the pass's whose decode "
              "had the highest averaged sentence BLEU+1 (the other reading of Tillmann & Zhang)",
              default=None, choices=("best-dev", "best-sentence-bleu", "last"))
GAIN = Option(("--gain",), "what the tuner maximises: PRO and APRO rank a sentence's candidates by BLEU+1 with the "
              "unclipped brevity penalty, which does not favour short translations, or by BLEU+1, the papers' "
              "(default: PRO {Pro.gain}, APRO {Apro.gain}); SampleRank scores a batch by its smoothed BLEU, the "
              "paper's, or the same with the unclipped brevity penalty (default: {SampleRank.gain}); "
              "docs/tuning-results.md", "gain", default=TUNER_DEFAULT,
              choices=("bleu+1", "bleu+1-unclipped", "batch-bleu", "batch-bleu-unclipped"))
INTERPOLATION = Option(("--interpolation",), "new weights = Psi * learned + (1 - Psi) * previous, Psi in [0, 1] "
                       "(default: PRO {Pro.interpolation}, as Hopkins & May; APRO {Apro.interpolation:g}, none; MIRA "
                       "{Mira.interpolation:g}, its weights L1-normalised first, then scaled to the previous norm; MERT "
                       "{Mert.interpolation:g}, none, but {Mert.DAMPED_INTERPOLATION:g} in the MON/SWAP space and on a "
                       "dev set of fewer than {Mert.SMALL_DEV_SENTENCES} sentences; MERT's weights L1-normalised first)", "interpolation", default=TUNER_DEFAULT, type=float,
                       metavar="PSI")
SPARSE_L1 = Option(("--sparse-l1",), "PRO, APRO: L1 penalty on the weights of sparse features (those an n-best list "
                   "gives as 'name= value'), which leaves a feature with little evidence at exactly 0; the dense "
                   "weights have none (docs/sparse-features.md)", "l1", RANKING, type=float, metavar="L1",
                   dest="sparse_l1")
RESTARTS = Option(("--restarts",), "random starting points besides the starting weights (default: {Mert.restarts}, "
                  "but 0 on a dev set of fewer than {Mert.SMALL_DEV_SENTENCES} sentences, whose pool cannot tell a "
                  "restart's optimum from one that decodes badly; lattice-mert {LatticeMert.restarts}, as each of its "
                  "climbs searches all the dev set's graphs)",
                  "restarts", MERT, default=TUNER_DEFAULT, type=int)
MERT_OPTIONS = (
    RESTARTS,
    Option(("--random-directions",), "random directions searched in each round besides the coordinate directions",
           "random_directions", MERT, type=int),
    Option(("--significance",), "the best random restart replaces the climb from the previous weights only if its "
           "pool BLEU is better at this level under paired bootstrap resampling (0: whenever it is higher, as Moses)",
           "significance", MERT, type=float),
    Option(("--max-step",), "a line search looks at most this many times the weights' L1 norm away from them "
           "('none': Och's unbounded search, which can reach weights that fit the pool and decode word salad)",
           "max_step", MERT, type=number_or_none, metavar="X"),
    Option(("--keep-signs",), "no weight changes sign (each line search stops where a weight would cross zero); a "
           "weight flipped on the pool, e.g. one rewarding swaps, can decode word salad", "keep_signs", MERT, boolean=True),
)

SPARSE = Group("sparse features")
SPARSE_MIN_SENTENCES = Option(("--sparse-min-sentences",), "PRO, APRO, MIRA: tune only the sparse features that are "
                              "in the candidates of at least K dev sentences of the pool; the others keep their "
                              "weights (0 for a feature new to the model), since a weight seen in one or two "
                              "sentences fits them rather than the task; 1: every feature "
                              "(docs/sparse-features.md)", "min_sentences", SPARSE, type=int, metavar="K",
                              dest="sparse_min_sentences")
FEATURES = Option(("--features",), "dense: the model's dense weights. binary (costmargin): binary block features "
                  "trained on a training subset given as --src/--refs, the dense weights fixed; --out is then a model "
                  "folder. boundary (samplerank): the dense weights and target word-class bigrams across phrase "
                  "boundaries (or the model's own sparse features). distortion (samplerank): the dense weights and a "
                  "weight per bin of jumps. See docs/sparse-features.md", group=SPARSE, default="dense",
                  choices=("dense", "binary", "boundary", "distortion"))
ORACLE_BEAM = Option(("--oracle-beam",), "binary: hypotheses per stack of the BLEU oracle search", "oracle_beam",
                     SPARSE, type=int)
WORD_CLASSES = Option(("--word-classes",), "boundary: the class file, 'word<TAB>class' per line (default: the "
                      "model's own sparse features, else word-classes.txt beside moses.ini, which pbmt train "
                      "writes)", group=SPARSE, default=None, type=Path, metavar="FILE")

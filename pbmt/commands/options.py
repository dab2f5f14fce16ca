"""What every verb's parser shares: defaults read from the code, the ranges of numeric options, ``--threads``.

One concept has one flag across the verbs (``tests/test_cli_vocabulary.py``
holds the table and checks every parser against it).
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect

from pbmt.base.parallel import available_cores
from pbmt.model import MAX_ORDER
from pbmt.train import MAX_SUPPORTED_LENGTH


def visible_flags(action: argparse.Action) -> list[str]:
    """The option strings of ``action`` that its help shows (none when its help is suppressed)."""
    return [] if action.help == argparse.SUPPRESS else list(action.option_strings)


def default_of(owner, name: str):
    """The default of parameter or field ``name`` of ``owner`` (a class's constructor, a dataclass or a
    function), so a command-line default is written once, where the code that uses it is."""
    if dataclasses.is_dataclass(owner):
        field = {f.name: f for f in dataclasses.fields(owner)}[name]
        return field.default
    return inspect.signature(owner).parameters[name].default


def preset_values(args: argparse.Namespace, preset: dict, owner, options: dict[str, str]) -> dict:
    """The parameters of ``owner`` (a class) that a preset can set, by name: for each option (``options``: its
    argparse destination -> the parameter it sets, parsed to None when not given) the value given, else the
    ``preset``'s, else ``owner``'s default."""
    return {parameter: getattr(args, dest) if getattr(args, dest) is not None
            else preset.get(parameter, default_of(owner, parameter)) for dest, parameter in options.items()}


@dataclasses.dataclass(frozen=True)
class Range:
    """The values a numeric option takes: ``low`` to ``high`` (None: no bound), each end included unless
    ``open_low``/``open_high`` says it is excluded."""

    low: float | None = None
    high: float | None = None
    open_low: bool = False
    open_high: bool = False

    def __contains__(self, value: float) -> bool:
        if self.low is not None and (value < self.low or (self.open_low and value == self.low)):
            return False
        return self.high is None or (value < self.high or (not self.open_high and value == self.high))

    def __str__(self) -> str:
        low, high = number_text(self.low), number_text(self.high)
        if self.high is None:
            return "positive" if self.low == 0 and self.open_low else f"at least {low}"
        if not (self.open_low or self.open_high):
            return f"{low} to {high}"
        return f"in {'(' if self.open_low else '['}{low}, {high}{')' if self.open_high else ']'}"


def number_text(value: float | None) -> str:
    """A bound (or a value given against it) as README.md writes it: whole numbers in digits with thousands
    separators, others (and a float too large to show every digit of, 1e20) as ``:g``."""
    if value is None:
        return ""
    whole = isinstance(value, int) or (float(value).is_integer() and abs(value) < 1e15)
    return f"{int(value):,}" if whole else f"{value:g}"


COUNT, NON_NEGATIVE, POSITIVE, FRACTION = Range(1), Range(0), Range(0, open_low=True), Range(0, 1)

# The range of every numeric option of every verb, by argparse destination (one concept, one range across the
# verbs; RANGE_OF_VERB holds the few whose meaning differs in one verb). ``pbmt.commands.cli`` checks every value parsed
# against it; tests/test_fuzz.py draws values from both sides of each range and README.md lists them.
RANGES: dict[str, Range] = {
    # counts: at least 1
    **dict.fromkeys(["n_best_size", "stack", "ttable_limit", "workers", "options_per_span", "trace_every",
                     "sentences", "iterations", "pro_samples", "pro_keep", "sgd_passes",
                     "oracle_beam", "epochs", "held_out", "batch_size", "samples_per_sentence", "chains",
                     "max_batches", "eval_every", "min_count", "prune", "shard_size", "max_queue", "max_words",
                     "max_sentences", "threads", "bootstrap", "sparse_min_sentences"], COUNT),
    # at least 0: a seed, a count where 0 means none (or no limit), a time
    **dict.fromkeys(["seed", "steps_per_sentence", "burn_in_per_sentence", "pop_limit", "restarts",
                     "random_directions", "perturbation", "decay", "word_class_count", "shutdown_timeout",
                     "flat_weight", "temperature", "sparse_l1"], NON_NEGATIVE),
    # positive: rates, scales, temperatures, steps
    **dict.fromkeys(["anneal", "apro_c", "learning_rate", "samplerank_c", "samplerank_step", "gain_scale",
                     "score_range", "max_step", "discount_fallback", "lattice_margin"], POSITIVE),
    **dict.fromkeys(["beam_threshold", "pro_min_difference", "interpolation"], FRACTION),
    "significance": Range(0, 1, open_high=True),
    "mira_c": POSITIVE, "mira_epochs": COUNT, "mira_decay": Range(0, 1, open_low=True),
    "distortion_limit": Range(-1),  # -1: no limit
    "passes": Range(2),  # the two seed decodings of the relevant-set tuners
    "max_phrase_length": Range(1, MAX_SUPPORTED_LENGTH),
    **dict.fromkeys(["order", "lm_order", "osm"], Range(1, MAX_ORDER)),  # n-gram orders
    "port": Range(0, 65535),  # 0: any free port
    "baseline": Range(0, 100),  # BLEU in percent
}
#: Most steps of one sentence's sampler: it keeps 17 bytes a step (the temperature schedule, the steps it records),
#: 170 MB at this bound, about an hour of one sentence's sampling at thousands of steps a second.
MAX_STEPS = 10_000_000
RANGE_OF_VERB: dict[tuple[str, str], Range] = {
    # translate --documents: 0 steps keeps the decoder's translation
    ("sample", "steps_per_sentence"): Range(1, MAX_STEPS),
    ("tune", "temperature"): POSITIVE,  # SampleRank's; sample's 0 is greedy
}


def range_of(verb: str, dest: str) -> Range | None:
    """The declared range of option ``dest`` of ``verb`` (None: undeclared)."""
    return RANGE_OF_VERB.get((verb, dest), RANGES.get(dest))


def add_threads_argument(parser, what: str = "decode sentences") -> argparse.Action:
    """``--threads N``: how many threads of this process ``what``, sharing one model in memory (default: the
    cores this process may use)."""
    return parser.add_argument("--threads", type=int, default=available_cores(),
                               help=f"{what} on this many threads sharing one model (by default as many as "
                               "the cores this process may use; with --workers, one in each worker process)")


"""Claims (issue 31): on real software messages, translated from Spanish to
English by a model trained with ``pbmt train``,

- the segments whose protected tokens (printf and positional placeholders,
  brace fields, tags, entities, URLs, e-mail addresses, paths, accelerator
  marks) come out exactly as in the source, where the reference keeps them,
  are at least 99%, per class and overall;
- at least 90% of the messages that start lowercase (source and reference)
  stay lowercase;
- cased BLEU 13a and BLEU on whitespace tokens do not fall;
- pbmt is far ahead of Moses's own scripts (``tokenizer.perl`` then
  ``detokenizer.perl`` with no translation between, and the truecaser
  scripts) at keeping the same tokens.

Data: the corpus of ``benchmarks/gettext_corpus.py`` (``--corpus``: its
``train``, ``dev`` and ``test`` files): the model is trained on the training
split by ``pbmt train`` with Moses's tokeniser (eflomal alignment, 3-gram LM,
no word classes), the test split is translated untuned and, with ``--tune``,
with weights tuned by MERT on the dev split. ``--pbmt DIR`` runs the pbmt of another checkout (its
source tree on ``PYTHONPATH``), so that the same script measures a baseline
commit and a later one side by side.

A segment counts for a class when its source has tokens of that class and
its reference has the same tokens (as a multiset; for accelerators, the same
number of marks ``_`` and ``&`` before a letter, at the start of a word or
inside it as in ``F_ull``: the letter marked is translated);
it keeps them when the output has exactly that multiset. Overall: the
segments counted for any class, kept when every class they count for is
kept. Moses's scripts and pbmt's own ``tokenize``/``detokenize`` are run on
the test source alone (no translation), over the same segments, with the
source as the expected text.

    python benchmarks/bench_real_text.py --corpus /work/realtext/corpus --work /work/realtext/RUN \\
        [--pbmt DIR] [--train-option=--placeholders] [--workers N] [--tune [--tune-option=--iterations=6]] [--json FILE]

Each step keeps its output in ``--work`` and is skipped when run again
(``pbmt train`` resumes by itself). docs/real-text.md has the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import sacrebleu

REPO = Path(__file__).resolve().parents[1]
MOSES = REPO.parent / "shared" / "tools" / "moses" / "scripts"

# Order matters: each class's matches are blanked out before the next class
# is looked for, so a URL's path is not a path, an entity's '&' is not an
# accelerator and a tag's '/' is not a path.
CLASSES: list[tuple[str, re.Pattern]] = [
    ("url", re.compile(r"\b(?:https?|ftp)://[^\s<>\"'«»]*[^\s<>\"'«».,;:!?)\]]|\bwww\.[\w-]+(?:\.[\w-]+)+(?:/[^\s<>\"'«»]*[^\s<>\"'«».,;:!?)\]])?")),
    ("email", re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")),
    ("tag", re.compile(r"</?[A-Za-z][\w:.-]*(?:\s+[\w:.-]+(?:\s*=\s*(?:\"[^\"]*\"|'[^']*'|[^\s>]+))?)*\s*/?>")),
    ("entity", re.compile(r"&(?:[A-Za-z][A-Za-z0-9]*|#[0-9]+|#[xX][0-9A-Fa-f]+);")),
    ("printf", re.compile(r"%(?:\([\w.-]+\))?(?:[0-9]+\$)?[-+#0']*(?:[0-9]+|\*)?(?:\.(?:[0-9]+|\*))?"
                          r"(?:hh|h|ll|l|L|q|j|z|t|I64|I32|I)?[diouxXeEfFgGaAcspn%]|%<PRI[diouxX](?:8|16|32|64)>")),
    ("positional", re.compile(r"%L?[0-9]+")),
    ("brace", re.compile(r"\{[A-Za-z_][\w.]*(?:![rsa])?(?::[^{}\s]*)?\}|\{[0-9]+(?::[^{}\s]*)?\}")),
    ("path", re.compile(r"(?<![\w.:/<])(?:~|\.{1,2})?/(?:[\w.+@-]+/)*[\w.+@-]*[\w+@-]/?|(?<![\w/])~/")),
    ("accelerator", re.compile(r"(?<![_&])[_&](?=[^\W\d_])")),
]
CLASS_NAMES = [name for name, _ in CLASSES]
#: Code in documentation (manual pages), counted as the classes above but apart from their "all": a manual page's
#: name with its section or a call, ``stat(2)``, ``open()``; a command-line option, ``-H``, ``--follow``.
CODE_CLASSES: list[tuple[str, re.Pattern]] = [
    ("page or call", re.compile(r"(?<![\w.])[^\W\d][\w.-]*\((?:[0-9][a-z]*)?\)")),
    ("option", re.compile(r"(?<![\w-])--?[^\W\d_][\w-]*")),
]
#: quote marks, each opening one with the marks that may close it: GNU's `%s', '%s', "%s", «%s», “%s”, ‘%s’, „%s“
QUOTE_PAIRS = {"`": "'", "'": "'", '"': '"', "«": "»", "‹": "›", "“": "”", "‘": "’", "„": "“”"}
_PLACEHOLDER = "|".join(f"(?:{pattern.pattern})" for name, pattern in CLASSES
                        if name in ("printf", "positional", "brace"))
_CLOSING = "".join(sorted(set("".join(QUOTE_PAIRS.values()))))
QUOTED = re.compile(f"([{''.join(QUOTE_PAIRS)}])((?:{_PLACEHOLDER})+)([{_CLOSING}])")


def protected_tokens(text: str, classes: list[tuple[str, re.Pattern]] = CLASSES) -> dict[str, Counter]:
    """The protected tokens of a text by class, as multisets (accelerators: the marks only)."""
    found: dict[str, Counter] = {}
    for name, pattern in classes:
        tokens = pattern.findall(text)
        if tokens:
            found[name] = Counter(tokens)
            text = pattern.sub(lambda m: " " * len(m.group()), text)
    return found


def quoted_placeholders(text: str) -> Counter:
    """The placeholders written between a pair of quote marks with nothing else (`%s', «%s», "%1"), as a
    multiset: a quote mark moved or spaced away (`%s %s', “%s ”) takes its placeholder out."""
    return Counter(m.group(2) for m in QUOTED.finditer(text) if m.group(3) in QUOTE_PAIRS[m.group(1)])


def quoted_rate(sources: list[str], references: list[str], outputs: list[str]) -> dict:
    """Segments whose source and reference quote the same placeholders (any marks), and how many outputs
    quote exactly those."""
    wanted = [(k, quoted_placeholders(s)) for k, s in enumerate(sources)]
    counted = [(k, want) for k, want in wanted if want and quoted_placeholders(references[k]) == want]
    return {"segments": len(counted), "kept": sum(quoted_placeholders(outputs[k]) == want for k, want in counted)}


def starts_lowercase(text: str) -> bool:
    return bool(text) and text[0].isalpha() and text[0].islower()


def keep_rates(sources: list[str], references: list[str], outputs: list[str],
               classes: list[tuple[str, re.Pattern]] = CLASSES) -> dict:
    """Per class and overall: segments counted and segments whose output keeps the source's tokens."""
    counted = Counter()
    kept = Counter()
    for source, reference, output in zip(sources, references, outputs, strict=True):
        want, ref, got = (protected_tokens(text, classes) for text in (source, reference, output))
        shared = [name for name in want if ref.get(name) == want[name]]
        for name in shared:
            counted[name] += 1
            kept[name] += got.get(name) == want[name]
        if shared:
            counted["all"] += 1
            kept["all"] += all(got.get(name) == want[name] for name in shared)
    return {name: {"segments": counted[name], "kept": kept[name]} for name in [*(n for n, _ in classes), "all"]}


def lowercase_rate(sources: list[str], references: list[str], outputs: list[str]) -> dict:
    """Messages whose source and reference start with a lowercase letter, and how many outputs do too."""
    counted = [k for k, (s, r) in enumerate(zip(sources, references)) if starts_lowercase(s) and starts_lowercase(r)]
    return {"segments": len(counted), "kept": sum(starts_lowercase(outputs[k]) for k in counted)}


def scores(sources: list[str], references: list[str], outputs: list[str]) -> dict:
    return {"bleu_13a": sacrebleu.corpus_bleu(outputs, [references]).score,
            "bleu_whitespace": sacrebleu.corpus_bleu(outputs, [references], tokenize="none").score,
            "protected": keep_rates(sources, references, outputs),
            "code": keep_rates(sources, references, outputs, CODE_CLASSES),
            "lowercase": lowercase_rate(sources, references, outputs),
            "quoted": quoted_rate(sources, references, outputs)}


def load() -> str:
    return os.getloadavg().__repr__()


def run(command: list[str], stdin: Path | None = None, stdout: Path | None = None, env: dict | None = None) -> float:
    """Run a command (its output to a file, if given); returns its wall time in seconds."""
    start = time.perf_counter()
    with open(stdin or os.devnull, "rb") as fin, open(stdout, "wb") if stdout else open(os.devnull, "wb") as fout:
        subprocess.run(command, stdin=fin, stdout=fout, check=True, env=env)
    return time.perf_counter() - start


def pbmt_command(code: Path) -> tuple[list[str], dict]:
    """``python -m pbmt`` running the source tree ``code``: ``-P`` keeps the working folder off ``sys.path``,
    where a checkout's own ``pbmt`` would come before ``PYTHONPATH``'s."""
    return [sys.executable, "-P", "-m", "pbmt"], {**os.environ, "PYTHONPATH": str(code)}


def tokeniser_options(pbmt: list[str], env: dict) -> list[str]:
    """Moses's tokeniser for pbmt train: the default since ``--tokenized`` came, ``--tokenizer moses`` before."""
    usage = subprocess.run([*pbmt, "train", "--help"], capture_output=True, text=True, env=env, check=True).stdout
    return [] if "--tokenized" in usage else ["--tokenizer", "moses"]


def moses_round_trips(corpus: Path, work: Path) -> dict[str, Path]:
    """Moses's tokenizer/detokenizer (and truecaser) on the test source, with no translation between."""
    tok, detok = MOSES / "tokenizer" / "tokenizer.perl", MOSES / "tokenizer" / "detokenizer.perl"
    recaser = MOSES / "recaser"
    out = work / "moses"
    out.mkdir(parents=True, exist_ok=True)
    protected = MOSES / "tokenizer" / "basic-protected-patterns"
    variants = {"tokenizer.perl → detokenizer.perl": []}
    if protected.exists():
        variants["tokenizer.perl -protected basic-protected-patterns → detokenizer.perl"] = ["-protected", str(protected)]
    results = {}
    for k, (label, extra) in enumerate(variants.items()):
        tokenised, restored = out / f"test.tok{k}.es", out / f"test.round{k}.es"
        if not restored.exists():
            run(["perl", str(tok), "-q", "-l", "es", "-threads", "1", *extra], corpus / "test.es", tokenised)
            run(["perl", str(detok), "-q", "-l", "es"], tokenised, restored)
        results[label] = restored
    model = out / "truecase-model.es"
    if not model.exists():
        train_tok = out / "train.tok.es"
        run(["perl", str(tok), "-q", "-l", "es", "-threads", "1", *extra], corpus / "train.es", train_tok)
        run(["perl", str(recaser / "train-truecaser.perl"), "--model", str(model), "--corpus", str(train_tok)])
    restored = out / "test.truecase-round.es"
    if not restored.exists():
        truecased, detruecased = out / "test.tc.es", out / "test.detc.es"
        run(["perl", str(recaser / "truecase.perl"), "--model", str(model)], out / f"test.tok{k}.es", truecased)
        run(["perl", str(recaser / "detruecase.perl")], truecased, detruecased)
        run(["perl", str(detok), "-q", "-l", "es"], detruecased, restored)
    results[f"{list(variants)[-1].split(' →')[0]} → truecase.perl → detruecase.perl → detokenizer.perl"] = restored
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, required=True, help="folder written by gettext_corpus.py")
    parser.add_argument("--work", type=Path, required=True, help="model, outputs and figures of this run")
    parser.add_argument("--pbmt", type=Path, default=REPO, help="the pbmt source tree to run (default: this one)")
    parser.add_argument("--workers", type=int, default=1, help="translate and tune with N processes (default: 1)")
    parser.add_argument("--train-option", action="append", default=[], metavar="OPTION",
                        help="pass OPTION to pbmt train, e.g. --train-option=--placeholders (repeatable)")
    parser.add_argument("--tune", action="store_true", help="also tune with MERT on the dev split and translate again")
    parser.add_argument("--tune-option", action="append", default=[], metavar="OPTION",
                        help="pass OPTION to pbmt tune, e.g. --tune-option=--iterations=6 (repeatable)")
    parser.add_argument("--json", type=Path, help="write the figures here too (default: WORK/figures.json)")
    args = parser.parse_args()

    corpus, work = args.corpus.resolve(), args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    pbmt, env = pbmt_command(args.pbmt.resolve())
    sources = (corpus / "test.es").read_text(encoding="utf-8").splitlines()
    references = (corpus / "test.en").read_text(encoding="utf-8").splitlines()
    commit = subprocess.run(["git", "-C", str(args.pbmt), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "unknown"
    figures: dict = {"pbmt": str(args.pbmt), "commit": commit, "train_options": args.train_option,
                     "tune_options": args.tune_option if args.tune else None, "test_segments": len(sources), "steps": {}, "systems": {}}

    def step(name: str, command: list[str], done: Path, stdin: Path | None = None, stdout: Path | None = None):
        if done.exists():
            return
        before = load()
        seconds = run(command, stdin, stdout, env)
        figures["steps"][name] = {"seconds": round(seconds, 1), "load_before": before, "load_after": load()}
        print(f"{name}: {seconds:.0f} s (load {before} -> {load()})", file=sys.stderr)

    model = work / "model"
    step("train", [*pbmt, "train", "-q", "--src", str(corpus / "train.es"), "--tgt", str(corpus / "train.en"),
                   "--out", str(model), *tokeniser_options(pbmt, env), "--lm-order", "3", "--word-class-count", "0",
                   *args.train_option],
         model / "moses.ini")
    step("translate", [*pbmt, "translate", "-q", "-f", str(model / "moses.ini"), "-i", str(corpus / "test.es"),
                       "-o", str(work / "test.untuned.en"), "--workers", str(args.workers)], work / "test.untuned.en")
    outputs = {"pbmt, untuned": work / "test.untuned.en"}
    if args.tune:
        tuned = work / "tuned"
        step("tune", [*pbmt, "tune", "-q", "-f", str(model / "moses.ini"), "--src", str(corpus / "dev.es"),
                      "--refs", str(corpus / "dev.en"), "--out", str(tuned), "--workers", str(args.workers),
                      *args.tune_option],
             tuned / "moses.ini")
        step("translate tuned", [*pbmt, "translate", "-q", "-f", str(tuned / "moses.ini"), "-i",
                                 str(corpus / "test.es"), "-o", str(work / "test.tuned.en"), "--workers",
                                 str(args.workers)], work / "test.tuned.en")
        outputs["pbmt, MERT-tuned"] = work / "test.tuned.en"
    for label, path in outputs.items():
        figures["systems"][label] = scores(sources, references, path.read_text(encoding="utf-8").splitlines())

    # Round trips with no translation: the expected output is the source itself.
    step("pbmt tokenize", [*pbmt, "tokenize", "-f", str(model / "moses.ini"), "-i", str(corpus / "test.es"),
                           "-o", str(work / "test.tok.es")], work / "test.tok.es")
    step("pbmt detokenize", [*pbmt, "detokenize", "-f", str(model / "moses.ini"), "--side", "source", "-i",
                             str(work / "test.tok.es"), "-o", str(work / "test.round.es")], work / "test.round.es")
    round_trips = {"pbmt tokenize → pbmt detokenize (source side)": work / "test.round.es",
                   **moses_round_trips(corpus, work)}
    figures["round_trips"] = {}
    for label, path in round_trips.items():
        restored = path.read_text(encoding="utf-8").splitlines()
        figures["round_trips"][label] = {"protected": keep_rates(sources, references, restored),
                                         "code": keep_rates(sources, references, restored, CODE_CLASSES),
                                         "lowercase": lowercase_rate(sources, references, restored),
                                         "quoted": quoted_rate(sources, references, restored),
                                         "identical": sum(a == b for a, b in zip(sources, restored))}
    target = args.json or work / "figures.json"
    target.write_text(json.dumps(figures, indent=1, ensure_ascii=False) + "\n")
    print_table(figures)


def share(counts: dict) -> str:
    return f"{100 * counts['kept'] / counts['segments']:.1f}% ({counts['kept']}/{counts['segments']})" \
        if counts["segments"] else "–"


def print_table(figures: dict) -> None:
    """The figures as Markdown tables, as docs/real-text.md shows them."""
    rows = {**figures["systems"], **figures["round_trips"]}
    print(f"pbmt {figures['commit']}, {figures['test_segments']} test segments\n")
    columns = CLASS_NAMES + ["all", "lowercase kept", "quoted kept"]
    print("| | " + " | ".join(columns) + " | BLEU 13a | BLEU whitespace |")
    print("|---" * (len(CLASS_NAMES) + 6) + "|")
    for label, row in rows.items():
        cells = [share(row["protected"][name]) for name in [*CLASS_NAMES, "all"]] + [share(row["lowercase"])] + \
            [share(row["quoted"]) if "quoted" in row else "–"]
        bleu = [f"{row['bleu_13a']:.2f}", f"{row['bleu_whitespace']:.2f}"] if "bleu_13a" in row else ["", ""]
        print(f"| {label} | " + " | ".join(cells + bleu) + " |")
    code = [name for name, _ in CODE_CLASSES] + ["all"]
    print("\n| | " + " | ".join(code) + " |\n" + "|---" * (len(code) + 1) + "|")
    for label, row in rows.items():
        print(f"| {label} | " + " | ".join(share(row["code"][name]) for name in code) + " |")


if __name__ == "__main__":
    main()

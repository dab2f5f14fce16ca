"""Claim: a change to a search kernel makes it faster, with the same search graphs.

Setting: the shared model (``../shared/data/bible-es-en/model``, its own settings) and the first
``--sentences`` tokenised dev sentences, their options built first; then the search kernel alone
(``cube_kernel`` or ``stack_kernel`` as ``--search`` says; with ``--arcs``, keeping the recombined hypotheses
an n-best list reads) over every sentence, once untimed (compiling, and hashing every graph: parents, options,
scores, final class), then ``--repeats`` times timed in CPU seconds. This checkout and ``--baseline DIR`` (a
checkout of another commit) each run in a process of their own, alternating ``--rounds`` times, so that the
machine's drift falls on both; the ratio is of the smallest times. Graphs that differ are an error: a faster
kernel must find the same derivations.

    python benchmarks/bench_search_kernel.py --baseline DIR [--sentences 1031] [--search cube] [--arcs]
        [--rounds 2] [--repeats 2]

A baseline checkout: ``git worktree add --detach /tmp/base COMMIT`` (each checkout compiles its kernels once,
in the untimed pass).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "bible-es-en"


def measure(config: Path, sentences: int, search: str, arcs: bool, repeats: int) -> dict:
    """The digest of every search graph and the CPU seconds of each timed pass of the kernel over them."""
    import numpy as np

    from pbmt.features.translation import Translator
    from pbmt.model.model import TranslationModel
    from pbmt.search._cube_kernels import cube_kernel
    from pbmt.search._decoder_kernels import stack_kernel
    from pbmt.search.decoder import kernel_inputs
    from pbmt.search.transitions import transitions

    model = TranslationModel.load(config)
    settings = dataclasses.replace(model.settings, search=search)
    translator = Translator(model, tokenized=True)
    lines = (DATA / "dev.tok.es").read_text(encoding="utf-8").splitlines()[:sentences]
    options = [o for o in (translator.options(line.split()) for line in lines) if o.n_words > 0]
    inputs = [(*kernel_inputs(o, settings, arcs), transitions(model, o)) for o in options]
    kernel = cube_kernel if search == "cube" else stack_kernel
    digest = hashlib.sha1()
    for sentence, limits, tr in inputs:
        parent, option, score, _, final_class, _ = kernel(sentence, tr, limits)
        for array in (parent, option, score, np.int64(final_class)):
            digest.update(array.tobytes())
    cpu = []
    for _ in range(repeats):
        started = time.process_time()
        for sentence, limits, tr in inputs:
            kernel(sentence, tr, limits)
        cpu.append(time.process_time() - started)
    return {"digest": digest.hexdigest(), "cpu": cpu, "load": os.getloadavg()[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-f", "--config", type=Path, default=DATA / "model" / "moses.ini")
    parser.add_argument("--baseline", type=Path, help="a checkout of another commit (required)")
    parser.add_argument("--sentences", type=int, default=1031, help="first K dev sentences (default: all)")
    parser.add_argument("--search", choices=("cube", "stack"), default="cube")
    parser.add_argument("--arcs", action="store_true", help="keep recombined hypotheses (what n-best lists need)")
    parser.add_argument("--rounds", type=int, default=2, help="alternations of the two checkouts")
    parser.add_argument("--repeats", type=int, default=2, help="timed passes in each process")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.config, args.sentences, args.search, args.arcs, args.repeats)))
        return 0
    if args.baseline is None:
        parser.error("--baseline DIR is required: the checkout to compare with")
    if not (args.baseline / "pbmt" / "__init__.py").is_file():
        parser.error(f"--baseline {args.baseline}: not a pbmt checkout (no pbmt/__init__.py)")
    command = [sys.executable, __file__, "--child", "-f", str(args.config), "--sentences", str(args.sentences),
               "--search", args.search, "--repeats", str(args.repeats), *(["--arcs"] if args.arcs else [])]
    runs = {"baseline": [], "this": []}
    for _ in range(args.rounds):
        for label, tree in (("baseline", args.baseline.resolve()), ("this", ROOT)):
            env = dict(os.environ, PYTHONPATH=str(tree))
            done = subprocess.run(command, env=env, capture_output=True, text=True)
            if done.returncode:
                sys.exit(f"bench_search_kernel.py: the {label} checkout ({tree}) failed:\n{done.stderr.strip()}")
            runs[label].append(json.loads(done.stdout))
            r = runs[label][-1]
            print(f"{label:<8} CPU s {', '.join(f'{t:.3f}' for t in r['cpu'])} (load {r['load']:.1f})", flush=True)
    digests = {r["digest"] for rows in runs.values() for r in rows}
    if len(digests) > 1:
        sys.exit("bench_search_kernel.py: the two checkouts' search graphs differ")
    best = {label: min(t for r in rows for t in r["cpu"]) for label, rows in runs.items()}
    print(f"{args.search} kernel, {args.sentences} sentences{', arcs' if args.arcs else ''}: baseline "
          f"{best['baseline']:.3f} CPU s, this {best['this']:.3f} CPU s: {best['baseline'] / best['this']:.2f}x "
          "(same graphs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

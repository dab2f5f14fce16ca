"""Claim: tune's pool of a decode's n-best lists is built from the lists' arrays (``pool_from_lists``) in a small
part of the CPU seconds building it entry by entry took (``pool_from_entries``, every ``NBestEntry`` made), so
the step between two decodes, on the main thread with the decoding threads idle, no longer keeps ``pbmt tune
--threads`` from scaling; and the two pools are the same, array for array.

Setting: the shared model (``../shared/data/bible-es-en/model``, its own settings: cube pruning) and the first
``--sentences`` tokenised dev sentences with their references, decoded once to ``--nbest``-best lists on one
thread as ``pbmt tune`` decodes them (``DevDecoder``); then, ``--repeat`` times, in turn, each builder makes the
pool of fresh copies of those lists (unpickled outside the timed part, so no entry is made yet), timed in CPU
seconds of this thread (``time.process_time``, which hardly moves with the machine's load). Printed: the decode's
CPU seconds, each builder's median and range, their ratio, and the serial share of one iteration (the pool step
over the decode and the pool step), with Amdahl's bound for two threads from it; the load average.

    python benchmarks/bench_tune_pool.py [--data DIR] [--sentences 200] [--nbest 100] [--repeat 5] [--dedup derivation]
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "bible-es-en"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA, help="the model and dev set's folder")
    parser.add_argument("--sentences", type=int, default=200)
    parser.add_argument("--nbest", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dedup", choices=("derivation", "string"), default="derivation")
    args = parser.parse_args()

    from pbmt.model.model import TranslationModel
    from pbmt.tune.loop import DevDecoder
    from pbmt.tune.pool import References, pool_from_entries
    from pbmt.tune.pool_lists import pool_from_lists

    model = TranslationModel.load(args.data / "model" / "moses.ini")
    sources = (args.data / "dev.tok.es").read_text(encoding="utf-8").splitlines()[:args.sentences]
    refs = (args.data / "dev.tok.en").read_text(encoding="utf-8").splitlines()[:args.sentences]
    with DevDecoder(model, sources, args.nbest) as decoder:
        weights = model.layout.weights(model.config)
        decoder(weights)  # compiles or loads the kernels, prunes the table
        started = time.process_time()
        lists = decoder(weights)
        decode = time.process_time() - started
    frozen = pickle.dumps(lists)
    n_entries = sum(map(len, lists))

    def entries(fresh, references):
        return pool_from_entries([e for nbest in fresh for e in nbest], model.layout, references, args.dedup)

    def arrays(fresh, references):
        return pool_from_lists(fresh, model.layout, references, args.dedup)

    builders = {"entries": entries, "arrays": arrays}
    seconds: dict[str, list[float]] = {name: [] for name in builders}
    pools = {}
    for _ in range(args.repeat + 1):  # the first compiles or loads the kernels
        for name, build in builders.items():
            fresh, references = pickle.loads(frozen), References(refs)
            started = time.process_time()
            pools[name] = build(fresh, references)
            seconds[name].append(time.process_time() - started)
    same = all(np.array_equal(getattr(pools["entries"], f), getattr(pools["arrays"], f))
               for f in ("features", "stats", "offsets", "keys")) and pools["entries"].texts == pools["arrays"].texts
    print(f"{len(lists)} sentences, {n_entries:,} entries ({args.nbest}-best), {pools['arrays'].n_candidates:,} "
          f"in the pool; the same pool: {same}; load {os.getloadavg()[0]:.1f}")
    print(f"decode (one thread): {decode:.2f} CPU s")
    median = {}
    for name, found in seconds.items():
        found = found[1:]
        median[name] = statistics.median(found)
        print(f"pool from {name}: {median[name]:.3f} CPU s (median of {len(found)}; {min(found):.3f}-{max(found):.3f})")
    print(f"arrays against entries: {median['entries'] / median['arrays']:.1f}x less CPU")
    for name, step in median.items():
        serial = step / (decode + step)
        print(f"an iteration's serial pool step, from {name}: {serial:.3f} of its CPU; two threads at most "
              f"{1 / (serial + (1 - serial) / 2):.2f}x one (Amdahl, the decode itself taken as parallel)")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())

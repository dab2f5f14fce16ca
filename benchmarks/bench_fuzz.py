"""Claim: the fuzz generators of tests/test_fuzz.py (and the server's Unicode generator in
tests/commands/test_serve.py) find no traceback, no silent wrong result and no destroyed or half-written file
with ten times the cases CI runs.

Setting: pytest runs the generators with ``PBMT_FUZZ_SCALE`` (default 10): every parametrised generator draws
SCALE times its cases and every hypothesis generator SCALE times its examples (derandomised: the same cases on
every run). Reported: the cases run (parametrised items plus hypothesis examples), the failures, split into
tracebacks (pbmt printed one, or an exception escaped) and wrong results (any other broken contract: another
output, a second error line, a changed old file), and the wall time with the load average before and after.
A failure's first lines are printed; ``--json FILE`` keeps the counts.

    python benchmarks/bench_fuzz.py [--scale 10] [-k EXPRESSION] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGETS = ["tests/test_fuzz.py", "tests/commands/test_serve.py::test_random_unicode_through_serve_is_answered_as_"
           "translate_answers_it_or_a_4xx"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=int, default=10, help="cases per generator, as a multiple of CI's")
    parser.add_argument("-k", dest="expression", help="run only the generators pytest -k selects")
    parser.add_argument("--json", type=Path, help="write the counts here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "junit.xml"
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--hypothesis-show-statistics",
                   f"--junitxml={report}", *TARGETS] + (["-k", args.expression] if args.expression else [])
        load = os.getloadavg()[0]
        started = time.perf_counter()
        done = subprocess.run(command, cwd=REPO, env={**os.environ, "PBMT_FUZZ_SCALE": str(args.scale)},
                              capture_output=True, text=True)
        seconds = time.perf_counter() - started
        cases = ElementTree.parse(report).getroot().iter("testcase")
        counts = {"items": 0, "hypothesis examples": 0, "tracebacks": 0, "wrong results": 0, "skipped": 0}
        failures = []
        for case in cases:
            counts["items"] += 1
            if case.find("skipped") is not None:
                counts["skipped"] += 1
            for failed in (*case.findall("failure"), *case.findall("error")):
                text = (failed.get("message") or "") + (failed.text or "")
                kind = "tracebacks" if re.search(r"Traceback|internal error|^E\s+\w+Error", text, re.M) and \
                    "AssertionError" not in (failed.get("message") or "") else "wrong results"
                if "Traceback (most recent call last)" in (failed.get("message") or ""):
                    kind = "tracebacks"
                counts[kind] += 1
                failures.append((case.get("name"), kind, (failed.get("message") or "")[:300]))
    phases = re.findall(r"(\d+) passing, (\d+) failing", done.stdout)  # one per phase (generate, shrink ...)
    hypothesis_tests = len(re.findall(r"during generate phase", done.stdout))
    counts["hypothesis examples"] = sum(int(p) + int(f) for p, f in phases)
    counts["cases"] = counts["items"] - hypothesis_tests + counts["hypothesis examples"]
    print(f"scale {args.scale}: {counts['cases']:,} cases ({counts['items']:,} test items, "
          f"{counts['hypothesis examples']:,} hypothesis examples in {hypothesis_tests} generators); "
          f"{counts['tracebacks']} tracebacks, {counts['wrong results']} wrong results, {counts['skipped']} skipped; "
          f"{seconds / 60:.1f} min, load {load:.1f} before, {os.getloadavg()[0]:.1f} after")
    for name, kind, message in failures:
        print(f"  {kind}: {name}: {message}")
    if args.json:
        args.json.write_text(json.dumps({**counts, "scale": args.scale, "seconds": seconds, "load": load,
                                         "failures": failures}, indent=1))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())

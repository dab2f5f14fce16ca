"""The docs' generated blocks: rewritten from recorded runs, so a number in a doc is the number a run printed.

A generated block in a doc is enclosed in two HTML comments (invisible in
the rendered page)::

    <!-- generated: NAME -->
    ...
    <!-- end generated -->

and its text is ``RENDERERS[NAME](record)``, where ``record`` is the JSON of a
recorded run in ``docs/runs/`` (``docs/runs/tutorial.json``:
``benchmarks/record_tutorial.py``), or, for a block named after a *table
record* ``docs/runs/NAME.json``, that table and the line saying which
command measured it, at which commit, when and under what load.

A table record is what a benchmark writes with ``write_table`` (or a person
by hand, in the same form)::

    {"command": "python benchmarks/bench_x.py --y 3", "commit": "6acc664", "date": "2026-11-26",
     "load": [0.9, 1.5], "columns": ["decoder", "wall s"], "rows": [["pbmt", 12.2], ["Moses2", 23.1]],
     "formats": {"wall s": ".1f"}, "note": "optional sentence after the provenance line", "align": "lr"}

Cells are strings (written as they are, Markdown allowed), integers (with
thousands separators) or floats (``formats[column]`` if given, else as
Python prints them); ``null`` is an empty cell, and ``load`` may be
``null`` where it was not recorded. ``align`` (optional) has a letter a column, ``l`` or ``r``: the
columns written right-aligned (``---:``), as numbers usually are.

``python docs/generated.py`` rewrites every block of every doc from the
records; ``--check`` only says which blocks differ (exit 1), which
``tests/test_docs_generated.py`` runs. So a doc cannot quote numbers its
run did not print, and a new recording changes the doc in one command.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

DOCS = Path(__file__).resolve().parent
RUNS = DOCS / "runs"
TUTORIAL = DOCS / "tutorial.md"
BLOCK = re.compile(r"(<!-- generated: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- end generated -->)", re.S)


@dataclass(frozen=True)
class CodeBlock:
    """A ```bash block of the tutorial and the heading of the section it is in."""

    heading: str
    code: str


def tutorial_blocks(text: str | None = None) -> list[CodeBlock]:
    """The tutorial's ```bash blocks, in order (``text``: the tutorial's, default docs/tutorial.md)."""
    text = TUTORIAL.read_text(encoding="utf-8") if text is None else text
    blocks, heading = [], ""
    for match in re.finditer(r"^(## [^\n]*)$|^```bash\n(.*?)^```$", text, re.M | re.S):
        if match.group(1):
            heading = match.group(1)[3:].strip()
        else:
            blocks.append(CodeBlock(heading, match.group(2)))
    return blocks


def tutorial_command(contains: str) -> str:
    """The tutorial's one command (continuation lines joined) that contains ``contains``."""
    commands = [line for block in tutorial_blocks() for line in block.code.replace("\\\n", " ").splitlines()
                if contains in line]
    if len(commands) != 1:
        raise ValueError(f"{len(commands)} tutorial commands contain {contains!r}")
    return re.sub(r" +", " ", commands[0]).strip()


def _block(record: dict, heading: str) -> dict:
    return next(b for b in record["blocks"] if b["heading"].startswith(heading))


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {round(seconds % 60):d} s" if seconds >= 60 else f"{round(seconds):d} s"


def _load(record: dict) -> str:
    low, high = record["load"]
    return f"load average {low:g}–{high:g}" if low != high else f"load average {low:g}"


def _run_of(record: dict) -> str:
    return f"pbmt at commit {record['commit']}, {record['date']}, two cores shared with other jobs, {_load(record)}"


def _bleu_lines(record: dict) -> dict[str, str]:
    """The compare block's lines by run name ("untuned", "mert (tokenised, lowercased)", ...); {} if the
    recorded run did not get there."""
    block = next((b for b in record["blocks"] if b["heading"].startswith("6.")), {"stdout": ""})
    return dict(line.split(": ", 1) for line in block["stdout"].splitlines() if ": BLEU = " in line)


def _score(line: str) -> float:
    return float(re.match(r"BLEU = ([\d.]+)", line).group(1))


def _stopped(record: dict) -> str:
    """'' for a complete record, else a sentence naming the first section the recorded run did not finish."""
    headings = [b.heading for b in tutorial_blocks()]
    if len(record["blocks"]) >= len(headings):
        return ""
    number, _, title = headings[len(record["blocks"])].partition(". ")
    return (f"The recorded run was stopped for time in section {number} ({title}); what the sections from "
            "there quote is missing from it, and says so. ")


def tutorial_time(record: dict) -> str:
    times: dict[str, float] = {}
    for b in record["blocks"]:  # seconds per section (section 7 has two blocks)
        times[b["heading"].split(".")[0]] = times.get(b["heading"].split(".")[0], 0.0) + b["seconds"]
    times["2"] = sum(step["seconds"] for step in record["train_steps"])  # as stamped when the steps ran
    names = {"1": "the data", "2": "training", "3": "the untuned test translation", "4": "explaining one sentence",
             "5": "the three tuning runs", "6": "the tuned translations and BLEU", "7": "the sampler and the plots"}
    if "5" not in times:  # stopped inside section 5: the tuning runs it finished, each timed on its own
        for run, name in (("mert", "MERT"), ("pro", "PRO"), ("samplerank", "SampleRank")):
            if "seconds" in record["tuning"].get(run, {}):
                names[run], times[run] = name, record["tuning"][run]["seconds"]
    parts = ", ".join(f"{name} {_minutes(times[k])}" for k, name in names.items() if times.get(k, 0) >= 60)
    total = "" if _stopped(record) else f"**{_minutes(sum(times.values()))}** for the whole tutorial "
    seeds = len(record["mert_seeds"])
    beside = f"; MERT ran {seeds} more time{'s' if seeds > 1 else ''} beside it (other seeds, section 5)" if seeds else ""
    return (f"How long it takes: {total}in our recorded run ({_run_of(record)}): {parts}, the rest seconds{beside}. "
            + _stopped(record) +
            "Times follow the load: an earlier run on the same machine at load average 1–2.5 took 12 min 46 s "
            "in all, numba's first compilation included.\n")


def tutorial_train(record: dict) -> str:
    lines = [f"pbmt train: [{k}/{len(record['train_steps'])}] {s['name']}: {s['summary']} ({s['seconds']:.1f} s)"
             for k, s in enumerate(record["train_steps"], 1)]
    return "```text\n" + "\n".join(lines) + "\n```\n"


def tutorial_untuned(record: dict) -> str:
    lines = _bleu_lines(record)
    untuned = _score(lines["untuned"] if "untuned" in lines else record["untuned"])
    return (f"Our run scored **{untuned:.2f}** on the first 200 verses of Acts with the default weights (cased, "
            "detokenised; section 6 puts the tokenised lowercased figure beside it).\n")


def _seed_rows(record: dict) -> list[tuple[str, list[float]]]:
    runs = [("1", record["tuning"]["mert"]["dev_bleu"])]
    return runs + [(seed, run["dev_bleu"]) for seed, run in sorted(record["mert_seeds"].items())]


def tutorial_tuning(record: dict) -> str:
    tuning = record["tuning"]
    start = tuning["mert"]["dev_bleu"][0]
    rows = ["| run | dev BLEU per iteration (SampleRank: per epoch) |", "|---|---|"]
    for seed, dev in _seed_rows(record):
        rows.append(f"| MERT{'' if seed == '1' else f' (`--seed {seed}`)'} | {', '.join(f'{v:.2f}' for v in dev)} |")
    for run, name in (("pro", "PRO"), ("samplerank", "SampleRank")):
        dev = tuning[run]["dev_bleu"] if run in tuning else None
        rows.append(f"| {name} | {', '.join(f'{v:.2f}' for v in dev) if dev else '(not in the recorded run)'} |")
    seeds = _seed_rows(record)
    lowest = min(min(dev) for _, dev in seeds)
    best = [max(dev) for _, dev in seeds]
    if len(seeds) > 1:
        spread = (f" MERT's best dev BLEU over its {len(seeds)} seeds is {statistics.mean(best):.2f} ± "
                  f"{statistics.stdev(best):.2f} (mean ± sd); ")
        lowest_is, none_below = "its lowest iteration of any seed is", "no iteration of any seed decodes below"
    else:
        spread, lowest_is, none_below = " ", "MERT's lowest iteration is", "No MERT iteration decodes below"
    spread += (f"{lowest_is} {lowest:.2f}, {start - lowest:.2f} below the untuned weights." if lowest < start
               else f"{none_below} the untuned weights.")
    others = " and ".join(f"`--seed {seed}`" for seed, _ in seeds[1:])
    mert = (f"the MERT rows are its command as written and again with {others}" if others else
            "the MERT row is its command as written")
    return ("\n".join(rows) + "\n\n"
            f"Every run starts from the default weights ({start:.2f}); {mert} ({_run_of(record)}).{spread}\n")


def tutorial_test(record: dict) -> str:
    lines = _bleu_lines(record)
    if not {"mert", "pro", "samplerank"} <= set(lines):
        return "(Not in the recorded run, which was stopped for time before this section.)\n"
    block = "```text\n" + "".join(f"{name}: {line}\n" for name, line in lines.items()) + "```\n"
    untuned = _score(lines["untuned"])
    gains = ", ".join(f"{name.upper() if name != 'samplerank' else 'SampleRank'} {_score(lines[name]) - untuned:+.2f}"
                      for name in ("mert", "pro", "samplerank"))
    casing = [_score(lines[f"{name} (tokenised, lowercased)"]) - _score(lines[name])
              for name in ("untuned", "mert", "pro", "samplerank")]
    return (block + "\n"
            f"Against the untuned weights (cased 13a BLEU): {gains}. Casing costs less than a point: the cased "
            f"figure is {min(casing):.2f}–{max(casing):.2f} below the lowercased one of the same output.\n")


def tutorial_trace(record: dict) -> str:
    if not record["trace"]:
        return "(Not in the recorded run, which was stopped for time before this section.)\n"
    rows = ["| verse | model score, first → last record | the decoder's best | BLEU+1, first → last |",
            "|---|---|---|---|"]
    for t in record["trace"]:
        rows.append(f"| {t['verse']} | {t['score'][0]:.1f} → {t['score'][1]:.1f} | {t['decoder_score']:.1f} | "
                    f"{t['bleu'][0]:.1f} → {t['bleu'][1]:.1f} |")
    return "\n".join(rows) + "\n"


def _cell(value, spec: str | None) -> str:
    if value is None:
        return ""
    if isinstance(value, bool) or isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    return format(value, spec) if spec else str(value)


def table(record: dict, name: str) -> str:
    """A table record as a Markdown table and the line that says where its numbers come from."""
    columns, formats = record["columns"], record.get("formats", {})
    unknown = set(formats) - set(columns)
    if unknown:
        raise ValueError(f"docs/runs/{name}.json: formats of no column: {', '.join(sorted(unknown))}")
    align = record.get("align", "l" * len(columns))
    if len(align) != len(columns) or set(align) - set("lr"):
        raise ValueError(f"docs/runs/{name}.json: align {align!r} is not one letter l or r a column")
    def line(texts: list[str]) -> str:
        return "|" + "|".join(f" {t} " if t else " " for t in texts) + "|"

    rows = [line(columns), "|" + "".join("---:|" if a == "r" else "---|" for a in align)]
    for k, row in enumerate(record["rows"], 1):
        if len(row) != len(columns):
            raise ValueError(f"docs/runs/{name}.json: row {k} has {len(row)} cells for {len(columns)} columns")
        rows.append(line([_cell(v, formats.get(c)) for c, v in zip(columns, row)]))
    load = _load(record) if record.get("load") else "load not recorded"
    note = f" {record['note']}" if record.get("note") else ""
    return ("\n".join(rows) + f"\n\nMeasured by `{record['command']}` (pbmt at commit {record['commit']}, "
            f"{record['date']}, {load}; `docs/runs/{name}.json`).{note}\n")


def _commit() -> str:
    """The checkout's short commit, with "+" when pbmt/ has changes not committed."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=DOCS.parent, capture_output=True, text=True).stdout.strip()
    return git("rev-parse", "--short", "HEAD") + ("+" if git("status", "--porcelain", "--untracked-files=no",
                                                              "pbmt") else "")


def write_table(name: str, columns: list[str], rows: list[list], *, load: list[float] | None,
                command: str | None = None, formats: dict[str, str] | None = None, note: str | None = None,
                align: str | None = None) -> Path:
    """Write the table record ``docs/runs/NAME.json`` (the module's docstring has its form): ``load`` is the
    load average's [lowest, highest] while it ran, ``command`` defaults to this process's own command line;
    the commit and today's date are filled in. Then ``python docs/generated.py`` puts it in the doc."""
    if command is None:
        script = Path(sys.argv[0]).resolve()
        shown = script.relative_to(DOCS.parent) if script.is_relative_to(DOCS.parent) else script
        command = " ".join(["python", str(shown), *sys.argv[1:]])
    record = {"command": command, "commit": _commit(), "date": time.strftime("%Y-%m-%d", time.gmtime()),
              "load": [round(min(load), 1), round(max(load), 1)] if load else None,
              "columns": list(columns), "rows": [list(r) for r in rows]}
    if formats:
        record["formats"] = dict(formats)
    if note:
        record["note"] = note
    if align:
        record["align"] = align
    table(record, name)  # refuses a malformed record before it is written
    path = RUNS / f"{name}.json"
    lines = [f" {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in record.items() if k != "rows"]
    lines.append(' "rows": [\n' + ",\n".join(f"  {json.dumps(r, ensure_ascii=False)}" for r in record["rows"]) + "\n ]")
    path.write_text("{\n" + ",\n".join(lines) + "\n}\n", encoding="utf-8")  # a row a line: diffs show rows
    return path


RENDERERS: dict[str, tuple[str, Callable[[dict], str]]] = {  # name -> (record in docs/runs, renderer)
    "tutorial-time": ("tutorial", tutorial_time),
    "tutorial-train": ("tutorial", tutorial_train),
    "tutorial-untuned": ("tutorial", tutorial_untuned),
    "tutorial-tuning": ("tutorial", tutorial_tuning),
    "tutorial-test": ("tutorial", tutorial_test),
    "tutorial-trace": ("tutorial", tutorial_trace),
}


def regenerated(text: str, records: dict[str, dict]) -> str:
    """``text`` with every generated block rewritten from ``records`` (record name -> its JSON)."""
    def render(match: re.Match) -> str:
        name = match.group("name")
        if name in RENDERERS:
            record, renderer = RENDERERS[name]
            return match.group(1) + renderer(records[record]) + match.group(4)
        if "columns" in records.get(name, {}):
            return match.group(1) + table(records[name], name) + match.group(4)
        raise ValueError(f"unknown generated block {name!r}: no docs/runs/{name}.json table record and no "
                         f"renderer; renderers: {', '.join(RENDERERS)}")
    return BLOCK.sub(render, text)


def records() -> dict[str, dict]:
    return {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in sorted(RUNS.glob("*.json"))}


def stale_docs() -> dict[Path, str]:
    """Each doc whose generated blocks differ from what its records give, with the unified diff."""
    runs, stale = records(), {}
    for doc in sorted(DOCS.glob("*.md")):
        text = doc.read_text(encoding="utf-8")
        new = regenerated(text, runs)
        if new != text:
            stale[doc] = "".join(difflib.unified_diff(text.splitlines(True), new.splitlines(True), str(doc),
                                                      f"{doc} (regenerated)"))
    return stale


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only report the docs whose blocks differ (exit 1)")
    args = parser.parse_args()
    stale = stale_docs()
    for doc, diff in stale.items():
        if args.check:
            print(diff)
        else:
            doc.write_text(regenerated(doc.read_text(encoding="utf-8"), records()), encoding="utf-8")
            print(f"rewrote {doc.relative_to(DOCS.parent)}")
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())

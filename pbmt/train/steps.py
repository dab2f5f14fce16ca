"""Resumable steps: each step's inputs, outputs and options stamped in a folder, so that a run started again
skips every step whose stamp shows it up to date (``pbmt train``'s work folder)."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from pbmt.base.errors import PbmtError
from pbmt.base.files import atomic_write


@dataclass(frozen=True)
class Step:
    """One resumable step: ``action`` reads ``inputs`` and writes ``outputs``
    (files), as ``options`` (JSON-able) say, and returns a one-line summary."""

    name: str
    inputs: tuple[Path, ...]
    outputs: tuple[Path, ...]
    options: dict
    action: Callable[[], str]


@dataclass(frozen=True)
class StepReport:
    """How a step went: ``ran`` (False: skipped as up to date), wall-clock
    ``seconds`` (of the run that made the outputs, if skipped) and its summary."""

    name: str
    ran: bool
    seconds: float
    summary: str


def file_signature(path: Path) -> dict:
    """Size (bytes), modification time (ns) and SHA-256 (hex) of a file."""
    stat = path.stat()
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "sha256": digest.hexdigest()}


def _unchanged(path: Path, signature: dict) -> bool:
    try:
        stat = path.stat()
    except FileNotFoundError:
        return False
    if stat.st_size != signature["size"]:
        return False
    return stat.st_mtime_ns == signature["mtime_ns"] or file_signature(path)["sha256"] == signature["sha256"]


class StepRunner:
    """Runs ``Step``s, each unless its stamp in ``stamp_dir`` shows it up to
    date, logging a line per step (``[k/n] name: summary (time)``)."""

    def __init__(self, stamp_dir: Path, log: Callable[[str], None] = lambda message: None):
        self.stamp_dir = Path(stamp_dir)
        self.log = log

    def stamp_path(self, step: Step) -> Path:
        return self.stamp_dir / f"{step.name}.json"

    def up_to_date(self, step: Step) -> dict | None:
        """The step's stamp if it is up to date, else None."""
        try:
            stamp = json.loads(self.stamp_path(step).read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        files = [(Path(p), s) for p, s in stamp.get("inputs", []) + stamp.get("outputs", [])]
        same = (
            stamp.get("options") == _jsonable(step.options)
            and [p for p, _ in stamp.get("inputs", [])] == [str(p.resolve()) for p in step.inputs]
            and [p for p, _ in stamp.get("outputs", [])] == [str(p.resolve()) for p in step.outputs]
        )
        return stamp if same and all(_unchanged(p, s) for p, s in files) else None

    def run(self, steps: Iterable[Step]) -> list[StepReport]:
        """Run (or skip) ``steps`` in order; returns a report per step."""
        steps = list(steps)
        reports = []
        for k, step in enumerate(steps, 1):
            prefix = f"[{k}/{len(steps)}] {step.name}"
            stamp = self.up_to_date(step)
            if stamp is not None:
                report = StepReport(step.name, False, stamp["seconds"], stamp["summary"])
                self.log(f"{prefix}: up to date, skipped ({report.summary})")
            else:
                self.log(f"{prefix} ...")
                self.stamp_path(step).unlink(missing_ok=True)
                start = time.perf_counter()
                try:
                    summary = step.action()
                except (PbmtError, SystemExit):
                    raise
                except BaseException as stopped:  # Ctrl-C, a full disk: say what is kept and how to go on
                    done = f"steps 1 to {k - 1}" if k > 2 else "step 1"
                    stopped.add_note(f"{done} done and kept: the same command goes on from step {k}, {step.name}"
                                     if k > 1 else "no step finished: the same command starts again")
                    raise
                report = StepReport(step.name, True, time.perf_counter() - start, summary)
                self._write_stamp(step, report)
                self.log(f"{prefix}: {summary} ({report.seconds:.1f} s)")
            reports.append(report)
        return reports

    def _write_stamp(self, step: Step, report: StepReport) -> None:
        missing = [str(p) for p in step.outputs if not p.exists()]
        if missing:
            raise PbmtError(f"step {step.name} did not write {', '.join(missing)}")
        stamp = {
            "options": _jsonable(step.options),
            "inputs": [[str(p.resolve()), file_signature(p)] for p in step.inputs],
            "outputs": [[str(p.resolve()), file_signature(p)] for p in step.outputs],
            "seconds": report.seconds,
            "summary": report.summary,
        }
        with atomic_write(self.stamp_path(step)) as handle:
            json.dump(stamp, handle, indent=1)


def _jsonable(options: dict) -> dict:
    return json.loads(json.dumps(options, default=str))

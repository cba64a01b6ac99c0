#!/usr/bin/env python3
"""Times `stepwise run` on synthetic corpora of growing size: wall time, CPU
time and peak RSS of the whole command, loading included.

    cargo build --release -p stepwise-cli
    python3 scripts/bench-corpus.py                      # 1,000 3,000 10,000 30,000 notes
    python3 scripts/bench-corpus.py --sizes 30000 --runs 5
    python3 scripts/bench-corpus.py --bin old/stepwise --bin target/release/stepwise

Corpora come from scripts/gen-corpus.py (deterministic), written once under
$TMPDIR (or /tmp) in stepwise-bench-corpus/N and reused; each run gets a
fresh run database in a temporary folder. The goal and constraints are the
README's first command (examples/brief.json). With several --bin, the
binaries take turns on each size, so a busy machine slows them alike, and
their briefs are compared byte for byte. Prints a Markdown table: the best
and the median wall time of the runs, the median CPU time (user + system)
and the highest peak RSS.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOAL = "Should our team adopt retrieval-augmented generation for customer support?"


def corpus(n):
    folder = os.path.join(tempfile.gettempdir(), "stepwise-bench-corpus", str(n))
    done = os.path.join(folder, ".complete")
    if not os.path.exists(done):
        notes = os.path.join(folder, "notes")
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen-corpus.py"), notes, str(n)], check=True)
        open(done, "w").close()
    return os.path.join(folder, "notes")


def run_once(binary, notes):
    """(wall s, cpu s, peak RSS KiB, brief, last stderr line) of one run."""
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "runs.db")
        out_path, err_path = os.path.join(tmp, "out"), os.path.join(tmp, "err")
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            start = time.perf_counter()
            child = subprocess.Popen(
                [binary, "run", GOAL, "--notes", notes, "--constraints",
                 os.path.join(ROOT, "examples", "brief.json"), "--db", db],
                stdout=out, stderr=err, stdin=subprocess.DEVNULL)
            _, status, usage = os.wait4(child.pid, 0)
            wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        with open(out_path, "rb") as f:
            brief = f.read()
        with open(err_path, encoding="utf-8", errors="replace") as f:
            lines = [l for l in f.read().splitlines() if l.strip()]
        if child.returncode != 0:
            sys.exit(f"{binary} exited with {child.returncode} on {notes}:\n" + "\n".join(lines[-5:]))
        return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, brief, lines[-1] if lines else ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,3000,10000,30000", help="comma-separated note counts")
    ap.add_argument("--runs", type=int, default=3, help="runs per size and binary")
    ap.add_argument("--bin", action="append", help="the stepwise binary (repeatable); default target/release/stepwise")
    args = ap.parse_args()
    bins = args.bin or [os.path.join(ROOT, "target", "release", "stepwise")]
    sizes = [int(s) for s in args.sizes.split(",")]
    print("| binary | notes | wall, best (s) | wall, median (s) | CPU, median (s) | peak RSS (MiB) | reported |")
    print("|---|---|---|---|---|---|---|")
    for n in sizes:
        notes = corpus(n)
        results = {b: [] for b in bins}
        for _ in range(args.runs):
            for b in bins:
                results[b].append(run_once(b, notes))
        briefs = {r[3] for rs in results.values() for r in rs}
        for b in bins:
            rs = results[b]
            walls = [r[0] for r in rs]
            print(f"| {b} | {n:,} | {min(walls):.2f} | {statistics.median(walls):.2f} "
                  f"| {statistics.median(r[1] for r in rs):.2f} | {max(r[2] for r in rs) / 1024:.0f} "
                  f"| {rs[-1][4].rsplit(' · ', 1)[-1]} |", flush=True)
        if len(briefs) > 1:
            print(f"\nthe briefs differ at {n:,} notes", file=sys.stderr)
            sys.exit(1)


if __name__ == "__main__":
    main()

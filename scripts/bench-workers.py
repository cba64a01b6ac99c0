#!/usr/bin/env python3
"""Scale-out figures on PostgreSQL (docs/benchmarks.md, "Scale-out on
PostgreSQL"), from a release build:

    cargo build --release -p stepwise-cli
    scripts/with-postgres python3 scripts/bench-workers.py            # ~3 min
    scripts/with-postgres python3 scripts/bench-workers.py --rounds 3 --workers 1 2 4

The server is the one STEPWISE_TEST_PG names (scripts/with-postgres starts a
throwaway one on loopback); each measurement gets a fresh database in it.

- Throughput: --runs queued 5-step runs (the chaos test's plan: two
  searches, two write_file, one read_note; every tool call slowed to 10 ms
  with STEPWISE_TOOL_DELAY_MS) worked off by W `stepwise worker
  --concurrency 4 --drain` processes: runs per second, and p50/p99 from a
  worker's claim to the run's first step_started.
- Time to first step with idle workers: W workers waiting, one run
  submitted (`run --detach`) every --gap-ms; p50/p99 from the enqueue to
  the claim and to the first step_started, from the database's clock.
- Per-step overhead: a 20-step sequential plan of search_notes steps run
  in the foreground --steps-runs times on an SQLite file (synchronous=FULL)
  and on PostgreSQL (synchronous_commit=on); usage.wall_time_ms per run.

Prints the load average before and after each measurement: the machine may
be shared. Figures, not a test: nothing is asserted but that runs end ok.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTES = os.path.join(ROOT, "examples", "notes")
GOAL = "Save the latency budget"

PLAN = {"steps": [
    {"id": "find", "description": "Find the latency budget", "tool": "search_notes",
     "args": {"query": "latency budget first token"}, "acceptance_criteria": ["a passage about latency"]},
    {"id": "cost", "description": "Find the operating cost", "tool": "search_notes",
     "args": {"query": "operating cost per month"}, "acceptance_criteria": ["a passage about cost"]},
    {"id": "save", "description": "Save the best passage", "tool": "write_file", "depends_on": ["find"],
     "args": {"path": "out/latency.md", "content": "${find.output.results[0].passages[0]}"},
     "acceptance_criteria": ["file written"]},
    {"id": "save_cost", "description": "Save the cost passage", "tool": "write_file", "depends_on": ["cost"],
     "args": {"path": "out/cost.md", "content": "${cost.output.results[0].passages[0]}"},
     "acceptance_criteria": ["file written"]},
    {"id": "read", "description": "Read the latency note", "tool": "read_note", "depends_on": ["save", "save_cost"],
     "args": {"id": "latency-budget"}, "acceptance_criteria": ["the note"]},
]}


def chain(n):
    steps = []
    for i in range(n):
        step = {"id": f"s{i:02}", "description": "Find the latency budget for the first token",
                "tool": "search_notes", "args": {"query": "latency budget first token"},
                "acceptance_criteria": ["a passage"]}
        if i:
            step["depends_on"] = [f"s{i - 1:02}"]
        steps.append(step)
    return {"steps": steps}


def load():
    return "%.1f/%.1f/%.1f" % os.getloadavg()


class Bench:
    def __init__(self, args, tmp):
        self.bin = args.bin
        self.base = args.pg
        self.tmp = tmp
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("STEPWISE_")}
        self.env["NO_COLOR"] = "1"
        self.env["HOME"] = tmp
        self.env["XDG_DATA_HOME"] = os.path.join(tmp, "data")
        self.env["XDG_CONFIG_HOME"] = os.path.join(tmp, "config")
        self.plan = os.path.join(tmp, "plan.json")
        with open(self.plan, "w") as f:
            json.dump(PLAN, f)
        self.count = 0

    def sql(self, url, query):
        out = subprocess.run(["psql", url, "-XAtq", "-c", query], capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"psql: {out.stderr.strip()}")
        return out.stdout.strip()

    def fresh_db(self):
        """A new, migrated database; its URL."""
        self.count += 1
        name = f"bench_{os.getpid()}_{self.count}"
        self.sql(self.base, f"CREATE DATABASE {name}")
        head, _, _ = self.base.rpartition("/")
        url = f"{head}/{name}"
        self.cli(url, ["migrate"])
        return url

    def cli(self, db, args, extra_env=None, check=True):
        env = dict(self.env, STEPWISE_DB=db, **(extra_env or {}))
        out = subprocess.run([self.bin, *args], env=env, capture_output=True, text=True, cwd=self.tmp)
        if check and out.returncode != 0:
            sys.exit(f"stepwise {' '.join(args)}: exit {out.returncode}\n{out.stderr}")
        return out

    def submit(self, db, tag, i):
        ws = os.path.join(self.tmp, "ws", tag, f"{i:03}")
        self.cli(db, ["run", GOAL, "--notes", NOTES, "--plan", self.plan, "--workspace", ws,
                      "--approve", "auto", "--quiet", "--detach", "--run-id", f"{tag}_{i:03}"])

    def workers(self, db, n, drain):
        env = dict(self.env, STEPWISE_DB=db, STEPWISE_TOOL_DELAY_MS="10")
        args = [self.bin, "worker", "--concurrency", "4", "--quiet"] + (["--drain"] if drain else [])
        return [subprocess.Popen(args, env=env, cwd=self.tmp, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL) for _ in range(n)]

    def all_ok(self, db, n):
        ok = self.sql(db, "SELECT count(*) FROM stepwise.runs WHERE status = 'ok'")
        if int(ok) != n:
            sys.exit(f"{ok} of {n} runs ended ok in {db}")

    def throughput(self, w, runs):
        db = self.fresh_db()
        for i in range(runs):
            self.submit(db, f"t{w}", i)
        before = load()
        start = time.perf_counter()
        for p in self.workers(db, w, drain=True):
            p.wait()
        wall = time.perf_counter() - start
        self.all_ok(db, runs)
        p50, p99 = self.sql(db, """
            SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY d)::numeric, 1) || ' ' ||
                   round(percentile_cont(0.99) WITHIN GROUP (ORDER BY d)::numeric, 1)
            FROM (SELECT extract(epoch FROM (min(e.at) - j.claimed_at)) * 1000 AS d
                  FROM stepwise.events e JOIN stepwise.jobs j USING (run_id)
                  WHERE e.kind = 'step_started' GROUP BY j.run_id, j.claimed_at) t""").split()
        return {"workers": w, "runs": runs, "wall_s": round(wall, 2), "runs_per_s": round(runs / wall, 1),
                "claim_first_step_p50_ms": float(p50), "claim_first_step_p99_ms": float(p99),
                "load": f"{before} -> {load()}"}

    def first_step(self, w, runs, gap_ms):
        db = self.fresh_db()
        procs = self.workers(db, w, drain=False)
        time.sleep(1.0)  # registered and idle
        before = load()
        for i in range(runs):
            self.submit(db, f"l{w}", i)
            time.sleep(gap_ms / 1000)
        deadline = time.time() + 120
        while int(self.sql(db, "SELECT count(*) FROM stepwise.runs WHERE status = 'ok'")) < runs:
            if time.time() > deadline:
                sys.exit("the idle-worker runs did not finish within 120 s")
            time.sleep(0.2)
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait()
        row = self.sql(db, """
            SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY c)::numeric, 1) || ' ' ||
                   round(percentile_cont(0.99) WITHIN GROUP (ORDER BY c)::numeric, 1) || ' ' ||
                   round(percentile_cont(0.5) WITHIN GROUP (ORDER BY d)::numeric, 1) || ' ' ||
                   round(percentile_cont(0.99) WITHIN GROUP (ORDER BY d)::numeric, 1)
            FROM (SELECT extract(epoch FROM (j.claimed_at - j.enqueued_at)) * 1000 AS c,
                         extract(epoch FROM (min(e.at) - j.enqueued_at)) * 1000 AS d
                  FROM stepwise.events e JOIN stepwise.jobs j USING (run_id)
                  WHERE e.kind = 'step_started' GROUP BY j.run_id, j.claimed_at, j.enqueued_at) t""").split()
        return {"workers": w, "runs": runs, "gap_ms": gap_ms,
                "enqueue_claim_p50_ms": float(row[0]), "enqueue_claim_p99_ms": float(row[1]),
                "enqueue_first_step_p50_ms": float(row[2]), "enqueue_first_step_p99_ms": float(row[3]),
                "load": f"{before} -> {load()}"}

    def per_step(self, runs, steps):
        plan = os.path.join(self.tmp, "chain.json")
        with open(plan, "w") as f:
            json.dump(chain(steps), f)
        sqlite = os.path.join(self.tmp, "runs.db")
        pg = self.fresh_db()
        out = {}
        before = load()
        times = {"sqlite": [], "postgres": []}
        for i in range(runs):  # taking turns, so a busy moment slows both
            for name, db in (("sqlite", sqlite), ("postgres", pg)):
                res = self.cli(db, ["run", GOAL, "--notes", NOTES, "--plan", plan, "--json", "--quiet"])
                v = json.loads(res.stdout)
                if v["status"] != "ok":
                    sys.exit(f"the {steps}-step run on {name} ended {v['status']}")
                times[name].append(v["usage"]["wall_time_ms"])
        for name, t in times.items():
            t.sort()
            out[name] = {"min_ms": t[0], "median_ms": statistics.median(t), "max_ms": t[-1],
                         "per_step_median_ms": round(statistics.median(t) / steps, 2)}
        out["load"] = f"{before} -> {load()}"
        return out


def main():
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", default=os.path.join(target, "release", "stepwise"))
    p.add_argument("--pg", default=os.environ.get("STEPWISE_TEST_PG"))
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--runs", type=int, default=40)
    p.add_argument("--gap-ms", type=int, default=250)
    p.add_argument("--latency-runs", type=int, default=20)
    p.add_argument("--steps-runs", type=int, default=8)
    p.add_argument("--only", choices=["throughput", "first-step", "per-step"], nargs="+")
    args = p.parse_args()
    if not args.pg:
        sys.exit("no PostgreSQL: run under scripts/with-postgres, or pass --pg postgres://USER@HOST:PORT/postgres")
    if not os.access(args.bin, os.X_OK):
        sys.exit(f"{args.bin} is not there: cargo build --release -p stepwise-cli")
    only = set(args.only or ["throughput", "first-step", "per-step"])
    with tempfile.TemporaryDirectory(prefix="stepwise-bench-workers-") as tmp:
        b = Bench(args, tmp)
        print(f"# {args.bin}, cpus {os.cpu_count()}, load {load()}", flush=True)
        for r in range(args.rounds):
            for w in args.workers:
                if "throughput" in only:
                    print(json.dumps({"round": r, "throughput": b.throughput(w, args.runs)}), flush=True)
                if "first-step" in only:
                    print(json.dumps({"round": r, "first_step": b.first_step(w, args.latency_runs, args.gap_ms)}),
                          flush=True)
            if "per-step" in only:
                print(json.dumps({"round": r, "per_step": b.per_step(args.steps_runs, 20)}), flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""LangGraph's figures for the engine bench shapes, on this machine, to set
beside `cargo bench -p stepwise-core --bench engine` and
`cargo bench -p stepwise-store --bench sqlite` (docs/benchmarks.md).

    python3 scripts/bench-langgraph.py                 # every shape, 5 rounds
    python3 scripts/bench-langgraph.py --rounds 3 --shapes sequential

Shapes, as in the Stepwise benches:

- sequential: a chain of N no-op nodes, µs per step (one `invoke` ÷ N),
  with no checkpointer and with `SqliteSaver` on a WAL file with
  `PRAGMA synchronous=NORMAL` (one checkpoint per super-step);
- fan_out: K async nodes that each sleep 50 ms (`asyncio.sleep`), sent at
  once from the start node (`Send`), then one join node; wall time ÷ 50 ms.
- rss: R concurrent runs of a chain of 5 async nodes that each sleep 10 ms,
  no checkpointer, in a fresh process per round (as `cargo bench -p
  stepwise-core --bench rss`): (peak RSS − RSS before the runs) ÷ R, the
  memory of one in-flight run, and runs per second.

A developer tool, not part of scripts/test. It installs the pinned
scripts/langgraph-requirements.txt into $CARGO_TARGET_DIR/langgraph-venv
(or target/langgraph-venv) when that venv is missing, then re-runs itself
there. Each round prints one line per figure; the summary gives the range
(min – max) and the median over the rounds. No figure is asserted.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REQUIREMENTS = os.path.join(ROOT, "scripts", "langgraph-requirements.txt")
VENV = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "langgraph-venv")
PYTHON = os.path.join(VENV, "bin", "python")


def ensure_venv():
    """Re-runs this script inside the venv, creating it first if needed."""
    if os.path.realpath(sys.prefix) == os.path.realpath(VENV):
        return
    stamp = os.path.join(VENV, ".requirements")
    wanted = open(REQUIREMENTS, encoding="utf-8").read()
    have = open(stamp, encoding="utf-8").read() if os.path.exists(stamp) else None
    if have != wanted:
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
        subprocess.run([PYTHON, "-m", "pip", "install", "--quiet", "-r", REQUIREMENTS], check=True)
        with open(stamp, "w", encoding="utf-8") as f:
            f.write(wanted)
    os.execv(PYTHON, [PYTHON, os.path.abspath(__file__), *sys.argv[1:]])


def sequential_graph(n, checkpointer):
    import operator
    from typing import Annotated, TypedDict

    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        done: Annotated[int, operator.add]

    def work(_state):
        return {"done": 1}

    g = StateGraph(State)
    for i in range(n):
        g.add_node(f"s{i}", work)
        g.add_edge(START if i == 0 else f"s{i - 1}", f"s{i}")
    g.add_edge(f"s{n - 1}", END)
    return g.compile(checkpointer=checkpointer)


def sqlite_saver(path):
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(path, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    saver = SqliteSaver(conn)
    saver.setup()
    return saver


def per_step_us(n, store, tmp, runs):
    """µs per step of `runs` invocations of an N-node chain (after one warm-up)."""
    checkpointer = sqlite_saver(os.path.join(tmp, f"lg-{n}.db")) if store == "sqlite" else None
    graph = sequential_graph(n, checkpointer)
    config = {"recursion_limit": n + 10}

    def once():
        if checkpointer is not None:
            # A fresh thread per run, as each Stepwise run is a new run.
            config["configurable"] = {"thread_id": uuid.uuid4().hex}
        out = graph.invoke({"done": 0}, config)
        assert out["done"] == n, out

    once()
    start = time.perf_counter()
    for _ in range(runs):
        once()
    return (time.perf_counter() - start) / runs / n * 1e6


def fan_out_ratio(k, runs):
    """Wall time ÷ 50 ms of a fan-out of K 50 ms async nodes and a join (best of `runs`)."""
    import asyncio
    import operator
    from typing import Annotated, TypedDict

    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Send

    class State(TypedDict):
        done: Annotated[int, operator.add]

    async def work(_state):
        await asyncio.sleep(0.05)
        return {"done": 1}

    def join(_state):
        return {"done": 0}

    g = StateGraph(State)
    g.add_node("work", work)
    g.add_node("join", join)
    g.add_conditional_edges(START, lambda _s: [Send("work", {"done": 0}) for _ in range(k)], ["work"])
    g.add_edge("work", "join")
    g.add_edge("join", END)
    graph = g.compile()

    async def timed():
        start = time.perf_counter()
        out = await graph.ainvoke({"done": 0})
        wall = time.perf_counter() - start
        assert out["done"] == k, out
        return wall / 0.05

    async def all_runs():
        await timed()  # warm-up
        return [await timed() for _ in range(runs)]

    return statistics.median(asyncio.run(all_runs()))


def status_kib(field):
    """A field of /proc/self/status, in KiB."""
    with open("/proc/self/status", encoding="utf-8") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def rss_child(r):
    """Runs R concurrent 5-node chains of 10 ms async nodes; prints KiB per run and runs/s."""
    import asyncio
    import operator
    from typing import Annotated, TypedDict

    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        done: Annotated[int, operator.add]

    async def work(_state):
        await asyncio.sleep(0.01)
        return {"done": 1}

    g = StateGraph(State)
    for i in range(5):
        g.add_node(f"s{i}", work)
        g.add_edge(START if i == 0 else f"s{i - 1}", f"s{i}")
    g.add_edge("s4", END)
    graph = g.compile()

    async def all_runs():
        await graph.ainvoke({"done": 0})  # warm-up
        baseline = status_kib("VmRSS")
        start = time.perf_counter()
        outs = await asyncio.gather(*(graph.ainvoke({"done": 0}) for _ in range(r)))
        wall = time.perf_counter() - start
        assert all(o["done"] == 5 for o in outs)
        return baseline, wall

    baseline, wall = asyncio.run(all_runs())
    peak = status_kib("VmHWM")
    print(f"{(peak - baseline) / r:.2f} {r / wall:.0f}")


def rss_round(r):
    """(KiB per in-flight run, runs/s) from a fresh process."""
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--rss-child", str(r)],
                         check=True, capture_output=True, text=True).stdout.split()
    return float(out[0]), float(out[1])


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--rss-child":
        rss_child(int(sys.argv[2]))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--shapes", nargs="+", default=["sequential", "fan_out"], choices=["sequential", "fan_out", "rss"])
    ap.add_argument("--runs-in-flight", type=int, nargs="+", default=[10000])
    ap.add_argument("--steps", type=int, nargs="+", default=[10, 100])
    ap.add_argument("--fan-out", type=int, nargs="+", default=[8, 64, 512])
    args = ap.parse_args()
    ensure_venv()
    import langgraph.version

    print(f"langgraph {langgraph.version.__version__}, python {sys.version.split()[0]}, "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            if "sequential" in args.shapes:
                for store in ["none", "sqlite"]:
                    for n in args.steps:
                        # About a second of work per figure.
                        runs = max(3, 600 // n) if store == "none" else max(3, 300 // n)
                        us = per_step_us(n, store, tmp, runs)
                        figures.setdefault((f"sequential {store}", n, "µs/step"), []).append(us)
                        print(f"round {r + 1}: sequential, store {store}, N = {n}: {us:,.0f} µs per step", flush=True)
            if "fan_out" in args.shapes:
                for k in args.fan_out:
                    ratio = fan_out_ratio(k, 3)
                    figures.setdefault(("fan_out", k, "× critical path"), []).append(ratio)
                    print(f"round {r + 1}: fan-out {k} × 50 ms: {ratio:.3f} × the critical path", flush=True)
            if "rss" in args.shapes:
                for n in args.runs_in_flight:
                    kib, per_s = rss_round(n)
                    figures.setdefault(("rss", n, "KiB/run"), []).append(kib)
                    print(f"round {r + 1}: rss, R = {n}: {kib:.2f} KiB per in-flight run, "
                          f"{per_s:,.0f} runs/s", flush=True)
    print(f"\nsummary ({args.rounds} rounds; load average now "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    for (shape, n, unit), values in figures.items():
        fmt = {"µs/step": "{:,.0f}", "KiB/run": "{:.2f}"}.get(unit, "{:.3f}")
        print(f"  {shape:<18} {n:>5}: {fmt.format(min(values))} – {fmt.format(max(values))} "
              f"(median {fmt.format(statistics.median(values))}) {unit}")


if __name__ == "__main__":
    main()

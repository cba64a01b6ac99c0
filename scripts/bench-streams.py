#!/usr/bin/env python3
"""Server memory held by event streams whose clients never read
(docs/server.md, "Queue and limits"), from a release build:

    cargo build --release -p stepwise-cli
    python3 scripts/bench-streams.py                 # ~1 min
    python3 scripts/bench-streams.py --clients 10 --steps 150

Starts `stepwise serve` on a scratch site over the example notes, runs one
plan of --steps search steps to the end (each result a few KB, so the log is
long), then opens --clients event streams on that run that send their
request and never read a byte. Prints the server's resident memory (VmRSS)
before, with the clients connected, and after they close, and the growth per
client. Figures, not a test: nothing is asserted.
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKEN = "bench-token-0123456789"


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def request(url, method="GET", body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("authorization", f"Bearer {TOKEN}")
    if data is not None:
        req.add_header("content-type", "application/json")
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read())


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binary", default=os.path.join(ROOT, "target/release/stepwise"))
    p.add_argument("--clients", type=int, default=10)
    p.add_argument("--steps", type=int, default=150)
    args = p.parse_args()
    if not os.path.exists(args.binary):
        sys.exit(f"{args.binary} is missing: cargo build --release -p stepwise-cli (or pass --binary)")
    tmp = tempfile.mkdtemp(prefix="stepwise-bench-streams-")
    try:
        notes = os.path.join(tmp, "roots/notes/rag")
        shutil.copytree(os.path.join(ROOT, "examples/notes"), notes)
        os.makedirs(os.path.join(tmp, "roots/ws"))
        with open(os.path.join(tmp, "stepwise.toml"), "w") as f:
            f.write('[serve]\nnotes_roots = ["roots/notes"]\nworkspace_root = "roots/ws"\n'
                    f'[serve.limits]\nmax_steps = {max(args.steps + 10, 200)}\n'
                    f'[[serve.tokens]]\ntenant = "bench"\ntoken = "{TOKEN}"\n')
        server = subprocess.Popen(
            [args.binary, "serve", "--listen", "127.0.0.1:0", "--db", os.path.join(tmp, "runs.db")],
            cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = server.stdout.readline()
        url = line.strip().rsplit(" ", 1)[-1]
        words = ["latency", "cost", "maintenance", "privacy", "accuracy", "risk", "rollout", "tokens"]
        steps = [{"id": f"s{i}", "description": f"Search {i}", "tool": "search_notes",
                  "args": {"query": f"{words[i % len(words)]} {words[(i * 3) % len(words)]}"},
                  "acceptance_criteria": [{"check": "non_empty", "path": "results"}]}
                 for i in range(args.steps)]
        run = request(f"{url}/v1/runs", "POST", {
            "goal": "What do the notes say?", "notes": "rag",
            "plan": {"steps": steps}, "max_steps": args.steps + 10})["run_id"]
        while request(f"{url}/v1/runs/{run}")["status"] in ("running", "queued"):
            time.sleep(0.2)
        log = request(f"{url}/v1/runs/{run}/events?limit=5000")
        size = sum(len(json.dumps(e)) for e in log["events"])
        time.sleep(1)
        before = rss_kib(server.pid)
        host, port = url.removeprefix("http://").split(":")
        held = []
        for _ in range(args.clients):
            s = socket.create_connection((host, int(port)))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.sendall((f"GET /v1/runs/{run}/events HTTP/1.1\r\nHost: {host}\r\n"
                       f"Authorization: Bearer {TOKEN}\r\nAccept: text/event-stream\r\n\r\n").encode())
            held.append(s)
        time.sleep(3)
        during = rss_kib(server.pid)
        for s in held:
            s.close()
        time.sleep(2)
        after = rss_kib(server.pid)
        server.terminate()
        server.wait(timeout=30)
        print(f"log: {len(log['events'])} events, {size / 1024:.0f} KiB as JSON")
        print(f"server RSS: {before} KiB before, {during} KiB with {args.clients} never-reading "
              f"streams, {after} KiB after they closed")
        print(f"per never-reading stream: {(during - before) / args.clients:.0f} KiB")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

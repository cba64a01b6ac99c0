#!/usr/bin/env python3
"""Generates a synthetic notes corpus for timing `stepwise run` on thousands of
notes: python3 scripts/gen-corpus.py DIR [N]. Deterministic (fixed seed)."""
import os
import random
import sys

TOPICS = {
    "cost": ["cost", "budget", "price", "spend", "invoice", "tokens", "monthly", "vendor"],
    "latency": ["latency", "seconds", "first token", "p95", "timeout", "reranker", "cache"],
    "accuracy": ["accuracy", "resolved", "escalation", "golden set", "answers", "errors"],
    "risk": ["risk", "privacy", "injection", "refund", "policy", "audit", "compliance"],
    "upkeep": ["maintain", "index", "articles", "sync", "re-embedding", "owner", "hours"],
}
FILLER = ("the support team reviewed the numbers with the data team and agreed to revisit "
          "the decision after the next quarter while keeping the pilot running").split()


def sentence(rng, words):
    picked = rng.sample(words, k=min(3, len(words))) + rng.sample(FILLER, k=6)
    rng.shuffle(picked)
    n = rng.randint(2, 900)
    return f"{' '.join(picked).capitalize()} at {n} {rng.choice(['ms', 'hours', 'tickets', 'percent'])}."


def main():
    out = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 3000
    rng = random.Random(7)
    os.makedirs(out, exist_ok=True)
    for i in range(n):
        topic = rng.choice(sorted(TOPICS))
        words = TOPICS[topic]
        paras = ["\n".join(sentence(rng, words) for _ in range(rng.randint(2, 5))) for _ in range(rng.randint(2, 4))]
        with open(os.path.join(out, f"note-{i:05d}.md"), "w") as f:
            f.write(f"# {topic.capitalize()} note {i}\n\n" + "\n\n".join(paras) + "\n")


if __name__ == "__main__":
    main()

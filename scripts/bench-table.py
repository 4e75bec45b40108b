#!/usr/bin/env python3
"""Prints bench-results.json (written by scripts/bench.sh) as the Markdown table of BENCHMARKS.md.

    python3 scripts/bench-table.py [bench-results.json]
"""
import json
import sys


def num(v):
    if v is None:
        return "–"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}" if abs(v) < 1 else f"{v:.1f}"


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "bench-results.json"
    figures = json.load(open(path))
    print("| backend | workload | n | median | unit | runs | baseline (median) | ratio | target | met |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for f in figures:
        runs = " / ".join(num(r) for r in f.get("runs", []))
        base = f"{f['baseline']} ({num(f.get('baseline_value'))})" if f.get("baseline") else "–"
        ratio = f"{f['ratio']:.2f}" if f.get("ratio") is not None else "–"
        met = {True: "yes", False: "**no**"}.get(f.get("met"), "–")
        print(
            f"| {f['backend']} | {f['workload']} | {f['n']:,} | {num(f['value'])} | {f['unit']} "
            f"| {runs} | {base} | {ratio} | {f.get('target') or '–'} | {met} |"
        )


if __name__ == "__main__":
    main()

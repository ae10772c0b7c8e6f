#!/usr/bin/env python3
"""The per-seed table of a soak sweep (scripts/soak_sweep.sh): one row per
run from OUT/NAME-SEED.json, in Markdown, then a line per configuration.

    python3 scripts/soak_table.py [OUT]        (default /tmp/soak-sweep)
"""
import glob
import json
import os
import sys

COUNTERS = ["crashes", "lost", "duplicated", "reordered", "corrupt", "false_breaks", "missed_breaks"]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/soak-sweep"
    runs = []
    for path in sorted(glob.glob(os.path.join(out, "*-*.json"))):
        name = os.path.basename(path)[:-5].rsplit("-", 1)[0]
        try:
            with open(path) as f:
                runs.append((name, json.load(f)))
        except (OSError, ValueError) as e:
            print(f"soak_table: {path}: {e}", file=sys.stderr)
    print("| config | seed | faults | checked | crashes / lost / dup / reord / corrupt / false / missed "
          "| violations | RSS | private KiB/h | fds | Redis worst ms |")
    print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|")
    totals = {}
    for name, d in runs:
        faults = sum(d.get("faults", {}).values())
        counters = " / ".join(str(d.get(k, "?")) for k in COUNTERS)
        violations = len(d.get("violations", []))
        print(f"| {name} | {d.get('seed')} | {faults} | {d.get('checked', 0):,} | {counters} | {violations} "
              f"| {d.get('rss_growth_pct', 0):+.2f}% | {d.get('private_growth_kib_per_hour', 0):+,.0f} "
              f"| {d.get('fd_growth', 0):+d} | {d.get('redis_ping_worst_ms', 0):.1f} |")
        t = totals.setdefault(name, {"runs": 0, "clean": 0, "checked": 0, "faults": 0})
        t["runs"] += 1
        t["clean"] += all(d.get(k) == 0 for k in COUNTERS) and violations == 0
        t["checked"] += d.get("checked", 0)
        t["faults"] += faults
    print()
    for name, t in sorted(totals.items()):
        print(f"{name}: {t['runs']} runs, {t['clean']} with every counter 0 and no violation, "
              f"{t['faults']} faults, {t['checked']:,} checked")


if __name__ == "__main__":
    main()

"""Table of bench/allreduce_small.sh's raw results: per rank count and size, the median over
rounds of Open MPI's and each mrc algorithm's time (us), the ratios to Open MPI and the fastest
mrc algorithm.

    allreduce_small_report.py RAW_DIR [JSON_OUT] [COMMAND]
"""

import glob
import json
import os
import re
import statistics
import sys

ALGORITHMS = ["direct", "recursive", "ring"]


def times(path, mpi):
    """{size: time_us} of one run's output ({} if it failed)."""
    try:
        text = open(path).read()
    except OSError:
        return {}
    if mpi:
        rows = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
        return {r["size"]: r["time_us"] for r in rows}
    try:
        return {r["size"]: r["out_of_place"]["time_us"] for r in json.loads(text)["rows"]}
    except (ValueError, KeyError):
        return {}


def main():
    raw, out = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else ""
    command = sys.argv[3] if len(sys.argv) > 3 else ""
    samples = {}  # (ranks, transport) -> size -> [time]
    for path in glob.glob(os.path.join(raw, "r*-n*-*.json")):
        m = re.match(r"r\d+-n(\d+)-(\w+)\.json$", os.path.basename(path))
        key = (int(m.group(1)), m.group(2))
        for size, t in times(path, key[1] == "mpi").items():
            samples.setdefault(key, {}).setdefault(size, []).append(t)
    table = []
    for ranks in sorted({k[0] for k in samples}):
        sizes = sorted({s for (n, _), by in samples.items() if n == ranks for s in by})
        for size in sizes:
            row = {"ranks": ranks, "size": size}
            for t in ["mpi"] + ALGORITHMS:
                got = samples.get((ranks, t), {}).get(size)
                row[t + "_us"] = statistics.median(got) if got else None
            mrc = {a: row[a + "_us"] for a in ALGORITHMS if row[a + "_us"] is not None}
            row["fastest"] = min(mrc, key=mrc.get) if mrc else None
            for a in ALGORITHMS:
                mine, base = row[a + "_us"], row["mpi_us"]
                row[a + "_x_mpi"] = mine / base if mine and base else None
            table.append(row)
    print(f"{'ranks':>5} {'bytes':>7} {'mpi us':>8} " +
          " ".join(f"{a + ' us':>12} {'x mpi':>6}" for a in ALGORITHMS) + "  fastest")
    cell = lambda v, f: format(v, f) if v is not None else "-"
    for r in table:
        print(f"{r['ranks']:>5} {r['size']:>7} {cell(r['mpi_us'], '8.1f')} " +
              " ".join(f"{cell(r[a + '_us'], '12.1f')} {cell(r[a + '_x_mpi'], '6.2f')}"
                       for a in ALGORITHMS) + f"  {r['fastest']}")
    if out:
        with open(out, "w") as f:
            json.dump({"command": command, "rows": table}, f, indent=1)


if __name__ == "__main__":
    main()

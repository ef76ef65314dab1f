"""Summary of scripts/outside-suites.sh's runs: one TSV per run ("test<TAB>verdict") in a
directory, named fabtests-SET-MODE.tsv or mpi4py-PROVIDER-RANKS.tsv.

  outside_suites_summary.py [--json] RESULTS_DIR
  (exit status 1 if a fabtests run, or an mpi4py run over mrc, has a failure, hang or crash of
  its own)

Prints per run the count of each verdict (pass, notrun, fail, hang, crash) and the tests that
did neither pass nor end Notrun. An mpi4py run over mrc is set beside the tcp (tcp;ofi_rxm) run
of the same rank count: its failures, hangs and crashes the baseline shares are Open MPI's
("shared"), the others the provider's ("own").
"""
import glob
import json
import os
import sys

VERDICTS = ("pass", "notrun", "fail", "hang", "crash")
BAD = ("fail", "hang", "crash")


def load(path):
    out = {}
    for line in open(path):
        name, _, verdict = line.rstrip("\n").rpartition("\t")
        if name:
            out[name] = verdict
    return out


def summarise(results_dir):
    runs = {}
    for path in sorted(glob.glob(os.path.join(results_dir, "*.tsv"))):
        runs[os.path.basename(path)[:-4]] = load(path)
    summary = {}
    for key, tests in runs.items():
        s = {v: sum(1 for x in tests.values() if x == v) for v in VERDICTS}
        s["tests"] = len(tests)
        s["not_passed"] = {n: v for n, v in tests.items() if v != "pass"}
        if key.startswith("mpi4py-mrc-"):
            base = runs.get("mpi4py-tcp-" + key.rsplit("-", 1)[1])
            if base is not None:
                bad = {n: v for n, v in tests.items() if v in BAD}
                s["own"] = {n: v for n, v in bad.items() if base.get(n, "pass") not in BAD}
                s["shared"] = sorted(n for n in bad if n not in s["own"])
        summary[key] = s
    return summary


def show(summary):
    for key, s in summary.items():
        counts = ", ".join("%d %s" % (s[v], v) for v in VERDICTS)
        print("%-28s %4d tests: %s" % (key, s["tests"], counts))
        if "own" in s:
            print("%-28s the provider's own (not in tcp;ofi_rxm's run): %d, shared with it: %d"
                  % ("", len(s["own"]), len(s["shared"])))
            shown = s["own"]
        else:
            shown = {n: v for n, v in s["not_passed"].items() if v in BAD}
        for name, verdict in sorted(shown.items()):
            print("    %-6s %s" % (verdict, name))


def verdict(summary):
    """1 if a fabtests run, or an mpi4py run over mrc, has a failure, hang or crash of its own."""
    for key, s in summary.items():
        if key.startswith("mpi4py-tcp-"):
            continue
        if (len(s["own"]) if "own" in s else sum(s[v] for v in BAD)):
            return 1
    return 0


def main():
    args = sys.argv[1:]
    as_json = args[:1] == ["--json"]
    summary = summarise(args[-1])
    if as_json:
        json.dump(summary, sys.stdout, indent=1, sort_keys=True)
        print()
    else:
        print("== summary")
        show(summary)
    return verdict(summary)


if __name__ == "__main__":
    sys.exit(main())

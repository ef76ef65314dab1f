"""Summary of scripts/outside-suites.sh's runs: one TSV per run ("test<TAB>verdict[<TAB>reason]")
in a directory, named fabtests-SET-MODE.tsv or mpi4py-PROVIDER-RANKS.tsv.

  outside_suites_summary.py [--json] RESULTS_DIR
  (exit status 1 if a fabtests run, or an mpi4py run over mrc, has a failure, hang or crash of
  its own)

Prints per run the count of each verdict (pass, notrun, n/a, fail, hang, crash) and the tests
that did not pass, but for the plain Notruns (both sides refused with -FI_ENODATA or -FI_ENOSYS;
--json lists them with their reasons): failures, hangs and crashes, tests that cannot run in
that form with any provider (n/a), and Notruns that runfabtests.sh itself calls Fail (one side
refused, the other only left waiting for it), each with its reason. An mpi4py run over mrc is
set beside the tcp (tcp;ofi_rxm) run of the same rank count: its failures, hangs and crashes the
baseline shares are Open MPI's ("shared"), the others the provider's ("own").
"""
import glob
import json
import os
import sys

VERDICTS = ("pass", "notrun", "n/a", "fail", "hang", "crash")
BAD = ("fail", "hang", "crash")
# ft_verdict's reason for a Notrun that runfabtests.sh calls Fail
WAITED = "(runfabtests.sh: Fail)"


def load(path):
    """{test: (verdict, reason)}"""
    out = {}
    for line in open(path):
        name, verdict, reason = (line.rstrip("\n").split("\t") + [""])[:3]
        if name:
            out[name] = (verdict, reason)
    return out


def summarise(results_dir):
    runs = {}
    for path in sorted(glob.glob(os.path.join(results_dir, "*.tsv"))):
        runs[os.path.basename(path)[:-4]] = load(path)
    summary = {}
    for key, tests in runs.items():
        s = {v: sum(1 for x, _ in tests.values() if x == v) for v in VERDICTS}
        s["tests"] = len(tests)
        s["not_passed"] = {n: {"verdict": v, "reason": r} for n, (v, r) in tests.items() if v != "pass"}
        if key.startswith("mpi4py-mrc-"):
            base = runs.get("mpi4py-tcp-" + key.rsplit("-", 1)[1])
            if base is not None:
                bad = {n: v for n, (v, _) in tests.items() if v in BAD}
                s["own"] = {n: v for n, v in bad.items() if base.get(n, ("pass",))[0] not in BAD}
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
            shown = {n: s["not_passed"][n] for n in s["own"]}
        else:
            shown = {n: x for n, x in s["not_passed"].items()
                     if x["verdict"] in BAD + ("n/a",) or WAITED in x["reason"]}
        for name, x in sorted(shown.items()):
            print("    %-6s %s" % (x["verdict"], name))
            if x["reason"]:
                print("           %s" % x["reason"])


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

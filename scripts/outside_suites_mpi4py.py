"""One mpi4py test module under MPI, test by test, for scripts/outside-suites.sh.

Run under mpirun:  outside_suites_mpi4py.py TESTDIR MODULE OUTDIR ATTEMPT TEST_TIMEOUT
  loads MODULE through mpi4py's own test/runtests.py (its options and skips) and runs the tests
  earlier attempts in OUTDIR did not reach; each rank writes OUTDIR/rank.N.ATTEMPT: "list ID"
  for every test first, then "start ID" before and "ok|fail|skip ID" after each one, flushed, so
  a hang or a crash names the test it was in. A test still running after TEST_TIMEOUT seconds
  ends the rank (faulthandler writes the stacks into OUTDIR/stuck.N.ATTEMPT), and so the job.
Then:  outside_suites_mpi4py.py --left OUTDIR   how many tests the last attempt did not start
  (-1: it started none)
Afterwards:  outside_suites_mpi4py.py --verdicts OUTDIR
  prints "ID<TAB>verdict" per test: pass, notrun (skipped by the suite), fail (on any rank),
  hang (started, unfinished, timed out), crash (started, unfinished, the rank died).
"""
import faulthandler
import glob
import os
import sys
import unittest


class _Result(unittest.TextTestResult):
    log = None
    bound = None  # (file for the stacks, seconds)

    def _say(self, what, test):
        self.log.write("%s %s\n" % (what, test.id()))
        self.log.flush()

    def startTest(self, test):
        self._say("start", test)
        faulthandler.dump_traceback_later(self.bound[1], exit=True, file=self.bound[0])
        super().startTest(test)

    def stopTest(self, test):
        faulthandler.cancel_dump_traceback_later()
        super().stopTest(test)

    def addSuccess(self, test):
        super().addSuccess(test)
        self._say("ok", test)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._say("ok", test)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._say("skip", test)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._say("fail", test)

    def addError(self, test, err):
        super().addError(test, err)
        self._say("fail", test)

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._say("fail", test)


def _tests(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from _tests(t)
        else:
            yield t


def _attempts(outdir):
    """Per attempt, per rank: (listed, started, ended, skipped, failed)."""
    out = {}
    for p in glob.glob(os.path.join(outdir, "rank.*.*")):
        _, rank, attempt = os.path.basename(p).split(".")
        out.setdefault(int(attempt), {})[int(rank)] = _read(p)
    return out


def run(testdir, module, outdir, attempt, test_timeout):
    sys.path.insert(0, testdir)
    import runtests  # mpi4py's own runner: its options, skips and set-up

    options, _ = runtests.getoptionparser().parse_args(["--no-builddir", "-v", "-i", "^%s$" % module])
    runtests.setup_python(options)
    runtests.setup_unittest(options)
    runtests.import_package(options, "mpi4py")
    from mpi4py import MPI

    # The tests earlier attempts started. Only earlier ones: this attempt's files are being
    # written by the other ranks already, and a rank that starts late would otherwise leave out
    # the tests they began, run a different list from theirs and so wait in a collective forever.
    seen = set()
    for earlier, ranks in _attempts(outdir).items():
        if earlier < int(attempt):
            for r in ranks.values():
                seen |= r[1]
    suite = unittest.TestSuite(t for t in _tests(runtests.load_tests(options, [])) if t.id() not in seen)
    rank = MPI.COMM_WORLD.Get_rank()
    # Every rank must run the same tests in the same order, or a collective waits forever.
    ids = [t.id() for t in _tests(suite)]
    if len(set(map(tuple, MPI.COMM_WORLD.allgather(ids)))) != 1:
        sys.stderr.write("rank %d: the ranks' test lists differ\n" % rank)
        return 2
    stuck = open(os.path.join(outdir, "stuck.%d.%s" % (rank, attempt)), "w")
    with open(os.path.join(outdir, "rank.%d.%s" % (rank, attempt)), "w") as log:
        for t in _tests(suite):
            log.write("list %s\n" % t.id())
        log.flush()
        _Result.log = log
        _Result.bound = (stuck, float(test_timeout))
        runner = unittest.TextTestRunner(verbosity=2 if rank == 0 else 0, resultclass=_Result)
        ok = runner.run(suite).wasSuccessful()
        log.write("done\n")
    return 0 if ok else 1


def _read(path):
    listed, started, ended, skipped, failed = [], set(), set(), set(), set()
    for line in open(path, errors="replace"):
        what, _, name = line.rstrip("\n").partition(" ")
        if what == "list":
            listed.append(name)
        elif what == "start":
            started.add(name)
        elif what in ("ok", "skip", "fail"):
            ended.add(name)
            (skipped if what == "skip" else failed if what == "fail" else set()).add(name)
    return listed, started, ended, skipped, failed


def _listed(ranks):
    """The tests an attempt listed: any rank's list (a rank killed early may have written none)."""
    return max((r[0] for r in ranks.values()), key=len, default=[])


def verdicts(outdir):
    tried = _attempts(outdir)
    for attempt in sorted(tried):
        ranks = tried[attempt]
        hung = any(os.path.getsize(p) for p in glob.glob(os.path.join(outdir, "stuck.*.%d" % attempt)))
        for name in _listed(ranks):
            rs = ranks.values()
            if not any(name in r[1] for r in rs):
                continue  # not reached: a later attempt lists it again
            if any(name in r[4] for r in rs):
                v = "fail"
            elif any(name in r[1] and name not in r[2] for r in rs):
                v = "hang" if hung else "crash"
            elif any(name in r[3] for r in rs):
                v = "notrun"
            else:
                v = "pass"
            print("%s\t%s" % (name, v))


def left(outdir):
    tried = _attempts(outdir)
    if not tried:
        return -1
    last = tried[max(tried)]
    started = set().union(*(r[1] for r in last.values()))
    if not started:
        return -1  # no progress: give up
    return len([n for n in _listed(last) if n not in started])


if __name__ == "__main__":
    if sys.argv[1] == "--verdicts":
        verdicts(sys.argv[2])
    elif sys.argv[1] == "--left":
        print(left(sys.argv[2]))
    else:
        sys.exit(run(*sys.argv[1:6]))

#!/usr/bin/env python3
"""Tests of tests/support/ctest_report.py and picket_test.py: the counting of tests/run.sh.

A real CTest project in a temporary directory holds a passing, a failing, a timing-out, a
GoogleTest-style skipped and a Python-suite-skipped test, plus one that fails on every other run;
the JUnit file of each ctest run goes through ctest_report.py, and the summary's lines are
checked word for word.
"""
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPORT = os.path.join(HERE, "ctest_report.py")
sys.path.insert(0, HERE)
import picket_test  # noqa: E402

PROJECT = textwrap.dedent("""\
    cmake_minimum_required(VERSION 3.25)
    project(t NONE)
    enable_testing()
    add_test(NAME ok COMMAND sh -c "echo fine")
    add_test(NAME bad COMMAND sh -c "echo broken; exit 1")
    add_test(NAME hang COMMAND sleep 30)
    set_tests_properties(hang PROPERTIES TIMEOUT 1)
    add_test(NAME gskip COMMAND sh -c "printf 'a.cc:3: Skipped\\\\nneeds root\\\\n[  SKIPPED ] A.B (0 ms)\\\\n'")
    set_tests_properties(gskip PROPERTIES SKIP_REGULAR_EXPRESSION "\\\\[  SKIPPED \\\\]")
    add_test(NAME pyskip COMMAND ${PY} ${SUITE})
    set_tests_properties(pyskip PROPERTIES SKIP_RETURN_CODE 77)
    # Fails on every other run: the count of runs is kept in a file.
    add_test(NAME flaky COMMAND sh -c "n=$(cat ${DIR}/n 2>/dev/null || echo 0); echo $((n+1)) > ${DIR}/n; [ $((n % 2)) -eq 1 ]")
    add_test(NAME gone COMMAND ${DIR}/no-such-program)
    add_test(NAME off COMMAND true)
    set_tests_properties(off PROPERTIES DISABLED TRUE)
    set_tests_properties(ok bad gskip pyskip flaky off gone PROPERTIES TIMEOUT 60)
    """)

SUITE = textwrap.dedent("""\
    import sys, unittest
    sys.path.insert(0, %r)
    import picket_test
    class T(unittest.TestCase):
        def test_runs(self):
            pass
        @unittest.skip("needs the shared pcaps")
        def test_skipped(self):
            pass
    if __name__ == "__main__":
        picket_test.main([sys.argv[0]])
    """) % HERE


class Report(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="picket-report-")
        d = self.tmp.name
        self.dir = d
        with open(os.path.join(d, "suite.py"), "w") as f:
            f.write(SUITE)
        src = os.path.join(d, "src")
        os.mkdir(src)
        with open(os.path.join(src, "CMakeLists.txt"), "w") as f:
            f.write(PROJECT.replace("${PY}", sys.executable)
                    .replace("${SUITE}", os.path.join(d, "suite.py")).replace("${DIR}", d))
        self.build = os.path.join(d, "b")
        subprocess.run(["cmake", "-S", src, "-B", self.build], check=True, capture_output=True)
        self.state = os.path.join(d, "state.json")
        self.quarantine = os.path.join(d, "quarantine.txt")

    def tearDown(self):
        self.tmp.cleanup()

    def ctest(self, phase, *args):
        junit = os.path.join(self.dir, phase + ".xml")
        log = os.path.join(self.dir, phase + ".log")
        with open(log, "w") as out:
            subprocess.run(["ctest", "--test-dir", self.build, "--output-junit", junit]
                           + list(args), stdout=out, stderr=subprocess.STDOUT)
        r = subprocess.run([sys.executable, REPORT, "add", self.state, phase, junit,
                            "--quarantine", self.quarantine, "--log", log],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)

    def summary(self, *flags):
        r = subprocess.run([sys.executable, REPORT, "summary", self.state] + list(flags),
                           capture_output=True, text=True)
        return r.returncode, r.stdout.splitlines()

    def test_skips_are_counted_apart_with_their_reasons(self):
        self.ctest("unit", "-E", "flaky")
        rc, lines = self.summary()
        self.assertEqual(rc, 1)
        self.assertEqual(lines[-1], "tests: 1 passed, 3 failed, 2 skipped")
        self.assertIn("skipped: gskip [unit]: needs root", lines)
        self.assertIn("skipped: pyskip [unit]: __main__.T.test_skipped: needs the shared pcaps",
                      lines)
        self.assertIn("failed: bad [unit]: Failed", lines)
        self.assertIn("failed: hang [unit]: Timeout", lines)
        self.assertIn("phase unit: 1 passed, 3 failed, 2 skipped", lines)
        # A test CTest could not start is a failure, not a skip.
        self.assertIn("failed: gone [unit]: not run: Unable to find executable", lines)
        self.assertIn("disabled (not run, not counted): off [unit]", lines)

    def test_require_all_turns_skips_into_failures(self):
        self.ctest("unit", "-R", "^(ok|gskip|pyskip)$")
        rc, lines = self.summary()
        self.assertEqual((rc, lines[-1]), (0, "tests: 1 passed, 0 failed, 2 skipped"))
        rc, lines = self.summary("--require-all")
        self.assertEqual((rc, lines[-1]), (1, "tests: 1 passed, 2 failed, 0 skipped"))
        self.assertIn("failed: gskip [unit]: skipped under --require-all: missing prerequisite: "
                      "needs root", lines)

    def test_a_test_failing_one_run_in_two_fails_the_run(self):
        # No retry: whichever of its two runs fails is a failure of the whole run.
        self.ctest("first", "-R", "^flaky$")
        self.ctest("second", "-R", "^flaky$")
        rc, lines = self.summary()
        self.assertEqual((rc, lines[-1]), (1, "tests: 1 passed, 1 failed, 0 skipped"))
        self.assertIn("failed: flaky [first]: Failed", lines)

    def test_quarantined_tests_run_and_are_listed_not_counted(self):
        with open(self.quarantine, "w") as f:
            f.write("# a comment\nbad | 2026-11-30 | races with the stats thread (issue 27)\n")
        self.ctest("unit", "-R", "^(ok|bad)$")
        rc, lines = self.summary()
        self.assertEqual((rc, lines[-1]), (0, "tests: 1 passed, 0 failed, 0 skipped"))
        q = [line for line in lines if line.startswith("quarantined")]
        self.assertEqual(len(q), 1)
        self.assertRegex(q[0], r"^quarantined \(not counted\): bad, since 2026-11-30 \(\d+ days\): "
                               r"races with the stats thread \(issue 27\); this run: fail \[unit\]$")

    def test_a_bad_quarantine_line_names_file_and_line(self):
        with open(self.quarantine, "w") as f:
            f.write("bad | yesterday | flaky\n")
        junit = os.path.join(self.dir, "none.xml")
        r = subprocess.run([sys.executable, REPORT, "add", self.state, "unit", junit,
                            "--quarantine", self.quarantine], capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("quarantine.txt:1: bad date 'yesterday' (want YYYY-MM-DD)", r.stderr)

    def test_a_missing_junit_file_is_a_failure(self):
        r = subprocess.run([sys.executable, REPORT, "add", self.state, "unit",
                            os.path.join(self.dir, "none.xml")], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        rc, lines = self.summary()
        self.assertEqual((rc, lines[-1]), (1, "tests: 0 passed, 1 failed, 0 skipped"))

    def timeouts(self, build):
        r = subprocess.run([sys.executable, REPORT, "timeouts", self.state, "release", build],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def test_every_test_needs_a_timeout(self):
        self.assertEqual(self.timeouts(self.build), "")  # every test above sets one
        src = os.path.join(self.dir, "src2")
        os.mkdir(src)
        with open(os.path.join(src, "CMakeLists.txt"), "w") as f:
            f.write("cmake_minimum_required(VERSION 3.25)\nproject(u NONE)\nenable_testing()\n"
                    "add_test(NAME a COMMAND true)\nadd_test(NAME b COMMAND true)\n"
                    "set_tests_properties(a PROPERTIES TIMEOUT 5)\n")
        build2 = os.path.join(self.dir, "b2")
        subprocess.run(["cmake", "-S", src, "-B", build2], check=True, capture_output=True)
        self.assertEqual(self.timeouts(build2), "tests without a TIMEOUT: b\n")
        rc, lines = self.summary()
        self.assertEqual((rc, lines[-1]), (1, "tests: 1 passed, 1 failed, 0 skipped"))
        self.assertIn("failed: every CTest test has a TIMEOUT (release) [release]: no TIMEOUT: b",
                      lines)


class Outcome(unittest.TestCase):
    """picket_test.outcome(): the exit status of a Python suite."""

    def result(self, *cases):
        class T(unittest.TestCase):
            def test_pass(self):
                pass

            def test_fail(self):
                self.fail("no")

            def test_skip(self):
                self.skipTest("needs root")

        suite = unittest.TestSuite(T(name) for name in cases)
        with open(os.devnull, "w") as devnull:
            return unittest.TextTestRunner(stream=devnull).run(suite)

    def test_statuses(self):
        with open(os.devnull, "w") as devnull:
            saved, sys.stdout = sys.stdout, devnull
            try:
                self.assertEqual(picket_test.outcome(self.result("test_pass")), 0)
                self.assertEqual(picket_test.outcome(self.result("test_pass", "test_skip")), 77)
                self.assertEqual(picket_test.outcome(self.result("test_skip", "test_fail")), 1)
                self.assertEqual(picket_test.outcome(self.result()), 1)
            finally:
                sys.stdout = saved


if __name__ == "__main__":
    picket_test.main([sys.argv[0]])

"""Run the unittest suite; with RUNNER_GUARD_REPORT set, write a JUnit XML report there."""

import os
import sys
import unittest
from xml.sax.saxutils import quoteattr


class Recorder(unittest.TextTestResult):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.outcomes = []

    def addSuccess(self, test):
        super().addSuccess(test)
        self.outcomes.append((test, ""))

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.outcomes.append((test, "<failure/>"))

    def addError(self, test, err):
        super().addError(test, err)
        self.outcomes.append((test, "<error/>"))


suite = unittest.defaultTestLoader.discover(".")
result = unittest.TextTestRunner(resultclass=Recorder, verbosity=1).run(suite)
report = os.environ.get("RUNNER_GUARD_REPORT")
if report:
    cases = "".join(
        f"<testcase classname={quoteattr(type(test).__module__ + '.' + type(test).__name__)} "
        f"name={quoteattr(test._testMethodName)}>{body}</testcase>"
        for test, body in result.outcomes
    )
    with open(report, "w", encoding="utf-8") as out:
        out.write(f'<?xml version="1.0"?><testsuite name="invoice">{cases}</testsuite>\n')
sys.exit(0 if result.wasSuccessful() else 1)

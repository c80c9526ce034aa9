"""What an iteration's guard runs have said so far: the baseline, the judged report, its reruns.

Decides nothing about the verdict (guard_stage does): it keeps the reports as they arrive, the
guard logs the write-set must move into place, and the figures once the guard's part is over.
Never runs a guard.
"""

from __future__ import annotations

import attrs

from runner_core.guard.ratchet import TestFigures, figures_against
from runner_core.guard.report import TestReport
from runner_core.iteration.guard_stage import outcome_document, pending
from runner_core.tree.model import GuardOutcome


@attrs.frozen(slots=True)
class GuardRuns:
    """The guard's reports of one iteration. `logs` pairs each extra guard log's name in the
    iteration log with the pending name it is written under."""

    baseline: TestReport | None = None
    report: TestReport | None = None  # the report of the run that judged the agent's work
    problem: str | None = None  # why the judged run's report could not be read
    reruns: tuple[TestReport, ...] = ()
    rerun_count: int = 0
    exit_outcome: GuardOutcome = GuardOutcome.SKIPPED
    figures: TestFigures | None = None
    logs: tuple[tuple[str, str], ...] = ()

    def logged(self, name: str) -> GuardRuns:
        return attrs.evolve(self, logs=(*self.logs, (name, pending(name))))

    def measured(self, baseline: TestReport) -> GuardRuns:
        return attrs.evolve(self, baseline=baseline)

    def judged(
        self, report: TestReport | None, problem: str | None, exit_outcome: GuardOutcome
    ) -> GuardRuns:
        return attrs.evolve(self, report=report, problem=problem, exit_outcome=exit_outcome)

    def rerun(self, report: TestReport | None) -> GuardRuns:
        reruns = self.reruns if report is None else (*self.reruns, report)
        return attrs.evolve(self, reruns=reruns, rerun_count=self.rerun_count + 1)

    def concluded(self, figures: TestFigures | None) -> GuardRuns:
        return attrs.evolve(self, figures=figures)

    def tests_json(self) -> str | None:
        """tests.json's text, when the judged run wrote a readable report."""
        if self.report is None:
            return None
        figures = self.figures or figures_against(self.baseline or TestReport(), self.report)
        return outcome_document(self.baseline, self.report, figures)

from __future__ import annotations

from runner_core.iteration.facts import Failure, runner_error_text


def test_a_runner_errors_message_is_one_line_or_the_failures_name() -> None:
    assert runner_error_text(Failure.IO, "disk\n  full\tagain ") == "disk full again"
    assert runner_error_text(Failure.IO, " \n ") == Failure.IO.value

"""`[notify]`: its keys checked in one line each (a URL's secret never echoed), and the message
each event sends: the run, the node, the CLI's line and what to do."""

from __future__ import annotations

from typing import Any

import pytest

from runner_core.loop import events
from runner_core.loop.events import EventOrigin
from runner_core.run.config import ConfigError, parse_config, render_config
from runner_core.run.notify_config import NO_NOTIFY, NOTIFY_EVENTS, NotifyConfig
from runner_core.views.notify import notice_for

HERE = EventOrigin("run-1a2b3c4d", 3, "root.2", "2026-12-01T02:00:00Z")
TOLD = NotifyConfig(urls=("json://127.0.0.1:9/",))


def _notify(**table: Any) -> NotifyConfig:
    return parse_config({"notify": table}).notify


def test_the_default_sends_nothing_and_a_written_config_leaves_the_table_out() -> None:
    assert parse_config({}).notify == NO_NOTIFY
    assert "[notify]" not in render_config(parse_config({}))


def test_a_table_reads_back_from_the_config_it_writes() -> None:
    config = parse_config({"notify": {"urls": ["ntfy://t0pic"], "on": ["budget", "stuck"]}})
    assert config.notify.on == ("stuck", "budget")  # in the documented order
    import tomllib

    assert parse_config(tomllib.loads(render_config(config))).notify == config.notify


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"urls": "json://x"}, "notify.urls: must be an array of non-empty strings"),
        (
            {"urls": ["tgram://s3cret token"]},
            "each must be an Apprise URL (scheme://…), got tgram://…",
        ),
        ({"urls": ["s3cret"]}, "got a value without '://'"),
        ({"on": ["stuck", "lunch"]}, "unknown event 'lunch' (choose from stuck, complete"),
        ({"timeout_secs": 0}, "notify.timeout_secs: must be a whole number from 1 to 300, got 0"),
        ({"when": 1}, "notify"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_key(table: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        _notify(**table)
    assert message in str(raised.value)
    assert "s3cret" not in str(raised.value)


def test_a_stuck_leaf_tells_the_run_the_node_the_line_and_what_to_do() -> None:
    notice = notice_for(events.stuck(HERE, "stop"), TOLD)
    assert notice is not None
    assert notice.title == "runner: run run-1a2b3c4d is stuck at node root.2"
    lines = notice.body.splitlines()
    assert lines[:3] == ["run: run-1a2b3c4d", "node: root.2", "at: 2026-12-01T02:00:00Z"]
    assert lines[3].startswith("loop: status=stuck run=run-1a2b3c4d")
    assert lines[-1].startswith("what to do: look at `runner history --node root.2`")


def test_each_event_kind_sends_one_message_when_on_lists_it() -> None:
    each = {
        "stuck": events.stuck(HERE, "stop"),
        "complete": events.complete(HERE, 3),
        "question": events.question(HERE, "Which database?"),
        "limit_wait": events.waiting(HERE, "rate_limited", "2026-12-01T02:05:00Z", 300),
        "runner_errors": events.runner_error(HERE, "git failed", 1, 3),
        "budget": events.budget_exhausted(HERE, "cost_usd", 5.0, 5.0),
    }
    assert tuple(each) == NOTIFY_EVENTS
    for kind, event in each.items():
        notice = notice_for(event, TOLD)
        assert notice is not None and notice.kind == kind
        assert notice_for(event, NotifyConfig(urls=TOLD.urls, on=())) is None
        assert notice_for(event, NO_NOTIFY) is None
    assert notice_for(events.agent_started(HERE, "executor", "codex"), TOLD) is None

"""`runner validate --json` prints its document whether the checks pass or one fails: the
checks that passed say `ok`, the one that failed says `failed` with the error beside it, and
the ones never reached are null."""

from __future__ import annotations

import json

import jsonschema

from runner_core.views.checks import validation_to_json
from tests.helpers import SCHEMAS

SCHEMA = json.loads((SCHEMAS / "views" / "validate.schema.json").read_text(encoding="utf-8"))


def test_a_passing_validation_has_no_error_key() -> None:
    lines = ["validate: layout=ok", "validate: config=ok", "validate: tree=ok"]
    document = validation_to_json([*lines, "validate: run=ok id=run-1 branch=runner/run-1"])

    jsonschema.validate(document, SCHEMA, cls=jsonschema.Draft202012Validator)
    assert "error" not in document


def test_the_first_check_not_passed_is_the_failed_one() -> None:
    document = validation_to_json(["validate: layout=ok"], "config.toml: max_iterations ...")

    jsonschema.validate(document, SCHEMA, cls=jsonschema.Draft202012Validator)
    assert document == {
        "layout": "ok",
        "config": "failed",
        "tree": None,
        "run": None,
        "id": None,
        "branch": None,
        "sandbox": None,
        **dict.fromkeys(("userns", "caps", "seccomp", "fs", "env", "net", "limits")),
        "error": "config.toml: max_iterations ...",
    }


def test_a_run_identity_failure_fails_the_run_check() -> None:
    lines = ["validate: layout=ok", "validate: config=ok", "validate: tree=ok"]

    document = validation_to_json(lines, "not on the run branch")

    jsonschema.validate(document, SCHEMA, cls=jsonschema.Draft202012Validator)
    assert (document["run"], document["error"]) == ("failed", "not on the run branch")


def test_the_network_layer_is_read_whole_though_it_holds_a_space() -> None:
    lines = ["validate: sandbox=bwrap net=proxy(3 hosts)"]

    document = validation_to_json(lines)

    jsonschema.validate(document, SCHEMA, cls=jsonschema.Draft202012Validator)
    assert (document["sandbox"], document["net"]) == ("bwrap", "proxy(3 hosts)")


def test_a_setup_line_adds_setup_and_its_inputs() -> None:
    lines = ["validate: sandbox=off", "validate: setup=yes setup_inputs=package.json,uv.lock"]

    document = validation_to_json(lines)

    jsonschema.validate(document, SCHEMA, cls=jsonschema.Draft202012Validator)
    assert (document["setup"], document["setup_inputs"]) == ("yes", "package.json,uv.lock")

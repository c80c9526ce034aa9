"""The final JSON values agents print: usable ones, and ones the runner must refuse.

Decides nothing the runner decides. A valid decomposer output passes
`decomposer_output_findings` and is a usable decomposition (at least one child, no blank title
or goal); a valid executor output passes `executor_output_findings`. Invalid ones fail their
schema check, which the runner treats as a runner error.
"""

from __future__ import annotations

from typing import Any, Literal

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from runner_core.testing.trees import texts

# Text that is not blank: what a usable child's title and goal need.
filled_texts = st.builds(lambda head, tail: head + tail, st.sampled_from("ab€😀"), texts)


def _child_specs() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {
            "title": filled_texts,
            "goal": filled_texts,
            "acceptance": st.lists(texts, max_size=3),
            "next": st.sampled_from(("execute", "decompose")),
        }
    )


def decomposer_outputs(*, valid: bool = True, max_children: int = 3) -> st.SearchStrategy[Any]:
    """Decomposer outputs `{"summary", "children": [{title, goal, acceptance, next}]}`.

    `valid=True`: schema-valid, with 1..max_children children whose titles and goals are not
    blank, so review_decomposition accepts them for any open leaf. `valid=False`: values
    `decomposer_output_findings` refuses (a missing or extra key, a wrong type, a bad `next`,
    not an object).
    """
    if max_children < 1:
        raise InvalidArgument(f"max_children={max_children} must be >= 1")
    good = st.fixed_dictionaries(
        {"summary": texts, "children": st.lists(_child_specs(), min_size=1, max_size=max_children)}
    )
    if valid:
        return good
    return good.flatmap(_broken_decomposer_output)


def _broken_decomposer_output(output: dict[str, Any]) -> st.SearchStrategy[Any]:
    child = output["children"][0]
    return st.sampled_from(
        (
            {"summary": output["summary"]},
            {"children": output["children"]},
            {**output, "extra": 1},
            {**output, "summary": None},
            {**output, "children": {"0": child}},
            {**output, "children": [{**child, "next": "done"}]},
            {**output, "children": [{**child, "title": 1}]},
            {**output, "children": [{key: child[key] for key in ("title", "goal", "next")}]},
            {**output, "children": [{**child, "acceptance": [1]}]},
            output["children"],
            "decomposed",
            None,
        )
    )


def executor_outputs(
    *, valid: bool = True, status: Literal["done", "retry"] | None = None
) -> st.SearchStrategy[Any]:
    """Executor outputs `{"status": "done" | "retry", "summary"}`.

    `valid=True`: schema-valid, with `status` when given. `valid=False`: values
    `executor_output_findings` refuses (an unknown status, a missing or extra key, a wrong
    type, not an object).
    """
    if status not in (None, "done", "retry"):
        raise InvalidArgument(f"status must be 'done', 'retry' or None, got {status!r}")
    statuses = st.sampled_from(("done", "retry")) if status is None else st.just(status)
    good = st.fixed_dictionaries({"status": statuses, "summary": texts})
    if valid:
        return good
    return good.flatmap(
        lambda output: st.sampled_from(
            (
                {**output, "status": "decomposed"},
                {**output, "status": "finished"},
                {"status": output["status"]},
                {"summary": output["summary"]},
                {**output, "extra": True},
                {**output, "summary": 0},
                [output],
                "done",
                None,
            )
        )
    )

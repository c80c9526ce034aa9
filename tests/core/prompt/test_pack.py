"""Specification of the prompt pack.

Sections in a fixed order; contract, goal, selected node and output contract required; over
the byte budget, tree → assumptions → questions → history → failure are dropped one at a time
until it fits, and only then the goal (then the selected node) is cut, marked `[truncated]`.
"""

from __future__ import annotations

import pytest

from runner_core.prompt.pack import (
    DROP_ORDER,
    TRUNCATED_MARK,
    PromptPack,
    build_prompt_pack,
    selected_section,
    tree_outline,
)
from tests.helpers.trees import tree

BIG_BUDGET = 10**9

SECTION_TITLES_IN_ORDER = [
    "## Runner contract",
    "## Project goal",
    "## Previous attempt",
    "## Guard failure of the previous attempt",
    "## Selected node",
    "## Task tree summary",
    "## Assumptions so far",
    "## Open questions",
    "## Output contract",
]


def every_section() -> dict[str, str | None]:
    return {
        "output": "Write {status, summary} to RUNNER_OUTPUT_PATH.",
        "questions": "- Which database?",
        "assumptions": "- Python 3.11",
        "tree": "- [ ] root: Root (0/3)",
        "selected": "path: root\nid: root",
        "failure": "=== stdout ===\n1 failed",
        "history": "the fixture was missing",
        "tests": "Target tests:\n- t::a",
        "goal": "Ship the parser.",
        "contract": "You are the executor.",
    }


def size_without(sections: dict[str, str | None], *names: str) -> int:
    kept = {name: text for name, text in sections.items() if name not in names}
    return build_prompt_pack(kept, BIG_BUDGET).size_bytes


# ---------------------------------------------------------------- order and required sections


def test_a_small_pack_renders_each_section_under_its_heading() -> None:
    pack = build_prompt_pack(
        {"contract": "C", "goal": "G\n", "selected": "S", "output": "O"}, BIG_BUDGET
    )

    assert pack == PromptPack(
        text=(
            "## Runner contract\n\nC\n\n"
            "## Project goal\n\nG\n\n"
            "## Selected node\n\nS\n\n"
            "## Output contract\n\nO\n"
        ),
        included=("contract", "goal", "selected", "output"),
        dropped=(),
        truncated=(),
    )


def test_sections_appear_in_the_fixed_order_whatever_order_they_are_given_in() -> None:
    pack = build_prompt_pack(every_section(), BIG_BUDGET)

    positions = [pack.text.index(title + "\n") for title in SECTION_TITLES_IN_ORDER]
    assert positions == sorted(positions)
    assert pack.included == (
        "contract",
        "goal",
        "history",
        "failure",
        "selected",
        "tests",
        "tree",
        "assumptions",
        "questions",
        "output",
    )


@pytest.mark.parametrize("missing", ["contract", "goal", "selected", "output"])
def test_a_pack_without_a_required_section_is_refused(missing: str) -> None:
    sections = every_section()
    del sections[missing]

    with pytest.raises(ValueError) as raised:
        build_prompt_pack(sections, BIG_BUDGET)

    assert str(raised.value) == f"prompt pack is missing required sections: {missing}"


def test_a_blank_required_section_counts_as_missing() -> None:
    sections = every_section()
    sections["goal"] = " \n"
    sections["output"] = None

    with pytest.raises(ValueError) as raised:
        build_prompt_pack(sections, BIG_BUDGET)

    assert str(raised.value) == "prompt pack is missing required sections: goal, output"


def test_an_unknown_section_is_refused() -> None:
    sections = every_section()
    sections["jokes"] = "knock knock"

    with pytest.raises(ValueError) as raised:
        build_prompt_pack(sections, BIG_BUDGET)

    assert str(raised.value) == "unknown prompt sections: jokes"


def test_absent_or_blank_optional_sections_are_left_out_without_being_dropped() -> None:
    sections = every_section()
    sections["history"] = None
    sections["failure"] = "\n\n"
    del sections["questions"]

    pack = build_prompt_pack(sections, BIG_BUDGET)

    assert "## Previous attempt" not in pack.text
    assert "## Guard failure" not in pack.text
    assert "## Open questions" not in pack.text
    assert pack.dropped == ()


# ---------------------------------------------------------------- dropping


def test_a_pack_within_budget_keeps_every_section() -> None:
    sections = every_section()
    exact = size_without(sections)

    pack = build_prompt_pack(sections, exact)

    assert (pack.size_bytes, pack.dropped, pack.truncated) == (exact, (), ())


@pytest.mark.parametrize("count", range(1, len(DROP_ORDER) + 1))
def test_sections_are_dropped_tree_assumptions_questions_history_tests_failure_until_it_fits(
    count: int,
) -> None:
    sections = every_section()
    budget = size_without(sections, *DROP_ORDER[:count])

    pack = build_prompt_pack(sections, budget)

    assert pack.dropped == DROP_ORDER[:count]
    assert pack.truncated == ()
    assert set(pack.included).isdisjoint(pack.dropped)
    assert pack.size_bytes <= budget


def test_the_drop_order_is_the_one_of_the_spec() -> None:
    # A ratchet's "tests" section (the node's target tests) goes just before the failure log.
    assert DROP_ORDER == ("tree", "assumptions", "questions", "history", "tests", "failure")


def test_dropping_stops_as_soon_as_the_pack_fits() -> None:
    sections = every_section()
    sections["tree"] = "- [ ] node\n" * 100
    budget = size_without(sections, "tree")

    pack = build_prompt_pack(sections, budget)

    assert pack.dropped == ("tree",)
    assert "## Assumptions so far" in pack.text


def test_sections_that_are_absent_are_not_reported_as_dropped() -> None:
    sections = every_section()
    del sections["assumptions"]
    budget = size_without(sections, "tree", "questions")

    pack = build_prompt_pack(sections, budget)

    assert pack.dropped == ("tree", "questions")


# ---------------------------------------------------------------- truncating


def test_still_over_budget_the_goal_is_cut_and_marked_truncated() -> None:
    sections = every_section()
    sections["goal"] = "g" * 1_000
    budget = size_without(sections, *DROP_ORDER) - 100

    pack = build_prompt_pack(sections, budget)

    assert pack.dropped == DROP_ORDER
    assert pack.truncated == ("goal",)
    assert pack.size_bytes == budget
    goal_body = pack.text.split("## Project goal\n\n")[1].split("\n\n## ")[0]
    assert goal_body == "g" * (1_000 - 100 - len(TRUNCATED_MARK)) + "\n[truncated]"


def test_the_selected_node_is_cut_only_after_the_goal_is_cut_to_nothing() -> None:
    sections = every_section()
    sections["selected"] = "s" * 1_000
    budget = size_without(sections, *DROP_ORDER) - 500

    pack = build_prompt_pack(sections, budget)

    assert pack.truncated == ("goal", "selected")
    assert "## Project goal\n\n\n[truncated]\n" in pack.text
    assert "s\n[truncated]\n" in pack.text
    assert pack.size_bytes <= budget


def test_the_runner_contract_and_output_contract_are_never_cut() -> None:
    sections = every_section()
    sections["goal"] = "g" * 1_000

    pack = build_prompt_pack(sections, 200)

    assert pack.text.startswith("## Runner contract\n\nYou are the executor.\n\n")
    assert pack.text.endswith(
        "## Output contract\n\nWrite {status, summary} to RUNNER_OUTPUT_PATH.\n"
    )


def multibyte_sections() -> dict[str, str | None]:
    """Text full of 2-, 3- and 4-byte characters, with trailing whitespace to ignore."""
    return {
        "contract": "Vertrag ✓",
        "goal": "Zïel 😀 目標 " * 40 + "\n\n \n",
        "history": "é" * 30,
        "failure": "€" * 20 + "\n",
        "selected": "wählen 😀\n" * 12 + "\n\n",
        "tree": "- [ ] 根\n" * 10,
        "assumptions": "ß" * 15,
        "questions": "¿" * 15,
        "output": "Ausgabe ✓",
    }


def smallest_pack_size(sections: dict[str, str | None]) -> int:
    """Contract and output whole; goal and selected cut to nothing but their mark."""
    floor = {
        "contract": sections["contract"],
        "goal": TRUNCATED_MARK,
        "selected": TRUNCATED_MARK,
        "output": sections["output"],
    }
    return build_prompt_pack(floor, BIG_BUDGET).size_bytes


def test_the_pack_fits_every_budget_that_leaves_room_for_contract_and_output() -> None:
    sections = multibyte_sections()
    full = size_without(sections)

    for budget in range(smallest_pack_size(sections), full + 1):
        pack = build_prompt_pack(sections, budget)
        assert pack.size_bytes <= budget, budget


def test_cutting_never_splits_a_multibyte_character() -> None:
    sections = multibyte_sections()
    goal = str(sections["goal"])

    for budget in range(smallest_pack_size(sections), size_without(sections, *DROP_ORDER)):
        pack = build_prompt_pack(sections, budget)
        kept = pack.text.split("## Project goal\n\n")[1].split("\n[truncated]")[0]
        assert goal.startswith(kept), budget
        assert "\ufffd" not in pack.text
        pack.text.encode("utf-8")


def test_a_budget_too_small_for_contract_and_output_still_keeps_them_whole() -> None:
    pack = build_prompt_pack(every_section(), 10)

    assert "You are the executor." in pack.text
    assert "Write {status, summary} to RUNNER_OUTPUT_PATH." in pack.text
    assert pack.truncated == ("goal", "selected")


# ---------------------------------------------------------------- section texts


def test_the_selected_section_names_path_id_title_goal_and_acceptance() -> None:
    leaf = tree("a.2", title="Parse", goal="Parse the input.", acceptance=["one", "two"])

    assert selected_section(leaf, "root/a/a.2") == (
        "path: root/a/a.2\n"
        "id: a.2\n"
        "title: Parse\n"
        "attempts: 0/3\n"
        "\n"
        "goal:\n"
        "Parse the input.\n"
        "\n"
        "acceptance:\n"
        "- one\n"
        "- two\n"
    )


def test_the_selected_section_says_when_no_acceptance_was_given() -> None:
    assert selected_section(tree("leaf"), "root/leaf").endswith("acceptance:\n- (none given)\n")


def test_the_tree_outline_shows_every_node_in_selection_order_with_its_state() -> None:
    root = tree(
        "root",
        tree("b", order=1, next="decompose"),
        tree("a", tree("a.1", passes=True), tree("a.2", attempts=3, order=1), order=0),
        title="Root",
    )

    assert tree_outline(root, "b") == (
        "- [ ] root: Root (0/3)\n"
        "  - [ ] a: title of a (0/3)\n"
        "    - [x] a.1: title of a.1 (0/3)\n"
        "    - [!] a.2: title of a.2 (3/3)\n"
        "  - [ ] b: title of b (decompose) (0/3)  <- selected\n"
    )


def test_the_tree_outline_is_bounded_and_says_how_many_nodes_it_left_out() -> None:
    root = tree("root", *(tree(f"n{i:03}", order=i) for i in range(499)))

    outline = tree_outline(root, "n000", max_lines=200)

    lines = outline.splitlines()
    assert len(lines) == 201
    assert lines[-1] == "... (300 more nodes not shown)"
    assert lines[1] == "  - [ ] n000: title of n000 (0/3)  <- selected"


def test_a_tree_outline_within_its_bound_has_no_more_nodes_line() -> None:
    root = tree("root", *(tree(f"n{i}", order=i) for i in range(9)))

    assert "more nodes" not in tree_outline(root, "n0", max_lines=10)

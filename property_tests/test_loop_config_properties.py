"""Property of the `[loop]`, `[budget]` and `[hooks]` tables: any valid value renders to TOML that
parse_config reads back as the same configuration."""

from __future__ import annotations

import tomllib

from hypothesis import given
from hypothesis import strategies as st

from runner_core.run.config import (
    HOOK_NAMES,
    BudgetConfig,
    Config,
    HooksConfig,
    LoopConfig,
    parse_config,
    render_config,
)

argv_part = st.text(
    st.characters(blacklist_categories=["Cs"], blacklist_characters="\0"), min_size=1, max_size=6
)
loops = st.builds(
    LoopConfig,
    max_consecutive_runner_errors=st.integers(0, 1000),
    runner_error_backoff_secs=st.lists(st.integers(0, 604800), min_size=1, max_size=5).map(tuple),
    max_wait_secs=st.integers(1, 604800),
    on_stuck=st.sampled_from(["stop", "decompose"]),
    hook_timeout_secs=st.integers(1, 3600),
)
budgets = st.builds(
    BudgetConfig,
    max_cost_usd=st.none() | st.floats(min_value=1e-9, max_value=1e6),
    max_tokens=st.none() | st.integers(1, 10**12),
    max_wall_secs=st.none() | st.integers(1, 10 * 365 * 24 * 3600),
)
hooks = st.fixed_dictionaries(
    {},
    optional={name: st.lists(argv_part, min_size=1, max_size=3).map(tuple) for name in HOOK_NAMES},
).map(lambda argvs: HooksConfig(**argvs))


@given(loops, budgets, hooks)
def test_rendered_loop_tables_read_back_unchanged(
    loop: LoopConfig, budget: BudgetConfig, hook_argvs: HooksConfig
) -> None:
    """parse_config(tomllib.loads(render_config(c))) == c for any valid loop, budget, hooks."""
    config = Config(loop=loop, budget=budget, hooks=hook_argvs)
    assert parse_config(tomllib.loads(render_config(config))) == config

"""Property of the sandbox keys: any valid `[sandbox]` table and `[guard] network` render to
TOML that parse_config reads back as the same configuration."""

from __future__ import annotations

import tomllib

from hypothesis import given
from hypothesis import strategies as st

from runner_core.run.config import SANDBOX_MODES, Config, SandboxConfig, parse_config, render_config
from runner_core.run.sandbox_config import came_near_memory

argv_part = st.text(
    st.characters(blacklist_categories=["Cs"], blacklist_characters="\0"), min_size=1, max_size=6
)
sandboxes = st.builds(
    SandboxConfig,
    mode=st.sampled_from(SANDBOX_MODES),
    setup=st.lists(argv_part, max_size=3).map(tuple),
)


@given(sandboxes, st.booleans())
def test_rendered_sandbox_keys_read_back_unchanged(sandbox: SandboxConfig, network: bool) -> None:
    """parse_config(tomllib.loads(render_config(c))) == c for any sandbox table and network."""
    config = Config(guard_network=network, sandbox=sandbox)
    assert parse_config(tomllib.loads(render_config(config))) == config


limits = st.integers(min_value=64 * 2**20, max_value=2**40)


@given(st.booleans(), st.integers(min_value=0, max_value=2**41), limits, st.integers(0, 2**40))
def test_coming_near_memory_grows_with_the_peak_and_needs_a_failure(
    failed: bool, peak: int, limit: int, more: int
) -> None:
    """Only a failed session held to RLIMIT_DATA comes near memory_mb; a larger peak is no
    less near; a peak of half the limit is, one below it is not."""
    near = came_near_memory(failed, peak, limit)
    assert near <= failed
    assert not came_near_memory(failed, peak, None)
    assert near <= came_near_memory(failed, peak + more, limit)
    assert came_near_memory(True, -(-limit // 2), limit)
    assert not came_near_memory(True, limit // 2 - 1, limit)

"""Property of the sandbox keys: any valid `[sandbox]` table and `[guard] network` render to
TOML that parse_config reads back as the same configuration."""

from __future__ import annotations

import tomllib

from hypothesis import given
from hypothesis import strategies as st

from runner_core.run.config import SANDBOX_MODES, Config, SandboxConfig, parse_config, render_config

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

"""What a configuration problem says: the dotted TOML key and the problem with its value.

Shared by the config's tables (config.py and the tables kept in modules of their own, such as
executor_config.py), so each names its keys the same way. Decides nothing about any value.
"""

from __future__ import annotations


class ConfigError(ValueError):
    """A bad configuration value; `key` is the dotted TOML key."""

    def __init__(self, key: str, problem: str) -> None:
        self.key = key
        self.problem = problem
        super().__init__(f"{key}: {problem}")

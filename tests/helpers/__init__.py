"""What the tests share: builders of trees and records, projects, fake agents, servers.

`ROOT` is the repository's root, `SCHEMAS` its `schemas/` and `FAKE_CLIS` the fake `codex` and
`claude` executables that print what the real ones print.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
SCHEMAS = ROOT / "schemas"
FAKE_CLIS = Path(__file__).resolve().parent / "fake_clis"

"""No runner git command runs a filter driver an agent defined, wherever git's config holds it.

Each test has a scripted agent define a filter whose clean command leaves a marker file outside
the repository, name it for every path in .gitattributes and change a file; the runner's
`git status`, `git add` and commit over the next steps never run it. The test then runs git
itself, as a user would, to show the filter was live.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from runner_shell.git.hardened import configured_filters
from tests.helpers.crash import cli
from tests.helpers.e2e import Project, node

TWO_LEAVES = node("root", next_="decompose", children=[node("root.1"), node("root.2", order=1)])
RUN_ROOT = '"$RUNNER_ITER_DIR/../../../.."'
WRITE_DONE = 'printf \'{"status": "done", "summary": "ok"}\' > "$RUNNER_OUTPUT_PATH"'

# Where each agent puts the driver: `{section}` is its section header, `{body}` the rest.
PLANTS = {
    "an included file": (
        "printf '{section}\\n{body}' > .git/extra.inc\ngit config include.path extra.inc"
    ),
    "a conditionally included file": (
        "printf '{section}\\n{body}' > .git/extra.inc\n"
        "printf '[includeIf \"gitdir:**\"]\\n\\tpath = extra.inc\\n' >> .git/config"
    ),
    "the global config": "printf '{section}\\n{body}' > \"$HOME/.gitconfig\"",
    "the XDG config": (
        'mkdir -p "$HOME/.config/git"\nprintf \'{section}\\n{body}\' > "$HOME/.config/git/config"'
    ),
    "a symlinked repository config": (
        "cp .git/config .git/real.config\nprintf '{section}\\n{body}' >> .git/real.config\n"
        "ln -sf real.config .git/config"
    ),
    "a config past 4 MiB": (
        "head -c 5000000 /dev/zero | tr '\\0' '#' >> .git/config\n"
        "printf '\\n{section}\\n{body}' >> .git/config"
    ),
    "an old-style section in capitals": "printf '[filter.X]\\n{body}' >> .git/config",
}


def plant(where: str, marker: Path) -> str:
    body = f"\\tclean = touch {marker}; cat\\n\\trequired = true\\n"
    return PLANTS[where].format(section='[filter "x"]', body=body)


@pytest.mark.parametrize("where", sorted(PLANTS))
def test_a_filter_the_agent_defines_is_never_run_by_the_runner(
    project: Project, tmp_path: Path, where: str
) -> None:
    marker = tmp_path / "filter-ran"
    attributes = "printf '* filter=x\\n' > .gitattributes"
    # Planted in the run's own repository, reached through the absolute paths the agent is
    # given (until a sandbox hides it); the agent's work is in its scratch checkout.
    script = f"(cd {RUN_ROOT}\n{plant(where, marker)})\n{attributes}\necho work > work.txt"
    project.prepare(TWO_LEAVES, agent_command=["sh", "-c", f"{script}\n{WRITE_DONE}"])

    first = cli(project, "step", timeout=60)
    assert first.returncode == 0, first.stderr
    # `git status` cleans again a file whose stat changed: the next step's does.
    os.utime(project.root / "work.txt", (1, 1))
    second = cli(project, "step", timeout=60)

    assert not marker.exists()
    assert second.returncode in (0, 2), second.stderr
    assert project.git("show", "HEAD:work.txt") == "work\n"
    os.utime(project.root / "work.txt", (2, 2))
    project.git("add", "work.txt")
    assert marker.exists()


def test_filter_names_are_read_as_git_reads_them(tmp_path: Path) -> None:
    config = tmp_path / "config"
    text = '\ufeff[filter "a \\"b\\" c"]\n\tclean = x\n[core]\n[Filter.OLD]\n\tclean = y\n'
    config.write_text(text, encoding="utf-8")

    assert configured_filters([config, tmp_path / "absent"], tmp_path) == ('a "b" c', "old")

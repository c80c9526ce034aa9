"""`runner serve` folds each new iteration into the history it keeps (runner_shell/store/
history_fold.py): its documents are the ones a fresh reading gives, after a new iteration and
after a history rewrite, which it reads whole."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from runner_shell.git.run_checkout import locate_run
from runner_shell.web.serve import Api, StatusCache
from tests.helpers.e2e import Project, ProjectFactory
from tests.shell.web.test_serve import completed_run


def changed_state(project: Project) -> None:
    """A status source changes, as each step changes run_state.json: the cache reads again."""
    state = project.root / ".runner" / "state" / "run_state.json"
    state.write_bytes(state.read_bytes())
    os.utime(state, ns=(1, 1))


def copied_iteration(project: Project, source: int, number: int) -> None:
    """Iteration `number`, as iteration `source` was recorded but for its number."""
    target = project.iter_dir(number)
    shutil.copytree(project.iter_dir(source), target)
    meta = json.loads((target / "meta.json").read_text(encoding="utf-8"))
    (target / "meta.json").write_text(json.dumps(meta | {"iter": number}), encoding="utf-8")


def test_a_new_iteration_is_folded_into_the_documents_the_page_reads(
    tmp_path: Path, make_project: ProjectFactory
) -> None:
    project = completed_run(tmp_path, make_project)
    paths, repo = locate_run(project.root)
    api, cache = Api(paths, repo, None), StatusCache()
    before = api.documents(cache)
    copied_iteration(project, 3, 4)
    changed_state(project)
    after = api.documents(cache)
    reading, _ = cache.reading(api, False)
    assert [record.iteration for record in reading.history.records] == [1, 2, 3, 4]
    assert cache.records.folds >= 1
    assert after != before
    assert after == api.documents()


def test_a_removed_iteration_is_read_whole_as_a_fresh_reading_reads_it(
    tmp_path: Path, make_project: ProjectFactory
) -> None:
    project = completed_run(tmp_path, make_project)
    paths, repo = locate_run(project.root)
    api, cache = Api(paths, repo, None), StatusCache()
    api.documents(cache)
    whole_read_at = cache.records.read_at
    shutil.rmtree(project.iter_dir(2))
    changed_state(project)
    after = api.documents(cache)
    assert cache.records.read_at > whole_read_at and cache.records.folds == 0
    assert after == api.documents()

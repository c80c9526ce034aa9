"""A parallel job run on a worker (runner_shell/remote/worker_job.py) and taken back by the loop
(runner_shell/remote/coordinator.py) through a bare repository both reach.

The executor here hands the request straight to the worker's job in the loop's own process:
the transport is Temporal's (tests/temporal); what these pin is that a job run elsewhere ends
exactly as a job run in a local slot, and that an answer not the job's is never merged.
"""

from __future__ import annotations

import contextvars
import functools
import subprocess
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from runner_core.iteration.facts import IterationFacts
from runner_shell.git.hardened import GitError
from runner_shell.git.repo import Repo
from runner_shell.remote import wire
from runner_shell.remote.coordinator import RemoteJobs, take
from runner_shell.remote.errors import JobRefused
from runner_shell.remote.job_files import JOB_ATTEMPT, JobRequest, JobResult, result_ref
from runner_shell.remote.worker_job import run_job
from runner_shell.remote.worker_rules import WorkerRules
from tests.helpers.e2e import IDENTITY, Project, ProjectFactory, node
from tests.shell.remote.in_process import InProcess, bare, loop_in_process

DONE = {"status": "done", "summary": "did it"}
TREE = node(
    "root",
    next_="decompose",
    children=[node("root.1"), node("root.2", order=1), node("root.3", order=2)],
)
SCRIPT = {
    ("root.1", 1): {"files": {"a.txt": "A\n"}, "output": DONE},
    ("root.2", 1): {"files": {"b.txt": "B\n"}, "output": DONE},
    ("root.3", 1): {"files": {"c.txt": "C\n"}, "output": DONE},
}


def first_job(executor: InProcess) -> tuple[JobRequest, JobResult]:
    """The first job's request and the answer its worker gave."""
    name, answer = sorted(executor.answered.items())[0]
    return JobRequest.from_json(executor.asked[name]), JobResult.from_json(answer)


def written(directory: Path) -> set[tuple[str, int]]:
    """Each file under `directory` and its inode: a file written again is another one."""
    return {(str(path), path.stat().st_ino) for path in directory.rglob("*") if path.is_file()}


def shared_git(url: str, *args: str, stdin: str | bytes | None = None) -> str:
    """git run in the shared repository `url`, as a forger would: its output, stripped."""
    data = stdin.encode() if isinstance(stdin, str) else stdin
    done = subprocess.run(
        ["git", "-C", url, *IDENTITY, *args], input=data, capture_output=True, check=True
    )
    return done.stdout.decode().strip()


@pytest.fixture
def remote_run(
    tmp_path: Path, make_project: ProjectFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Project, InProcess]]:
    (tmp_path / "remote").mkdir()
    project = make_project(tmp_path / "remote", "started")
    project.prepare(TREE, parallel={"slots": 2})
    project.agent_script_by_node(SCRIPT)
    url = bare(tmp_path / "shared.git")
    # The worker's sandbox is its own: the scripted agent writes its records in the harness.
    rules = WorkerRules(writable=(str(project.harness),))
    executor = InProcess(lambda request: run_job(tmp_path / "worker", url, request, print, rules))
    assert loop_in_process(project, RemoteJobs(executor, url), monkeypatch) == 0
    yield project, executor


def test_jobs_run_on_a_worker_end_as_jobs_run_in_local_slots(
    remote_run: tuple[Project, InProcess], tmp_path: Path, make_project: ProjectFactory
) -> None:
    remote, _ = remote_run
    (tmp_path / "local").mkdir()
    local = make_project(tmp_path / "local", "started")
    local.prepare(TREE, parallel={"slots": 2})
    local.agent_script_by_node(SCRIPT)

    assert local.runner("loop").returncode == 0

    def ended(project: Project) -> tuple[object, ...]:
        tree = (project.root / ".runner/state/tree.json").read_bytes()
        files = {name: (project.root / name).read_text() for name in ("a.txt", "b.txt", "c.txt")}
        subjects = project.git("log", "--format=%s", "-3").splitlines()
        return tree, files, sorted(line.split(" node ")[-1] for line in subjects)

    assert ended(remote) == ended(local)
    assert remote.runner("audit").returncode == local.runner("audit").returncode
    # The job's logs came back with it, and its events are in the run's log.
    assert (remote.iter_dir(1) / "guard.log").is_file()
    events = (remote.iter_dir(1).parent / "events.jsonl").read_text(encoding="utf-8")
    assert '"type":"agent_started"' in events.replace(" ", "")


def test_a_jobs_facts_and_machine_cross_the_wire_unchanged(
    remote_run: tuple[Project, InProcess],
) -> None:
    _, executor = remote_run
    for request_json in executor.asked.values():
        facts = wire.loads(JobRequest.from_json(request_json).facts, IterationFacts)
        assert wire.dumps(facts) == JobRequest.from_json(request_json).facts
    for answer in executor.answered.values():
        text = JobResult.from_json(answer).machine
        assert wire.dumps(wire.loads(text, object)) == text


def test_an_answer_for_another_job_is_refused(
    remote_run: tuple[Project, InProcess], tmp_path: Path
) -> None:
    project, executor = remote_run
    url = str(tmp_path / "shared.git")
    first, second = sorted(executor.answered.items())[:2]
    request = JobRequest.from_json(executor.asked[first[0]])
    other = JobResult.from_json(second[1])

    with pytest.raises(JobRefused, match="answered for another job"):
        take(Repo(project.root), url, request, other, print_events)

    # The right job's number on another job's commit: its machine is not this job's.
    forged = attrs.evolve(other, iteration=request.iteration, base=request.base)
    with pytest.raises(JobRefused, match="job 1"):
        take(Repo(project.root), url, request, forged, print_events)


FORGED_MACHINES = (
    '{"$attrs": "runner_core.nonexistent:X", "f": {}}',  # a module no runner has
    '{"$tuple":' * 5_000 + "[]" + "}" * 5_000,  # nested past any depth
    '{"$attrs": "runner_core.iteration.machine:IterationMachine", "f": {}}',
    "not json",
)


def test_an_answer_whose_machine_is_not_one_is_refused_naming_its_job(
    remote_run: tuple[Project, InProcess], tmp_path: Path
) -> None:
    # A worker, or anyone on the shared server, answering with a document the wire does not
    # decode: the job is refused (another worker may take it), the loop goes on.
    project, executor = remote_run
    request, honest = first_job(executor)
    for machine in FORGED_MACHINES:  # one run serves them all: each is refused alone
        forged = attrs.evolve(honest, machine=machine)
        with pytest.raises(JobRefused, match=f"job {request.iteration}: the answer of worker"):
            take(Repo(project.root), str(tmp_path / "shared.git"), request, forged, print_events)


def test_an_answer_whose_iteration_files_hold_a_symlink_is_refused(
    remote_run: tuple[Project, InProcess], tmp_path: Path
) -> None:
    """A worker (or what an agent left it) answering with a link among the iteration's files:
    the loop writes none of them and refuses the answer."""
    project, executor = remote_run
    url = str(tmp_path / "shared.git")
    request, honest = first_job(executor)
    git = functools.partial(shared_git, url)

    files = git("rev-parse", f"{honest.commit}^")
    link = git("hash-object", "-w", "--stdin", stdin="/etc/passwd")
    tree = git("mktree", stdin=f"120000 blob {link}\tevil\n")
    forged = git("commit-tree", tree, "-p", files, "-m", "forged")
    git("update-ref", result_ref(request.run_id, request.iteration, honest.attempt), forged)

    before = written(project.iter_dir(request.iteration))
    with pytest.raises(JobRefused, match="not a plain file"):
        take(Repo(project.root), url, request, attrs.evolve(honest, commit=forged), print_events)
    assert not (project.iter_dir(request.iteration) / "evil").exists()
    assert written(project.iter_dir(request.iteration)) == before

    # A name no file system here takes: refused, not an OSError the loop dies of.
    blob = git("hash-object", "-w", "--stdin", stdin="x")
    listed = git("ls-tree", honest.commit)  # its events and files, then one more
    tree = git("mktree", stdin=f"{listed}\n100644 blob {blob}\t{'n' * 300}\n")
    forged = git("commit-tree", tree, "-p", files, "-m", "forged")
    git("update-ref", "-d", result_ref(request.run_id, request.iteration, honest.attempt))
    git("update-ref", result_ref(request.run_id, request.iteration, honest.attempt), forged)
    with pytest.raises(JobRefused, match="cannot be written"):
        take(Repo(project.root), url, request, attrs.evolve(honest, commit=forged), print_events)


def test_a_worker_given_another_repository_refuses_the_job(
    remote_run: tuple[Project, InProcess], tmp_path: Path
) -> None:
    _, executor = remote_run
    request_json = next(iter(executor.asked.values()))
    elsewhere = bare(tmp_path / "elsewhere.git")

    with pytest.raises(JobRefused, match="has no start commit for it"):
        run_job(tmp_path / "worker-2", elsewhere, request_json, print)


class _Printed:
    def emit(self, events: object, *, fsync: bool = False) -> None:
        del events, fsync


print_events = _Printed()


def test_an_answer_without_readable_events_is_refused(
    remote_run: tuple[Project, InProcess], tmp_path: Path
) -> None:
    project, executor = remote_run
    url = str(tmp_path / "shared.git")
    request, honest = first_job(executor)
    git = functools.partial(shared_git, url)
    kept = [
        line
        for line in git("ls-tree", honest.commit).splitlines()
        if not line.endswith("\tevents.wire.json")
    ]
    for events in (None, b"\xff\xfe not UTF-8"):  # none at all, or not text
        listed = list(kept)
        if events is not None:
            blob = git("hash-object", "-w", "--stdin", stdin=events)
            listed.append(f"100644 blob {blob}\tevents.wire.json")
        tree = git("mktree", stdin="".join(f"{line}\n" for line in listed).encode())
        forged = git("commit-tree", tree, "-p", f"{honest.commit}^", "-m", "forged")
        git("update-ref", result_ref(request.run_id, request.iteration, honest.attempt), forged)

        before = written(project.iter_dir(request.iteration))
        with pytest.raises(JobRefused, match=f"job {request.iteration}: .* no readable events"):
            answer = attrs.evolve(honest, commit=forged)
            take(Repo(project.root), url, request, answer, print_events)
        assert written(project.iter_dir(request.iteration)) == before  # none of its files


def test_a_late_attempt_answers_on_its_own_ref_and_never_replaces_the_taken_one(
    remote_run: tuple[Project, InProcess], tmp_path: Path
) -> None:
    # A worker cut off silently finishes after its job moved on; its answer
    # goes to its attempt's ref, the answer taken keeps its own, and a ref is never forced.
    project, executor = remote_run
    url = str(tmp_path / "shared.git")
    name, answer = sorted(executor.answered.items())[0]
    request = JobRequest.from_json(executor.asked[name])
    taken = JobResult.from_json(answer)
    taken_ref = result_ref(request.run_id, request.iteration, taken.attempt)

    def ref(name: str) -> str:
        found = subprocess.run(["git", "-C", url, "rev-parse", name], capture_output=True)
        return found.stdout.decode().strip()

    before = ref(taken_ref)
    rules = WorkerRules(writable=(str(project.harness),))
    context = contextvars.copy_context()
    context.run(JOB_ATTEMPT.set, "2-late")
    late_json = context.run(
        run_job, tmp_path / "late-worker", url, executor.asked[name], print, rules, "w-late"
    )
    late = JobResult.from_json(late_json)

    assert (late.attempt, late.worker) == ("2-late", "w-late")
    assert ref(taken_ref) == before  # the taken answer's ref is untouched
    assert ref(result_ref(request.run_id, request.iteration, "2-late")) == late.commit
    # The same attempt name again (a replay) never replaces the ref it wrote.
    replay = contextvars.copy_context()
    replay.run(JOB_ATTEMPT.set, taken.attempt)
    with pytest.raises(GitError, match="git push"):
        replay.run(
            run_job, tmp_path / "replayed", url, executor.asked[name], print, rules, "w-replay"
        )
    assert ref(taken_ref) == before

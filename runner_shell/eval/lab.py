"""The prompt lab: `runner eval --role decomposer --inputs DIR`, each prompt variant against fixed
tree inputs, only the decomposer run, its output judged, every answer cached.

An input is a directory under DIR: `GOAL.md`, optionally `tree.json` (its selected leaf must be
one to decompose; default: a new root), `tests.txt` (the project's real test ids, one a line)
and `project/` (the files of the repository). `DIR/lab.toml` holds the `[config]` every input
runs with, as a case's does. One `runner step` per input and variant: the runner validates the
output against the schema and the tree rules as in any run. Answers are cached under
`<results>/lab-cache/` by (prompt template, input, backend, model: the agent command).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from runner_core.guard.patterns import matches_test_id, target_patterns
from runner_core.json_text import toml_value
from runner_core.run.config import ConfigError, parse_config, render_config
from runner_core.run.exit_codes import ExitCode
from runner_shell.errors import UserFacingError
from runner_shell.eval.run import Processes, Variant, _git, _runner, _write
from runner_shell.store.files import atomic_write_text

Echo = Callable[[str], None]


def _digest(directory: Path) -> str:
    """The SHA-256 of a directory's files: their paths and bytes, in sorted order."""
    digest = hashlib.sha256()
    for path in sorted(directory.rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(directory)).encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _lab_config(inputs: Path, backend: str) -> dict[str, Any]:
    path = inputs / "lab.toml"
    try:
        data = toml_value(path.read_text(encoding="utf-8")) if path.exists() else {}
    except ValueError as error:  # not UTF-8, not TOML, or too deep
        raise UserFacingError(f"eval: {path}: is not TOML: {error}") from None
    text = json.dumps(data.get("config", {})).replace("{inputs_dir}", str(inputs.resolve()))
    config: dict[str, Any] = json.loads(text)
    agent = config.setdefault("agent", {})
    agent["backend"] = backend
    if backend != "command":
        agent.pop("command", None)
    sandbox = config.setdefault("sandbox", {})
    sandbox["read_only"] = sorted({*sandbox.get("read_only", []), str(inputs.resolve())})
    try:
        parse_config(config)
    except ConfigError as error:
        raise UserFacingError(f"eval: {path}: config: {error}") from None
    return config


def _template_hash(variant: Variant) -> str:
    if variant.prompts is None:
        return "builtin"
    template = variant.prompts / "decomposer.md.j2"
    return hashlib.sha256(template.read_bytes()).hexdigest() if template.exists() else "builtin"


def _decompose(
    source: Path, variant: Variant, config: dict[str, Any], processes: Processes
) -> dict[str, Any]:
    """One decomposer step on the input `source`; what it answered and how it was judged."""
    with tempfile.TemporaryDirectory(prefix="runner-lab-") as scratch:
        workspace = Path(scratch) / "repo"
        if (source / "project").is_dir():
            shutil.copytree(source / "project", workspace, symlinks=True)
        else:
            workspace.mkdir()
            (workspace / "README.md").write_text("A project.\n", encoding="utf-8")
        _git(workspace, "init", "--quiet")
        _git(workspace, "symbolic-ref", "HEAD", "refs/heads/main")
        _git(workspace, "add", "-A")
        _git(workspace, "commit", "--quiet", "--no-verify", "-m", "lab input")
        code, said = processes.run(_runner("init", "--agent", "true"), workspace, 120)
        if code != 0:
            return {"valid": False, "problem": f"runner init failed: {said.strip()}"}
        state = workspace / ".runner" / "state"
        _write(state / "config.toml", render_config(parse_config(config)))
        shutil.copyfile(source / "GOAL.md", workspace / ".runner" / "GOAL.md")
        if (source / "tree.json").exists():
            shutil.copyfile(source / "tree.json", state / "tree.json")
        if variant.prompts is not None:
            shutil.copytree(variant.prompts, workspace / ".runner" / "prompts")
        # The lab's own throw-away clone: the run works in it in place (`--here`).
        code, said = processes.run(_runner("start", "--here"), workspace, 300)
        if code != 0:
            return {"valid": False, "problem": f"runner start failed: {said.strip()}"}
        processes.run(_runner("step"), workspace, 900)
        code, shown = processes.run(_runner("show", "1", "--json"), workspace, 120)
        if code != 0:
            return {"valid": False, "problem": "the step left no iteration 1"}
        return _judged(json.loads(shown), workspace)


def _judged(shown: dict[str, Any], workspace: Path) -> dict[str, Any]:
    meta = shown.get("meta") or {}
    if meta.get("role") != "decomposer":
        return {"valid": False, "problem": "the selected leaf is not one to decompose"}
    output_path = Path(shown["dir"]) / "agent_output.json"
    if not output_path.is_absolute():
        output_path = workspace / output_path
    try:
        output = json.loads(output_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        output = {}
    children = output.get("children") if isinstance(output, dict) else None
    lines = [
        pattern
        for child in children or []
        if isinstance(child, dict)
        for pattern in target_patterns(
            [line for line in child.get("acceptance", []) if isinstance(line, str)]
        )
    ]
    tokens = meta.get("tokens") or {}
    return {
        "valid": meta.get("status") == "decomposed" and meta.get("error") is None,
        "problem": meta.get("error"),
        "children": len(children) if isinstance(children, list) else 0,
        "test_lines": lines,
        "tokens": tokens.get("input", 0) + tokens.get("output", 0),
        "cost_usd": meta.get("cost_usd") or 0.0,
    }


def run_lab(
    inputs: Path,
    backends: Sequence[str],
    prompts: Sequence[Path],
    results: Path,
    as_json: bool,
    echo: Echo,
) -> int:
    """`runner eval --role decomposer --inputs DIR`: one row per backend x prompt variant."""
    sources = sorted(entry for entry in inputs.iterdir() if (entry / "GOAL.md").is_file())
    if not sources:
        raise UserFacingError(f"eval: --inputs {inputs}: holds no input (a directory with GOAL.md)")
    choices: list[Path | None] = [*prompts] or [None]
    variants = [Variant(b, p) for b in backends or ["command"] for p in choices]
    cache = results / "lab-cache"
    processes = Processes()
    rows = []
    for variant in variants:
        config = _lab_config(inputs, variant.backend)
        model = json.dumps(config["agent"].get("command", []))
        answers = []
        for source in sources:
            key = hashlib.sha256(
                "\0".join(
                    (_template_hash(variant), _digest(source), variant.backend, model)
                ).encode()
            ).hexdigest()
            cached = cache / f"{key}.json"
            if cached.exists():
                answer = json.loads(cached.read_text(encoding="utf-8")) | {"cached": True}
            else:
                answer = _decompose(source, variant, config, processes)
                cached.parent.mkdir(parents=True, exist_ok=True)
                atomic_write_text(cached, json.dumps(answer, sort_keys=True) + "\n")
                answer = answer | {"cached": False}
            tests_file = source / "tests.txt"
            ids = tests_file.read_text(encoding="utf-8").split() if tests_file.exists() else []
            lines = answer.get("test_lines", [])
            answer["test_lines_matching"] = sum(
                any(matches_test_id(line, test_id) for test_id in ids) for line in lines
            )
            answers.append({"input": source.name, **answer})
        rows.append(_lab_row(variant, answers))
    document = {"role": "decomposer", "inputs": [source.name for source in sources], "rows": rows}
    if as_json:
        echo(json.dumps(document, indent=2, sort_keys=True))
        return ExitCode.OK
    for row in rows:
        echo(
            f"lab: variant={row['variant']} inputs={row['inputs']} valid={row['valid']}/"
            f"{row['inputs']} children={row['mean_children']:g} test_lines="
            f"{row['test_lines_matching']}/{row['test_lines']} tokens={row['tokens']} "
            f"cost_usd={row['cost_usd']:.4f} cached={row['cached']}"
        )
    return ExitCode.OK


def _lab_row(variant: Variant, answers: list[dict[str, Any]]) -> dict[str, Any]:
    count = len(answers)
    return {
        "variant": variant.name,
        "backend": variant.backend,
        "prompts": variant.prompts_name,
        "inputs": count,
        "valid": sum(bool(answer["valid"]) for answer in answers),
        "valid_rate": round(sum(bool(a["valid"]) for a in answers) / count, 6),
        "mean_children": round(sum(a.get("children", 0) for a in answers) / count, 3),
        "test_lines": sum(len(a.get("test_lines", [])) for a in answers),
        "test_lines_matching": sum(a["test_lines_matching"] for a in answers),
        "tokens": sum(a.get("tokens", 0) for a in answers),
        "cost_usd": round(sum(a.get("cost_usd", 0.0) for a in answers), 6),
        "cached": sum(bool(a["cached"]) for a in answers),
        "answers": answers,
    }

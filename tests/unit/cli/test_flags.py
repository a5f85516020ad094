"""Every context field has a ``run``/``chat`` flag (cli/flags.py makes them from the settings'
declarations), ``--graph`` offers only the graphs there are, ``--version`` and the examples in ``--help``."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
from importlib.metadata import version

import pytest

from smart_agent.cli import build_parser
from smart_agent.cli.context_args import context_values
from smart_agent.config.context import Context, context_field_names
from smart_agent.graphs import BUILDERS

pytestmark = pytest.mark.unit

NOT_CONTEXT = {"help", "graph", "thread", "json", "quiet", "db"}


def _sub(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


def _fields_set_by_flags(command: str, samples: list[str]) -> dict[str, str]:
    """Each context field a flag of ``command`` sets, found by giving every flag a value."""
    parser = build_parser()
    found: dict[str, str] = {}
    for action in _sub(parser, command)._actions:
        if not action.option_strings or action.dest in NOT_CONTEXT:
            continue
        flag = action.option_strings[-1] if action.nargs == 0 else action.option_strings[0]
        tries = [[]] if action.nargs == 0 else [[s] for s in (list(action.choices or []) or samples)]
        for extra in tries:
            head = ["run", "task"] if command == "run" else [command]
            with contextlib.redirect_stderr(io.StringIO()):
                try:
                    args = parser.parse_args([*head, flag, *extra])
                except SystemExit:
                    continue
            try:
                values = context_values(args)
            except ValueError:
                continue
            for name in values:
                found.setdefault(name, flag)
            break
    return found


@pytest.fixture
def samples(tmp_path):
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"type": "object"}))
    return [
        "1", "2000", "0.5", "openai:x", "calculator", "none", "two-phase", "email:redact", "run=1", str(tmp_path),
        str(schema),
    ]  # fmt: skip


@pytest.mark.parametrize("command", ["run", "chat"])
def test_every_context_field_has_a_flag(command, samples):
    found = _fields_set_by_flags(command, samples)
    missing = [name for name in context_field_names(Context) if name not in found]
    assert not missing, f"context fields without a {command} flag: {missing}"


def test_generated_flags_are_named_after_their_fields_and_checked(samples):
    found = _fields_set_by_flags("run", samples)
    assert found["max_workers"] == "--max-workers"
    assert found["max_iterations"] == "--max-iterations"
    assert found["max_agent_depth"] == "--max-agent-depth"
    assert found["tool_timeout_s"] in ("--tool-timeout", "--tool-timeout-s")
    # the older names still work
    assert found["model_timeout_s"] == "--model-timeout" and found["use_todo_list"] == "--no-todo"
    assert found["memory"] == "--no-memory" and found["max_cost_usd"] == "--max-cost"

    parser = build_parser()
    args = parser.parse_args(["run", "t", "--max-workers", "3", "--tool-timeout-s", "2.5", "--max-iterations", "4"])
    assert {k: context_values(args)[k] for k in ("max_workers", "tool_timeout_s", "max_iterations")} == {
        "max_workers": 3, "tool_timeout_s": 2.5, "max_iterations": 4,
    }
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exc:
        parser.parse_args(["run", "t", "--max-workers", "0"])  # out of the field's bounds
    assert exc.value.code == 2
    assert "--max-workers" in err.getvalue() and "max_workers" in err.getvalue() and err.getvalue().count("\n") == 1


def test_generated_flags_reach_the_graphs_context():
    from smart_agent.cli.context_args import context_from_args
    from smart_agent.config.context import DualContext, FleetContext

    args = build_parser().parse_args(["run", "t", "--graph", "fleet", "--max-workers", "2", "--max-agent-depth", "1"])
    ctx = context_from_args(args)
    assert isinstance(ctx, FleetContext) and (ctx.max_workers, ctx.max_agent_depth) == (2, 1)
    ctx = context_from_args(build_parser().parse_args(["run", "t", "--graph", "dual", "--max-iterations", "5"]))
    assert isinstance(ctx, DualContext) and ctx.max_iterations == 5


def test_resume_keeps_its_own_approve_and_ask_user():
    resume = _sub(build_parser(), "resume")
    assert resume._option_string_actions["--approve"].dest == "decide_approve"
    assert "--max-workers" in resume._option_string_actions


def test_graph_lists_its_choices():
    err = io.StringIO()
    with contextlib.redirect_stderr(err), pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["run", "t", "--graph", "nope"])
    assert exc.value.code == 2
    assert all(repr(name) in err.getvalue() for name in BUILDERS)
    assert "nope" in err.getvalue() and err.getvalue().count("\n") == 1


def test_version_and_examples_in_help():
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["--version"])
    assert exc.value.code == 0 and out.getvalue().strip() == f"smart-agent {version('smart-agent')}"
    text = build_parser().format_help()
    assert "examples:" in text and "smart-agent doctor" in text and "smart-agent threads list" in text
    for command in ("run", "chat"):
        sub_help = _sub(build_parser(), command).format_help()
        assert "examples:" in sub_help and f"smart-agent {command} " in sub_help.split("examples:")[1]

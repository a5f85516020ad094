"""Evaluate agents (``smart-agent eval``, docs/eval.md): suite files and their schema
(``suite.py``, ``schema.py``), the expectations checked against a run's result
(``checks.py``, ``judge.py`` for a model-scored rubric) and the numbers of an eval and of an
A/B comparison (``report.py``). Running the cases is the CLI's (cli/eval_run.py): it runs
each graph in-process the way ``smart-agent run`` does. Core layer: nothing here imports
graphs, nodes or the CLI."""

from __future__ import annotations

from .checks import check_result
from .judge import judge_check
from .report import compare, compare_table, markdown_report, summarize, table
from .suite import Case, RunConfig, Suite, SuiteError, load_config, load_suite

__all__ = [
    "Case", "RunConfig", "Suite", "SuiteError", "check_result", "compare", "compare_table", "judge_check",
    "load_config", "load_suite", "markdown_report", "summarize", "table",
]

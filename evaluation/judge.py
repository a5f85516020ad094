"""``judge:`` a rubric scored by a model (any ``provider:model``; default the run's model):
it reads the task, the answer and the tool calls and replies with a JSON object
``{"score": 0..1, "reason": ...}``; the check passes at ``min_score`` (default 0.7) or above.
The judge's requests go through ``load_chat_model``, so ``--record`` / ``--replay`` cover
them too."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["DEFAULT_MIN_SCORE", "JUDGE_PROMPT", "judge_check", "judge_request", "parse_verdict"]

DEFAULT_MIN_SCORE = 0.7
JUDGE_PROMPT = (
    "You grade the work of an AI agent against a rubric. Reply with one JSON object and nothing else: "
    '{"score": <a number from 0 (fails the rubric) to 1 (fully meets it)>, "reason": "<one sentence>"}.'
)


def judge_request(rubric: str, case: Mapping[str, Any], result: Mapping[str, Any]) -> str:
    """The user message the judge reads."""
    task = case.get("task")
    turns = task if isinstance(task, list) else [task]
    calls = [{"name": c.get("name"), "args": c.get("args")} for c in result.get("tool_calls") or []]
    parts = [
        "Rubric:\n" + rubric.strip(),
        "Task:\n" + "\n".join(f"- {t}" for t in turns),
        "Tool calls:\n" + (json.dumps(calls, ensure_ascii=False, default=str)[:4000] if calls else "none"),
        "Answer:\n" + str(result.get("answer") or "")[:8000],
    ]
    if result.get("structured_response") is not None:
        parts.append("Structured response:\n" + json.dumps(result["structured_response"], default=str)[:4000])
    return "\n\n".join(parts)


def parse_verdict(text: str) -> tuple[float, str]:
    """``(score, reason)`` from the judge's reply; a ``ValueError`` when it holds none."""
    from ..replies.parse import extract_json

    try:
        value = extract_json(text, prefer=lambda v: isinstance(v, Mapping) and "score" in v)
    except ValueError:
        value = None
    if not isinstance(value, Mapping) or "score" not in value:
        raise ValueError(f"the judge's reply has no score: {' '.join(text.split())[:120]!r}")
    try:
        score = float(value["score"])
    except (TypeError, ValueError):
        raise ValueError(f"the judge's score is not a number: {value['score']!r}") from None
    if score > 1 and score <= 10:  # a 0-10 scale
        score /= 10
    return max(0.0, min(1.0, score)), str(value.get("reason") or "")


async def judge_check(
    spec: Any, case: Mapping[str, Any], result: Mapping[str, Any], default_model: str | None
) -> dict[str, Any]:
    """The ``judge`` check of one result: ``{"check": "judge", "passed", "detail", "score", "reason"}``."""
    from langchain_core.messages import HumanMessage, SystemMessage

    from ..models.chat import load_chat_model

    spec = {"rubric": spec} if isinstance(spec, str) else dict(spec)
    model = spec.get("model") or default_model
    min_score = float(spec.get("min_score", DEFAULT_MIN_SCORE))
    try:
        chat = load_chat_model(model or "")
        reply = await chat.ainvoke(
            [SystemMessage(JUDGE_PROMPT), HumanMessage(judge_request(spec["rubric"], case, result))]
        )
        score, reason = parse_verdict(str(reply.text))
    except Exception as exc:  # the judge could not score: the check fails, saying why
        return {"check": "judge", "passed": False, "detail": f"the judge failed: {' '.join(str(exc).split())[:200]}"}
    passed = score >= min_score
    detail = "" if passed else f"score {score:.2f} < {min_score:.2f}: {reason}"
    return {"check": "judge", "passed": passed, "detail": detail, "score": score, "reason": reason, "model": model}

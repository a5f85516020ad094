"""structuredOutput: validate the final answer against the run's output schema.

Valid: the value goes to ``structured_response`` (and, as JSON text, to ``answer``)
and the run ends. Invalid JSON or a schema violation: a feedback message with the
validation errors goes back to the model, at most ``max_output_retries`` times; then
the run fails with :class:`StructuredOutputError`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.runtime import Runtime

from ..config.context import AgentContext
from ..history.budget import ContextBudget
from ..history.markers import FEEDBACK_KIND, marker
from ..models.messages import message_text as text_of
from ..replies.feedback import error_list
from ..replies.structured import RETRY_MESSAGE, StructuredOutputError, validate_answer
from ..runs.events import emit
from ..state import AgentState, count_of, keep, kept_count, run_setting


def make_structured_output_node(budget: ContextBudget) -> Callable:
    async def structured_output(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
        ctx = AgentContext.of(runtime)
        schema = run_setting(state, "output_schema") or {}
        messages = state.get("messages") or []
        answer = text_of(messages[-1]) if messages else ""
        model = budget.output_model if schema == budget.default_schema else None
        value, errors = validate_answer(answer, schema, model)
        turns = count_of(state, "turns")
        made = count_of(state, "tool_calls_made")
        if not errors:
            text = json.dumps(value, ensure_ascii=False)
            emit("final_answer", answer=text, structured_response=value, turns=turns, tool_calls_made=made)
            return {"structured_response": value, "answer": text}
        retries = kept_count(state, "output_retries")
        emit("error", kind="structured_output", errors=errors, retry=retries + 1, max_retries=ctx.max_output_retries)
        if retries >= ctx.max_output_retries:
            raise StructuredOutputError(
                f"The model's final answer is not valid for the output schema after {retries + 1} "
                f"attempt(s): {'; '.join(errors)}"
            )
        feedback = HumanMessage(
            content=RETRY_MESSAGE.format(errors=error_list(errors)),
            additional_kwargs=marker(FEEDBACK_KIND),
        )
        return keep({"messages": [feedback]}, output_retries=retries + 1)

    return structured_output

"""ask_user: the model asks the user a question and gets the answer as the tool result.

Offered only while the run's ``ask_user`` context field is on (nodes/agent.py). In the agent
loop the ``human`` node asks the question (an interrupt ``{"question": ...}``) and the tools
node answers the call without running this tool; anything else that runs it (a planner step)
pauses here, with the same interrupt, and returns the resume value's answer.
"""

from __future__ import annotations

from langchain_core.tools import tool
from langgraph.types import interrupt
from pydantic import BaseModel, Field

from ..runs.approval import answer_of, question_request
from .registry import ToolRegistry

ASK_USER = "ask_user"
# The ToolMeta tag that marks the tool (the human node and the offer filter look for it).
ASK_TAG = "ask_user"


class AskUserArgs(BaseModel):
    question: str = Field(
        min_length=1,
        max_length=2000,
        pattern=r"\S",  # not only blanks
        description="One clear question for the user, with the context needed to answer it.",
    )


@tool(ASK_USER, args_schema=AskUserArgs)
async def ask_user(question: str) -> str:
    """Ask the user a question and wait for the answer. Use it only when you cannot go on
    without information or a decision that only the user has."""
    return answer_of(interrupt(question_request(question)))


def ask_tools(registry: ToolRegistry) -> set[str]:
    """Names of the registry's ask_user tools (tagged ``ASK_TAG``)."""
    return {name for name in registry.names() if ASK_TAG in registry.meta(name).tags}

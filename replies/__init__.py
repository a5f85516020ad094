"""Untrusted model replies, and structured values read out of them.

* ``guard`` — transport level, every reply: tool arguments that are not a JSON object
  become invalid tool calls, lone surrogates are replaced, overlong tool names clipped, a
  garbage HTTP body is one line;
* ``parse`` — JSON out of model text: fenced blocks, the first balanced object, bounded
  size and depth, common slips repaired (``json-repair``);
* ``submit`` — a structured reply through a submit tool (bound, or text when the model
  cannot bind tools) and where its value is in the reply;
* ``feedback`` — a rejected reply and its errors sent back to the model.

Used by the planner's plan node, the dual agent, the fleet's decomposition, two-phase
reasoning and the structured-output node.
"""

from .guard import (
    MAX_TOOL_NAME_CHARS,
    NOT_AN_OBJECT,
    clean_text,
    clean_value,
    clip_tool_name,
    guard_openai_tool_args,
    reply_problem,
    sanitize_reply,
)
from .parse import (
    MAX_JSON_CHARS,
    MAX_JSON_DEPTH,
    JSONLimitError,
    ReplySyntaxError,
    extract_json,
    json_depth_problem,
    loads_bounded,
    parse_json_answer,
    value_depth_problem,
)

__all__ = [
    "MAX_JSON_CHARS",
    "MAX_JSON_DEPTH",
    "MAX_TOOL_NAME_CHARS",
    "NOT_AN_OBJECT",
    "JSONLimitError",
    "ReplySyntaxError",
    "clean_text",
    "clean_value",
    "clip_tool_name",
    "extract_json",
    "guard_openai_tool_args",
    "json_depth_problem",
    "loads_bounded",
    "parse_json_answer",
    "reply_problem",
    "sanitize_reply",
    "value_depth_problem",
]

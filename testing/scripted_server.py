"""A scripted OpenAI-compatible chat-completions and Responses API server (stdlib only).

Used by tests, benchmarks and the offline ``smart-agent demo``: point the real
``langchain_openai.ChatOpenAI`` (or any OpenAI client) at ``server.base_url`` and
every ``POST /v1/chat/completions`` and ``POST /v1/responses`` is answered from a script.

A Responses API request (``use_responses_api``) is read by the script as the chat-completions
request it stands for (``scripted_responses.chat_view``): its ``messages`` hold the whole
conversation, the one its ``previous_response_id`` continues included; its answer is a Response
(streamed as its events when asked). The server keeps each answer's conversation for a later
``previous_response_id`` (``store: false`` aside); an id it does not hold gets HTTP 404
"Previous response with id '...' not found." (code ``previous_response_not_found``), as from
OpenAI; ``server.forget_responses()`` drops them all. ``server.request_paths`` gives each request's
path, ``server.response_ids`` the id of each Responses answer.

Script entries (consumed in order; each a dict, a callable ``f(request) -> dict``,
or a plain string as shorthand for ``{"content": ...}``)::

    {"content": "text"}
    {"tool_calls": [{"name": "calculator", "arguments": {"expression": "37*43"}}],
     "content": ""}
    {"error": {"status": 401, "message": "bad key", "type": "invalid_request_error"}}

Optional keys on any entry:

* ``delay_s`` – sleep this long before answering (simulated latency).
* ``chunk_delay_s`` – sleep between streamed chunks.
* ``pause_after`` – a streamed answer stops after this many words of its content (0: before
  the first) until ``server.release_stream()`` (or ``pause_s`` seconds, default 60, pass):
  ``server.stream_paused`` is set there and ``server.streamed_text`` holds what was sent so
  far, so a test sees what a client shows before the rest exists.
* ``finish_reason`` – override (default ``"tool_calls"`` / ``"stop"``).
* ``usage`` – dict overriding the computed usage numbers.
* ``headers`` – extra response headers.
* ``retry`` (error entries) – by default error responses carry
  ``x-should-retry: false`` so the OpenAI client does not silently retry and
  consume further script entries; ``"retry": True`` omits that header (then the
  client's normal retry policy applies).

Tool-call ``arguments`` may be a dict (JSON-encoded for you) or a string (sent
verbatim, e.g. to test malformed arguments). Tool-call ids are generated as
``call_<n>_<k>`` (n = response number, k = index) unless an ``id`` is given.

``responder=`` is a callable used for every request instead of a list (or once
the list is exhausted). With neither left, the server answers HTTP 500
``scripted server: script exhausted after N requests`` so a test fails loudly.

``cassette=DIR`` (CLI ``--cassette DIR``) answers every POST the cassette folder holds
(recorded with ``smart-agent run --record DIR``; matched as ``--replay`` matches, see
docs/record_replay.md) with the recorded status, headers and body, byte for byte; a request it
does not hold goes to the script or responder, or, with neither, gets HTTP 400 naming the
request (``x-smart-agent-replay: miss``).

Token usage is approximate: ``prompt_tokens = ceil(len(json.dumps(messages) +
json.dumps(tools or [])) / 4)`` and ``completion_tokens = ceil(len(content +
all tool-call argument strings) / 4)``. Cached prompt tokens are reported as OpenAI does
(``prompt_tokens_details.cached_tokens``; Responses: ``input_tokens_details.cached_tokens``):
the longest prefix of the prompt (tools, then messages, as JSON) shared with an earlier request
of the same ``prompt_cache_key`` (requests without one form one group), counted from 1024 tokens
on, in steps of 128 (``scripted_responses.PrefixCache``; ``prompt_cache=False`` turns it off).
``server.reported_usage`` holds the usage of each answer, ``server.shared_prefix_tokens`` the
exact shared prefix of each.

CLI::

    python -m smart_agent.testing.scripted_server --script script.json [--port 0] [--loop]
    python -m smart_agent.testing.scripted_server --cassette DIR [--port 0]

prints exactly one line ``BASE_URL=http://127.0.0.1:PORT/v1`` once listening
and serves until killed.

The server lives in ``scripted_openai.py`` (answers), ``scripted_http.py`` (HTTP handler and
streaming) and ``scripted_cassette.py`` (cassette serving); the script entries and request readers
in ``script.py``. All of it is importable from here.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import threading
from typing import Any

from .script import (
    ScriptEntry,
    error,
    last_tool_message,
    message_text,
    text,
    tool_call,
    tool_call_names,
    tool_calls,
    tool_messages,
    validate_script,
)
from .scripted_openai import ScriptedOpenAIServer

__all__ = [
    "ScriptedOpenAIServer",
    "ScriptEntry",
    "text",
    "tool_call",
    "tool_calls",
    "error",
    "tool_messages",
    "last_tool_message",
    "tool_call_names",
    "message_text",
    "main",
]


# --------------------------------------------------------------------------- #
# CLI
# --------------------------------------------------------------------------- #
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m smart_agent.testing.scripted_server",
        description="Serve a scripted OpenAI-compatible /v1/chat/completions endpoint.",
    )
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--script", help="JSON file holding a list of script entries")
    src.add_argument("--demo", action="store_true", help="answer with the rule-based `smart-agent demo` model")
    src.add_argument(
        "--cassette", metavar="DIR", help="answer the requests recorded in this cassette folder (smart-agent --record)"
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--model", default="scripted-model")
    parser.add_argument("--loop", action="store_true", help="repeat the script forever")
    parser.add_argument("--delay", type=float, default=0.0, help="default delay per answer in seconds")
    args = parser.parse_args(argv)

    script: list[Any] = []
    responder = None
    if args.demo:
        from .demo import demo_responder

        responder = demo_responder
    elif args.cassette:
        from ..cassette import CassetteError, load_interactions

        try:
            load_interactions(args.cassette)
        except CassetteError as exc:
            print(f"scripted_server: {exc}", file=sys.stderr)
            return 2
    else:
        try:
            with open(args.script, encoding="utf-8") as fh:
                script = json.load(fh)
            if not isinstance(script, list):
                raise ValueError("the script must be a JSON list of entries")
            validate_script(script)
        except (OSError, ValueError, TypeError) as exc:
            print(f"scripted_server: cannot load {args.script}: {exc}", file=sys.stderr)
            return 2

    server = ScriptedOpenAIServer(
        script, responder=responder, host=args.host, port=args.port, model=args.model,
        default_delay_s=args.delay, loop=args.loop, cassette=args.cassette,
    )
    server.start()
    print(f"BASE_URL={server.base_url}", flush=True)

    stop = threading.Event()

    def _on_signal(signum: int, frame: Any) -> None:
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(ValueError, OSError):  # not in the main thread
            signal.signal(sig, _on_signal)
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

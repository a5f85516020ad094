"""What a run shows while it goes: each event's line and, on a terminal, the answer as it
streams and a status line of what runs now.

* :class:`Lines` - the event lines (cli/lines.py) on a stream, nothing else: piped output,
  ``--json`` (its events go to stderr) and ``--quiet`` (no lines) get no control characters.
* :class:`LiveLines` - on a terminal: the answer streams token by token (LangGraph's
  ``messages`` stream mode, from the nodes that write answers), and while a model call, a tool
  or a step runs a status line (a ``rich`` spinner, what runs and for how long) stays below the
  lines; it is erased before the answer streams, before a prompt, and at the end.

:func:`make_display` picks one; the run loop (cli/review.py ``run_until_paused``) sends it the
custom events (``on_event``) and, when it wants them (``progress``), the ``messages`` and
``tasks`` stream parts (``on_progress``). :meth:`Lines.answer_shown` tells the caller the final
answer is already on screen.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol, TextIO

from .render import format_event, short


class RunSummary(Protocol):  # cli's RunSummary: what the run did, collected from its events
    def add(self, ev: dict) -> None: ...


#: The nodes whose model text is an answer the user reads (the agent loop, the planner's and
#: the fleet's final answer); plans, decisions and summaries are not streamed.
ANSWER_NODES = frozenset({"agent", "synthesize", "aggregate"})

#: What the status line says while a node runs (other nodes are quick and not shown).
NODE_STATUS = {
    "agent": "waiting for the model",
    "plan": "the model is planning",
    "synthesize": "the model writes the answer",
    "decompose": "the model splits the goal",
    "aggregate": "the model combines the workers' answers",
    "decide": "the model decides the next step",
    "summarize": "the model summarizes the conversation",
    "memory_recall": "recalling memories",
    "memory_write": "storing a memory",
    "tools": "running tools",
    "execute": "running a plan",
}


class Lines:
    """Event lines on ``stream`` (none with ``quiet``); every event goes to ``summary``."""

    progress = False  # no messages/tasks stream parts wanted

    def __init__(self, stream: TextIO, summary: RunSummary, *, quiet: bool = False) -> None:
        self.stream, self.summary, self.quiet = stream, summary, quiet

    def on_event(self, ev: dict) -> None:
        self.summary.add(ev)
        if self.quiet:
            return
        line = format_event(ev)
        if line:
            self.write_line(line)

    def write_line(self, line: str) -> None:
        print(line, file=self.stream, flush=True)

    def on_progress(self, mode: str, chunk: Any) -> None:
        """A ``messages`` or ``tasks`` stream part (only when :attr:`progress`)."""

    def pausing(self, ask: Callable[[list[Any]], Any] | None) -> Callable[[list[Any]], Any] | None:
        """``ask`` with the display out of the way while it reads an answer."""
        return ask

    def answer_shown(self, final: dict) -> bool:
        """Whether the run's answer is on screen already (streamed)."""
        return False

    def close(self) -> None:
        """Leave the screen clean (the status line erased, the last line ended)."""


def status_text(activities: dict[str, tuple[str, float]], now: float) -> str:
    """The status line: the latest activity, how many others run (``+N more``) and its seconds.
    A node's own activity (``task:``, "running tools") holds the calls and steps it runs: while
    any of those runs it is not one more of them."""
    key, (label, since) = list(activities.items())[-1]
    inner = sum(1 for k in activities if not k.startswith("task:"))
    counted = inner or len(activities)  # (the calls and steps when any runs, else the nodes)
    others = counted - 1 if not inner or not key.startswith("task:") else counted
    more = f" (+{others} more)" if others > 0 else ""
    return f"{label}{more} · {now - since:.1f} s"


class _Status:
    """The status line's renderable: a spinner, the latest activity and its seconds."""

    def __init__(self, activities: dict[str, tuple[str, float]]) -> None:
        from rich.spinner import Spinner

        self.activities = activities
        self.spinner = Spinner("dots")

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.text import Text

        if not self.activities:
            return
        self.spinner.update(text=Text(status_text(self.activities, time.monotonic()), style="dim"))
        yield self.spinner


class LiveLines(Lines):
    """On a terminal: the event lines, the streamed answer and a live status line."""

    progress = True

    def __init__(self, stream: TextIO, summary: RunSummary, *, answer_stream: TextIO | None = None,
                 prefix: str = "") -> None:
        """``answer_stream``: where the streamed text goes (``chat``: stdout, its lines on stderr);
        ``prefix`` starts each streamed text (``chat``: ``agent> ``)."""
        super().__init__(stream, summary)
        from rich.console import Console

        self.answer_stream, self.prefix = answer_stream or stream, prefix
        self.console = Console(file=stream, highlight=False, markup=False, emoji=False, soft_wrap=True)
        self.activities: dict[str, tuple[str, float]] = {}
        self._live: Any = None
        self._paused = False
        self._mid_line = False  # streamed text whose line is not ended yet
        self._streaming: str | None = None  # the checkpoint namespace of the node streaming now
        self._streamed = ""  # what the current (or last) streaming node wrote
        self._last_answer = ""  # what the last finished streaming node wrote

    # -- the status line -----------------------------------------------------------------
    def _refresh(self) -> None:
        want = bool(self.activities) and self._streaming is None and not self._paused
        if want and self._live is None:
            from rich.live import Live

            self._live = Live(
                _Status(self.activities), console=self.console, transient=True, refresh_per_second=8,
                redirect_stdout=False, redirect_stderr=False,
            )
            self._live.start()
        elif not want and self._live is not None:
            self._live.stop()  # transient: the status line is erased
            self._live = None

    def _start(self, key: str, label: str) -> None:
        self.activities[key] = (label, time.monotonic())
        self._refresh()

    def _end(self, key: str) -> None:
        if self.activities.pop(key, None) is not None:
            self._refresh()

    # -- lines and tokens ----------------------------------------------------------------
    def _end_line(self) -> None:
        if self._mid_line:
            self.answer_stream.write("\n")
            self.answer_stream.flush()
            self._mid_line = False

    def write_line(self, line: str) -> None:
        self._end_line()
        if self._live is not None:
            self.console.print(line)  # above the status line
        else:
            print(line, file=self.stream, flush=True)

    def on_event(self, ev: dict) -> None:
        kind, agent = ev.get("event"), ev.get("agent")
        tag = f"[{agent}] " if agent else ""
        if kind == "model_text" and not agent and self._streamed.strip():
            self.summary.add(ev)  # the text beside the calls streamed already
            return
        if kind in ("approval_requested", "question"):  # a prompt follows: no spinner under it
            self.activities.clear()
            self._refresh()
        ended = {"tool_result": f"tool:{agent}:{ev.get('id')}", "step_result": f"step:{agent}:{ev.get('step')}"}
        if kind in ended or (kind == "sub_agent" and ev.get("phase") != "start"):
            self._end(ended.get(str(kind), f"sub:{ev.get('child')}"))  # before its line: the status stays current
        super().on_event(ev)
        if kind == "tool_call":
            self._start(f"tool:{agent}:{ev.get('id')}", f"{tag}{ev.get('name')} running")
        elif kind == "step_start":
            what = ev.get("tool") or short(str(ev.get("task") or ev.get("objective") or "working"), 60)
            self._start(f"step:{agent}:{ev.get('step')}", f"{tag}step {ev.get('step')}: {what}")
        elif kind == "sub_agent" and ev.get("phase") == "start":
            self._start(f"sub:{ev.get('child')}", f"sub-agent {ev.get('child')} working")

    def on_progress(self, mode: str, chunk: Any) -> None:
        if mode == "messages":
            self._token(*chunk)
        elif mode == "tasks" and isinstance(chunk, dict):
            self._task(chunk)

    def _token(self, message: Any, metadata: dict) -> None:
        from langchain_core.messages import AIMessageChunk

        from ..models.messages import message_text
        from ..tools.agents import DEPTH_KEY

        if not isinstance(message, AIMessageChunk) or metadata.get("langgraph_node") not in ANSWER_NODES:
            return
        if metadata.get(DEPTH_KEY):  # a sub-agent's model call (it shares the callbacks): its answer is a tool's
            return
        text = message_text(message)
        if not text:
            return
        ns = str(metadata.get("langgraph_checkpoint_ns") or "")
        shown = text
        if self._streaming != ns:
            self._end_line()
            self._streaming, self._streamed = ns, ""
            self._refresh()  # the status line goes: the answer is the progress now
            shown = self.prefix + text
        self.answer_stream.write(shown)
        self.answer_stream.flush()
        self._streamed += text
        self._mid_line = not shown.endswith("\n")

    def _task(self, task: dict) -> None:
        name, task_id = str(task.get("name") or ""), str(task.get("id") or "")
        if "input" in task:  # it starts
            if name in NODE_STATUS:
                self._start(f"task:{task_id}", NODE_STATUS[name])
            return
        if self._streaming is not None and self._streaming.endswith(task_id):  # its streamed text is complete
            self._end_line()
            self._streaming, self._last_answer = None, self._streamed
        self._end(f"task:{task_id}")
        self._refresh()

    def pausing(self, ask: Callable[[list[Any]], Any] | None) -> Callable[[list[Any]], Any] | None:
        if ask is None:
            return None

        def ask_cleanly(pending: list[Any]) -> Any:
            self._paused = True
            self._refresh()
            self._end_line()
            try:
                return ask(pending)
            finally:
                self._paused = False
                self.activities.clear()

        return ask_cleanly

    def answer_shown(self, final: dict) -> bool:
        answer = str(final.get("answer") or "").strip()
        return bool(answer) and answer == self._last_answer.strip()

    def close(self) -> None:
        self.activities.clear()
        self._streaming = None
        self._refresh()
        self._end_line()


def make_display(stream: TextIO, summary: RunSummary, *, quiet: bool = False, as_json: bool = False,
                 answer_stream: TextIO | None = None, prefix: str = "") -> Lines:
    """:class:`LiveLines` when ``stream`` (and ``answer_stream``) are terminals and neither
    ``--quiet`` nor ``--json`` is given, else :class:`Lines`."""
    terminal = all(getattr(s, "isatty", lambda: False)() for s in (stream, answer_stream or stream))
    if quiet or as_json or not terminal:
        return Lines(stream, summary, quiet=quiet)
    return LiveLines(stream, summary, answer_stream=answer_stream, prefix=prefix)

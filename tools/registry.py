"""The tool registry: LangChain tools plus metadata, with plugin discovery.

A tool is any LangChain ``BaseTool`` (``@tool`` functions, ``StructuredTool``...)
with a pydantic argument schema. The registry adds metadata the runtime uses
(side effects, timeout, retries, cost) and finds plugins without touching the core:

* installed packages that declare an entry point in the ``smart_agent.tools``
  group (the entry point loads a ``BaseTool``, a list of them, or a callable
  returning either);
* ``*.py`` files in a plugins folder the user configured explicitly
  (``$SMART_AGENT_PLUGINS``; there is no implicit default) that define
  ``TOOLS = [...]`` (BaseTool objects, optionally ``(tool, ToolMeta)``).

Tools that need run configuration (workspace, network permission, store, stream)
declare a ``runtime: ToolRuntime`` parameter; the tools node injects it, and it is
hidden from the model's schema.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, TypeVar, cast

from langchain_core.tools import BaseTool

from ..runs.run_tools import run_tools_matching

T = TypeVar("T")

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "smart_agent.tools"


@dataclass(frozen=True)
class ToolMeta:
    """What the runtime needs to know about a tool beyond its schema."""

    side_effects: bool = False  # writes files, sends requests that change things...
    timeout_s: float | None = None  # None: the run's tool_timeout_s
    retries: int = 0  # extra attempts after a failure (planner executor)
    cost: float = 0.0  # relative cost hint for planners
    tags: tuple[str, ...] = ()
    source: str = "builtin"  # builtin | entry_point:<name> | plugin:<file> | mcp:<server> | user
    # The call's canonical effect for loop detection (nodes/routes.py call_signature): its
    # arguments (a mapping) -> the arguments that decide what it does, e.g. a URL without its
    # #fragment, without the arguments that only shape the answer (how many characters or
    # results to show). Two calls with the same effect count as the same call. None: the
    # arguments as they are. It must not raise (a failure counts the arguments as they are).
    canonical: Callable[[Mapping[str, Any]], Any] | None = None


META_KEY = "smart_agent_tool_meta"  # a tool may carry its ToolMeta in ``tool.metadata`` (MCP tools do)


def keeping(*names: str, defaults: Mapping[str, Any] | None = None) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    """A ``ToolMeta.canonical``: only the arguments ``names`` (the others only change how the
    result is shown, or are not the tool's), each missing one as its ``defaults`` value."""
    fill = dict(defaults or {})

    def canonical(args: Mapping[str, Any]) -> dict[str, Any]:
        return {name: args.get(name, fill.get(name)) for name in names}

    canonical.__qualname__ = f"keeping{names!r}"
    return canonical


def attached_meta(tool: BaseTool) -> ToolMeta | None:
    """The ``ToolMeta`` a tool carries in its ``metadata`` under ``META_KEY``, if any."""
    meta = (getattr(tool, "metadata", None) or {}).get(META_KEY)
    return meta if isinstance(meta, ToolMeta) else None


RegistryStep = Callable[["ToolRegistry"], None]
"""A change to a registry that may wait until its pending steps (plugin loading) have run."""


@dataclass
class ToolRegistry:
    """Tools by name plus their metadata.

    Some of the content may be *pending*: steps (loading plugins, in ``default_registry``)
    that run the first time the tools are read - listed, looked up, counted, described -
    so building a graph loads no plugin. Changes made meanwhile (``register(...,
    replace=True)``, ``unregister``, ``then``) queue behind them, so the result is the same
    as if every step had run at once; ``copy`` carries the pending steps along.

    Inside a run that opened MCP sessions for its graph, the registry also holds those of the
    run's tools (``run_tools.py``) whose names match its ``offer_run_tools`` patterns,
    after its own and never replacing one of them.
    """

    _tools: dict[str, BaseTool] = field(default_factory=dict)
    _meta: dict[str, ToolMeta] = field(default_factory=dict)
    _pending: list[RegistryStep] = field(default_factory=list, compare=False, repr=False)
    _run_patterns: tuple[str, ...] = field(default=(), compare=False, repr=False)
    _memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)  # (see memo)

    @property
    def pending(self) -> bool:
        """True while some content (plugins) has not been loaded yet."""
        return bool(self._pending)

    def defer(self, step: RegistryStep) -> None:
        """Run ``step`` the first time the tools are read (after steps deferred before it)."""
        self._pending.append(step)

    def then(self, step: RegistryStep) -> None:
        """Apply ``step`` to this registry now, or after its pending steps when there are."""
        if self._pending:
            self._pending.append(step)
        else:
            step(self)

    def memo(self, key: Any, compute: Callable[[], T]) -> T:
        """``compute()``, a value that depends on the registry's tools and metadata alone (and on
        ``key``), remembered until a tool is registered or dropped (an agent's offer, asked twice
        a turn). Computed afresh while steps are pending or the run's MCP tools are offered."""
        if self._pending or self._run_patterns:
            return compute()
        try:
            return cast(T, self._memo[key])
        except KeyError:
            value = self._memo[key] = compute()
            return value

    def load(self) -> ToolRegistry:
        """Run the pending steps now: a caller on an event loop does it in a worker thread first
        (the discovery reads folders and imports modules). Returns the registry."""
        self._load()
        return self

    def _load(self) -> None:
        while self._pending:
            steps, self._pending = self._pending, []
            for step in steps:
                step(self)

    @property
    def run_patterns(self) -> tuple[str, ...]:
        return self._run_patterns

    def offer_run_tools(self, patterns: Iterable[str]) -> ToolRegistry:
        """Also hold the current run's MCP tools whose names match ``patterns`` (names or globs;
        ``"*"``: all of them). Returns the registry."""
        self._run_patterns = tuple(dict.fromkeys((*self._run_patterns, *patterns)))
        return self

    def _view(self) -> tuple[dict[str, BaseTool], dict[str, ToolMeta]]:
        """Its tools and their metadata, with the matching run tools of the current run."""
        if self._pending:
            self._load()
        if not self._run_patterns:  # (every lookup of a turn comes here: the common case first)
            return self._tools, self._meta
        extra = run_tools_matching(self._run_patterns)
        if not extra:
            return self._tools, self._meta
        tools, meta = dict(self._tools), dict(self._meta)
        for tool, tool_meta in extra:
            if tool.name not in tools:
                tools[tool.name], meta[tool.name] = tool, tool_meta
        return tools, meta

    def register(self, tool: BaseTool, meta: ToolMeta | None = None, *, replace: bool = False) -> BaseTool:
        if not isinstance(tool, BaseTool):
            raise TypeError(f"register() takes a LangChain BaseTool, got {type(tool).__name__}")
        if self._pending and replace:  # the outcome does not depend on what is pending: queue it
            self._pending.append(lambda r: _set(r, tool, meta))
            return tool
        self._load()  # a name clash can only be known once everything is loaded
        if tool.name in self._tools and not replace:
            raise ValueError(f"A tool named {tool.name!r} is already registered (pass replace=True to override)")
        _set(self, tool, meta)
        return tool

    def unregister(self, name: str) -> None:
        self.then(lambda r: _drop(r, name))

    def __contains__(self, name: object) -> bool:
        return name in self._view()[0]

    def __len__(self) -> int:
        return len(self._view()[0])

    def names(self) -> list[str]:
        return list(self._view()[0])

    def get(self, name: str) -> BaseTool:
        tools = self._view()[0]
        try:
            return tools[name]
        except KeyError:
            raise KeyError(f"Unknown tool {name!r}. Known tools: {', '.join(tools) or '(none)'}") from None

    def meta(self, name: str) -> ToolMeta:
        tools, meta = self._view()
        if name not in tools:
            self.get(name)
        return meta[name]

    def entry(self, name: str) -> tuple[BaseTool, ToolMeta] | None:
        """``(tool, meta)`` of ``name`` from one view of the registry; None for an unknown name
        (a tool call's name: the tools node asks this once per call)."""
        tools, meta = self._view()
        tool = tools.get(name)
        return None if tool is None else (tool, meta[name])

    def tools(self, names: Iterable[str] | None = None) -> list[BaseTool]:
        """The tools with these names (all when ``names`` is None or empty), in registry order."""
        return _select(self._view()[0], names)

    def entries(self, names: Iterable[str] | None = None) -> list[tuple[BaseTool, ToolMeta]]:
        """:meth:`tools` with each tool's :meth:`meta`, read from one view of the registry (an
        agent turn filters its offer by metadata: one lookup instead of one per tool)."""
        tools, meta = self._view()
        return [(t, meta[t.name]) for t in _select(tools, names)]

    def copy(self) -> ToolRegistry:
        """An independent registry with the same tools (pending steps still pending, same run patterns)."""
        return ToolRegistry(dict(self._tools), dict(self._meta), list(self._pending), self._run_patterns)

    def describe(self) -> list[dict[str, Any]]:
        """Names, descriptions and JSON argument schemas (what a planner prompt needs)."""
        tools, meta = self._view()
        out = []
        for name, tool in tools.items():
            params = _json_schema(tool.tool_call_schema)
            out.append({"name": name, "description": tool.description, "parameters": params, "meta": meta[name]})
        return out

    # -- plugin discovery -------------------------------------------------
    def _add_loaded(self, obj: Any, source: str) -> int:
        if callable(obj) and not isinstance(obj, BaseTool):
            obj = obj()
        items = obj if isinstance(obj, (list, tuple)) and not _is_pair(obj) else [obj]
        n = 0
        for item in items:
            tool, meta = (item if _is_pair(item) else (item, None))
            meta = meta or ToolMeta()
            meta = ToolMeta(**{**meta.__dict__, "source": source})
            self.register(tool, meta, replace=True)
            n += 1
        return n

    def load_entry_points(self, group: str = ENTRY_POINT_GROUP) -> int:
        n = 0
        for ep in entry_points(group=group):
            try:
                n += self._add_loaded(ep.load(), f"entry_point:{ep.name}")
            except Exception as exc:  # a broken plugin must not break the framework
                log.warning("smart-agent: plugin entry point %s failed to load: %s", ep.name, exc)
        return n

    def load_folder(self, folder: str | Path) -> int:
        folder = Path(folder)
        if not folder.is_dir():
            return 0
        n = 0
        for path in sorted(folder.glob("*.py")):
            try:
                spec = importlib.util.spec_from_file_location(f"smart_agent_plugin_{path.stem}", path)
                if spec is None or spec.loader is None:
                    raise ImportError(f"no module loader for {path.name}")
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                tools = getattr(module, "TOOLS", None)
                if tools is None:
                    log.warning("smart-agent: plugin %s defines no TOOLS list; skipped", path)
                    continue
                n += self._add_loaded(tools, f"plugin:{path.name}")
            except Exception as exc:
                log.warning("smart-agent: plugin %s failed to load: %s", path, exc)
        return n


def _json_schema(schema: Any) -> dict[str, Any]:
    """A tool's argument schema as JSON Schema (a pydantic model class or a dict)."""
    return dict(schema) if isinstance(schema, dict) else schema.model_json_schema()


def _select(tools: dict[str, BaseTool], names: Iterable[str] | None) -> list[BaseTool]:
    """The tools with these names (all when ``names`` is None or empty), in registry order."""
    if not names:
        return list(tools.values())
    wanted = list(dict.fromkeys(names))
    missing = [n for n in wanted if n not in tools]
    if missing:
        raise KeyError(f"Unknown tool(s): {', '.join(missing)}. Known tools: {', '.join(tools)}")
    return [tools[n] for n in wanted]


def _set(registry: ToolRegistry, tool: BaseTool, meta: ToolMeta | None) -> None:
    registry._tools[tool.name] = tool
    registry._meta[tool.name] = meta or ToolMeta(source="user")
    registry._memo.clear()


def _drop(registry: ToolRegistry, name: str) -> None:
    registry._tools.pop(name, None)
    registry._meta.pop(name, None)
    registry._memo.clear()


def _is_pair(obj: Any) -> bool:
    return isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], BaseTool) and isinstance(obj[1], ToolMeta)

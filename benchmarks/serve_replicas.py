"""Benchmark: two ``smart-agent serve`` replicas on Postgres + Redis against one in-memory
``smart-agent serve`` (the runtime of ``langgraph dev``), same graphs, same scripted model.

    python benchmarks/serve_replicas.py [--runs 30] [--burst 40]

Everything runs on this machine: a scripted OpenAI-compatible server in this process (answers at
once), a PostgreSQL 16 (pgserver) and a Redis (``redis-server``) in temporary folders, the baseline
server and the two replicas as ``smart-agent serve`` processes (memory off, so the figures are the
server's, not the embedding model's). Measured through ``langgraph_sdk``:

* **wait**: ``runs.wait`` of a one-step ``agent`` run on a new thread, one at a time; rounds
  alternate baseline / replica (A, then B), and the ratio is the median of the per-round ratios;
* **burst**: ``--burst`` background runs (``runs.create`` on as many new threads, spread over the
  replicas), then ``runs.join`` of each: the wall time from the first create to the last join, as
  runs per second (median of 3 interleaved rounds); through one replica, then through both (each
  run joined through the replica that did not create it). All the processes share this machine's
  cores: on 2 cores a second replica adds no CPU, so the two-replica figure measures the sharing,
  not the scaling;
* **takeover**: one background run whose replica is killed (``kill -9``) while its model call is
  in flight, with ``LG_BG_JOB_HEARTBEAT=2``: seconds from the kill to the run's success on the
  other replica (the engine's sweep: 2-4 heartbeats).

Results go to benchmarks/results/serve_replicas.json and a markdown table on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "serve_replicas.json"
BURST_ROUNDS = 3


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ok(url: str, proc: subprocess.Popen, log: Path, timeout_s: float = 120) -> None:
    import httpx

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{url} exited:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/ok", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not start")


class Servers:
    """The scripted model, Postgres, Redis, the baseline and the two replicas."""

    def __init__(self, folder: Path) -> None:
        import warnings

        from smart_agent.testing.scripted_server import ScriptedOpenAIServer, text

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import pgserver

        self.folder = folder
        self.respond: Any = lambda req: text("ok")
        # One model server per server process (all answer alike): a test of takeover sees which
        # replica runs a step.
        self.models = {name: ScriptedOpenAIServer(responder=lambda req: self.respond(req)).start()
                       for name in ("memory", "a", "b")}
        self.pg = pgserver.get_server(str(folder / "pg"), cleanup_mode="stop")
        redis_port = free_port()
        self.redis = subprocess.Popen(
            [shutil.which("redis-server") or "redis-server", "--port", str(redis_port), "--save", "",
             "--appendonly", "no", "--dir", str(folder)],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
        )
        base = {k: v for k, v in os.environ.items() if not k.startswith(("SMART_AGENT_", "OPENAI_"))}
        base.update(
            OPENAI_API_KEY="x", SMART_AGENT_MODEL="openai:scripted-model",
            SMART_AGENT_MEMORY="false", SMART_AGENT_HOME=str(folder / "home"), SMART_AGENT_WORKSPACE=str(folder),
            LANGSMITH_TRACING="false", LANGGRAPH_CLI_NO_ANALYTICS="1", LANGGRAPH_NO_VERSION_CHECK="1",
            HF_HUB_OFFLINE="1",
        )
        self.memory_env = base
        self.shared_env = {**base, "SMART_AGENT_DB": self.pg.get_uri(), "REDIS_URI": f"redis://127.0.0.1:{redis_port}",
                           "LG_BG_JOB_HEARTBEAT": "2"}
        self.procs: dict[str, tuple[subprocess.Popen, str, Path]] = {}

    def start(self, name: str, shared: bool) -> str:
        port = free_port()
        log = self.folder / f"{name}.log"
        exe = Path(sys.executable).with_name("smart-agent")
        with open(log, "a") as fh:
            proc = subprocess.Popen(
                [str(exe), "serve", "--port", str(port), "--jobs", "10"],
                env={**(self.shared_env if shared else self.memory_env), "OPENAI_BASE_URL": self.models[name].base_url},
                stdout=fh, stderr=subprocess.STDOUT,
                cwd=self.folder,
            )
        url = f"http://127.0.0.1:{port}"
        self.procs[name] = (proc, url, log)
        return url

    def ready(self) -> None:
        for proc, url, log in self.procs.values():
            wait_ok(url, proc, log)

    def close(self) -> None:
        for proc, _, _ in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc, _, _ in self.procs.values():
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
        for model in self.models.values():
            model.stop()
        self.redis.terminate()
        self.redis.wait(10)
        self.pg.cleanup()


async def one_wait(client: Any) -> float:
    thread = await client.threads.create()
    t0 = time.perf_counter()
    result = await client.runs.wait(thread["thread_id"], "agent", input={"task": "hi"})
    elapsed = time.perf_counter() - t0
    assert result.get("answer") == "ok", result
    return elapsed


async def burst(clients: list[Any], n: int) -> float:
    threads = [await clients[i % len(clients)].threads.create() for i in range(n)]
    t0 = time.perf_counter()
    runs = await asyncio.gather(*[
        clients[i % len(clients)].runs.create(t["thread_id"], "agent", input={"task": "hi"})
        for i, t in enumerate(threads)
    ])
    await asyncio.gather(*[
        clients[(i + 1) % len(clients)].runs.join(t["thread_id"], r["run_id"])  # joined through the other one
        for i, (t, r) in enumerate(zip(threads, runs, strict=True))
    ])
    elapsed = time.perf_counter() - t0
    for i, (t, r) in enumerate(zip(threads, runs, strict=True)):
        run = await clients[i % len(clients)].runs.get(t["thread_id"], r["run_id"])
        assert run["status"] == "success", run
    return n / elapsed


async def takeover(servers: Servers, clients: dict[str, Any]) -> float:
    from smart_agent.testing.scripted_server import text, tool_call

    reached = threading.Event()

    def respond(req):
        if req["messages"][-1]["role"] != "tool":
            return tool_call("calculator", {"expression": "2+2"})
        if not reached.is_set():
            reached.set()
            return {"content": "never", "delay_s": 60}  # the replica dies while it waits
        return text("done")

    servers.respond = respond
    thread = await clients["a"].threads.create()
    run = await clients["a"].runs.create(thread["thread_id"], "agent", input={"task": "2+2"}, durability="sync")
    if not reached.wait(60):
        raise RuntimeError("the run did not reach its second model call")
    on_a = any(r["messages"][-1]["role"] == "tool" for r in servers.models["a"].requests)
    victim, survivor = ("a", "b") if on_a else ("b", "a")
    proc = servers.procs[victim][0]
    t0 = time.perf_counter()
    proc.send_signal(signal.SIGKILL)
    await clients[survivor].runs.join(thread["thread_id"], run["run_id"])
    elapsed = time.perf_counter() - t0
    done = await clients[survivor].runs.get(thread["thread_id"], run["run_id"])
    assert done["status"] == "success", done
    return elapsed


async def measure(runs: int, burst_n: int) -> list[dict[str, Any]]:
    from langgraph_sdk import get_client

    with tempfile.TemporaryDirectory(prefix="serve-bench-", ignore_cleanup_errors=True) as tmp:
        folder = Path(tmp)
        os.chmod(folder, 0o755)  # pgserver's postgres runs as another user when we are root
        servers = Servers(folder)
        try:
            urls = {"memory": servers.start("memory", False), "a": servers.start("a", True),
                    "b": servers.start("b", True)}
            servers.ready()
            clients = {k: get_client(url=u, timeout=120) for k, u in urls.items()}
            for c in clients.values():  # warm: graphs built, pools open
                await one_wait(c)
            base_ms, shared_ms, ratios = [], [], []
            for i in range(runs):
                b = await one_wait(clients["memory"])
                s = await one_wait(clients["a" if i % 2 == 0 else "b"])
                base_ms.append(b * 1000)
                shared_ms.append(s * 1000)
                ratios.append(s / b)
            rates: dict[str, list[float]] = {"memory": [], "one": [], "two": []}
            for _ in range(BURST_ROUNDS):  # interleaved; medians below
                rates["memory"].append(await burst([clients["memory"]], burst_n))
                rates["one"].append(await burst([clients["a"]], burst_n))
                rates["two"].append(await burst([clients["a"], clients["b"]], burst_n))
            base_rate, one_rate, shared_rate = (statistics.median(rates[k]) for k in ("memory", "one", "two"))
            takeover_s = await takeover(servers, clients)
        finally:
            servers.close()
    p95 = lambda xs: sorted(xs)[max(0, int(round(0.95 * len(xs))) - 1)]  # noqa: E731
    return [
        {"measure": "runs.wait, one-step run", "baseline": "in memory, 1 process",
         "baseline_value": round(statistics.median(base_ms), 1), "value": round(statistics.median(shared_ms), 1),
         "unit": "ms (median)", "p95_baseline": round(p95(base_ms), 1), "p95": round(p95(shared_ms), 1),
         "ratio": round(statistics.median(ratios), 2), "n": runs},
        {"measure": f"{burst_n} background runs at once, 1 replica", "baseline": "in memory, 1 process",
         "baseline_value": round(base_rate, 1), "value": round(one_rate, 1), "unit": "runs/s",
         "ratio": round(one_rate / base_rate, 2), "n": burst_n},
        {"measure": f"{burst_n} background runs at once, 2 replicas", "baseline": "in memory, 1 process",
         "baseline_value": round(base_rate, 1), "value": round(shared_rate, 1), "unit": "runs/s",
         "ratio": round(shared_rate / base_rate, 2), "n": burst_n},
        {"measure": "takeover after kill -9 (LG_BG_JOB_HEARTBEAT=2)", "baseline": "",
         "baseline_value": None, "value": round(takeover_s, 1), "unit": "s", "ratio": None, "n": 1},
    ]


def rows(runs: int = 30, burst_n: int = 40) -> list[dict[str, Any]]:
    return asyncio.run(measure(runs, burst_n))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--burst", type=int, default=40)
    args = parser.parse_args()
    result = rows(args.runs, args.burst)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({
        "command": f"python benchmarks/serve_replicas.py --runs {args.runs} --burst {args.burst}",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "rows": result,
    }, indent=2) + "\n")
    print("| measure | baseline | baseline value | on Postgres + Redis | unit | ratio |")
    print("| --- | --- | ---: | ---: | --- | ---: |")
    for r in result:
        print(f"| {r['measure']} | {r['baseline']} | {r['baseline_value'] if r['baseline_value'] is not None else ''} "
              f"| {r['value']} | {r['unit']} | {r['ratio'] if r['ratio'] is not None else ''} |")


if __name__ == "__main__":
    main()

"""The scripted server's command line: one BASE_URL line, then it serves (a separate process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

from langchain_openai import ChatOpenAI


def test_cli_prints_base_url_and_serves(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"content": "from the CLI"}]))
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "smart_agent.testing.scripted_server", "--script", str(script), "--port", "0", "--loop"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        line_box: list[str] = []
        reader = threading.Thread(target=lambda: line_box.append(proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout=20)
        assert line_box, "the CLI printed no BASE_URL line within 20 s"
        line = line_box[0].strip()
        assert line.startswith("BASE_URL=http://127.0.0.1:") and line.endswith("/v1")
        base_url = line.split("=", 1)[1]
        model = ChatOpenAI(base_url=base_url, api_key="x", model="scripted-model", max_retries=0, timeout=10)
        assert model.invoke("hi").content == "from the CLI"
        assert model.invoke("again").content == "from the CLI"  # --loop
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
    assert proc.stdout.read() == ""  # exactly one line on stdout
    assert proc.stderr.read() == ""  # quiet: no per-request logging

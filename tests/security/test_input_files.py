"""Input files the CLI reads for a user (inputs.py): only regular files, bounded reads,
bounded JSON and YAML. Each test attacks the reader and fails on a plain read."""

from __future__ import annotations

import os
import resource

import pytest

from smart_agent.config.files import InputFileError, load_json, load_yaml, read_text_file

LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True)
)


def test_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "suite.yaml"
    os.mkfifo(fifo)
    with pytest.raises(InputFileError, match=r"eval suite .*suite\.yaml: a FIFO"):
        read_text_file(fifo, what="eval suite")


def test_device_and_folder_are_refused(tmp_path):
    with pytest.raises(InputFileError, match="/dev/zero: a device, not a regular file"):
        read_text_file("/dev/zero", what="file")
    with pytest.raises(InputFileError, match="a folder"):
        read_text_file(tmp_path, what="file")
    with pytest.raises(InputFileError, match="no such file"):
        read_text_file(tmp_path / "missing", what="file")


def test_a_file_over_the_limit_is_refused(tmp_path):
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 1001)
    with pytest.raises(InputFileError, match="larger than 1000 bytes"):
        read_text_file(big, limit=1000)
    big.write_bytes(b" " * 1000)
    assert len(read_text_file(big, limit=1000)) == 1000


def test_bytes_that_are_not_utf8_are_named(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok\xffno")
    with pytest.raises(InputFileError, match=r"not UTF-8 text \(byte 2\)"):
        read_text_file(bad)


def test_billion_laughs_is_refused_without_expanding():
    # (expanded, the document is 9**9 values: gigabytes)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(InputFileError, match="expands to more than"):
        load_yaml(LAUGHS, what="suite")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000  # KiB


def test_yaml_aliases_within_bounds_still_load():
    assert load_yaml("x: &a {k: 1}\ny: *a\n") == {"x": {"k": 1}, "y": {"k": 1}}
    with pytest.raises(InputFileError, match="refers to itself"):
        load_yaml("&a [*a]")


def test_deep_nesting_is_refused_before_parsing():
    with pytest.raises(InputFileError, match="nested"):
        load_yaml("[" * 100_000)
    with pytest.raises(InputFileError, match="nested more than 200 levels"):
        load_json("[" * 100_000 + "]" * 100_000)
    # brackets inside strings are text, not nesting
    assert load_json('{"a": "[[[[", "b": [1, {"c": "\\"]"}]}') == {"a": "[[[[", "b": [1, {"c": '"]'}]}


def test_json_syntax_error_is_one_line():
    with pytest.raises(InputFileError, match=r"plan\.json: not valid JSON \(Expecting value at line 1 column 1\)"):
        load_json("nope", what="plan.json")

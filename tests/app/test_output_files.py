"""The command's output files: checked up front, written atomically, through links (issue 31, item 7)."""

import inspect
import json
import os
import types

import pytest

from skmip.app.output_files import OutputPathError, check_output_path, write_atomically


def test_write_replaces_the_file_whole_and_keeps_its_mode(tmp_path):
    path = tmp_path / "out.json"
    path.write_text("old")
    os.chmod(path, 0o640)
    write_atomically(path, '{"new": 1}')
    assert json.loads(path.read_text()) == {"new": 1}
    assert os.stat(path).st_mode & 0o777 == 0o640
    assert os.listdir(tmp_path) == ["out.json"]  # no temporary left


def test_a_failed_write_keeps_the_previous_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    # A full disk (ENOSPC at the flush to disk): before issue 31 the synthesizer's --json was
    # rewritten in place and left 4,095 bytes of invalid JSON where a good file was.
    path = tmp_path / "out.json"
    path.write_text('{"good": true}')

    def full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space left"):
        write_atomically(path, json.dumps({"rows": list(range(10_000))}))
    assert json.loads(path.read_text()) == {"good": True}
    assert os.listdir(tmp_path) == ["out.json"]


def test_a_symbolic_link_is_written_through_and_kept(tmp_path):
    real = tmp_path / "data" / "real.json"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    assert check_output_path("--json", link) == str(real)
    write_atomically(link, "new")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == "new"
    assert sorted(os.listdir(real.parent)) == ["real.json"]


def test_a_dangling_link_writes_its_target(tmp_path):
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "later.json")
    write_atomically(link, "x")
    assert link.is_symlink() and (tmp_path / "later.json").read_text() == "x"


@pytest.mark.parametrize("make, message", [
    (lambda t: t, "is a directory"),
    (lambda t: t / "missing" / "out.json", "does not exist"),
    (lambda t: (t / "file").write_text("") or t / "file" / "out.json", "does not exist"),
])
def test_unwritable_paths_are_refused(tmp_path, make, message):
    with pytest.raises(OutputPathError, match=message):
        check_output_path("--json", make(tmp_path))


def test_the_synthesizer_json_is_written_atomically_through_a_link(tmp_path):
    from skmip.app import synth_cli

    real = tmp_path / "real.json"
    link = tmp_path / "link.json"
    link.symlink_to(real)
    bunch = types.SimpleNamespace(description="toy")
    args = types.SimpleNamespace(n_models=4, seed=0)
    synth_cli._write_json(str(link), bunch, ["a"], args, [{"synthesizer": "s"}], done=True)
    assert link.is_symlink() and json.loads(real.read_text())["complete"] is True
    assert "open(" not in inspect.getsource(synth_cli._write_json)  # one writer: write_atomically


def test_help_states_the_wrappers_n_rounds_default():
    # Issue 31: --help said 1000 while the wrapper's default is 400; it is read from the code.
    from skmip import MIPNoiseWrapper
    from skmip.app.options import build_parser

    default = inspect.signature(MIPNoiseWrapper).parameters["n_rounds"].default
    text = " ".join(build_parser().format_help().split())
    assert f"default for a release is {default};" in text

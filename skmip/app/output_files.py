"""The command's output files: checked before any work, written atomically, through links.

``--json`` and ``--report`` name files the command writes after each finished row. Two rules
hold for each of them:

* **Checked up front.** :func:`check_output_path` runs before the first model or synthesizer
  is fitted: a path that is a directory, whose folder does not exist, or that cannot be
  written is refused with a one-line error (exit code 2), not after minutes of work.
* **Never half-written.** :func:`write_atomically` writes a temporary file in the target's
  own folder, flushes it to disk and moves it over the target with :func:`os.replace`, so a
  reader (or a full disk, or Ctrl-C) sees the previous complete file or the new one.

A path that is a symbolic link is written *through*: the link stays, and the file it points
to is replaced (the temporary file sits beside that file, so the move stays on one file
system). This is what ``open(path, "w")`` did before, without its half-written window.
"""

from __future__ import annotations

import os
import tempfile

__all__ = ["OutputPathError", "check_output_path", "write_atomically"]


class OutputPathError(ValueError):
    """An output path the command cannot write (printed as one line, exit code 2)."""


def _target(path):
    """The file that writing ``path`` replaces: a symbolic link's final target."""
    return os.path.realpath(os.fspath(path))


def check_output_path(option: str, path) -> str:
    """Refuse ``path`` for ``option`` now if the command could not write it later.

    Parameters
    ----------
    option : str
        The command-line option, for the message (``"--json"``).
    path : str or os.PathLike
        Where the option asks the output to go.

    Returns
    -------
    str
        The file that will be replaced (``path``, or its link's target).

    Raises
    ------
    OutputPathError
        If the path (or its link's target) is a directory, its folder does not exist or is
        not a folder, or the folder or an existing file there is not writable.

    Examples
    --------
    >>> check_output_path("--json", "/")
    Traceback (most recent call last):
    ...
    skmip.app.output_files.OutputPathError: --json /: is a directory; name a file in it, e.g. /results.json.
    """
    target = _target(path)
    folder = os.path.dirname(target) or "."
    shown = os.fspath(path)
    if os.path.isdir(target):
        example = os.path.join(shown, "results.json" if option == "--json" else "report.html")
        raise OutputPathError(f"{option} {shown}: is a directory; name a file in it, e.g. {example}.")
    if not os.path.isdir(folder):
        raise OutputPathError(f"{option} {shown}: the folder {folder} does not exist; create it first "
                              "or name a file in an existing folder.")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputPathError(f"{option} {shown}: the folder {folder} is not writable; name a file "
                              "in a folder you can write to.")
    if os.path.exists(target) and not os.access(target, os.W_OK):
        raise OutputPathError(f"{option} {shown}: the existing file {target} is read-only; make it "
                              "writable or name another file.")
    return target


def write_atomically(path, text: str) -> None:
    """Replace the file at ``path`` (through a link) by ``text`` in one step.

    Parameters
    ----------
    path : str or os.PathLike
        The output file; a symbolic link is followed and left in place.
    text : str
        The whole new content (UTF-8).

    Notes
    -----
    The temporary file is created beside the target (``os.replace`` is atomic only within
    one file system), fsynced before the move, and removed if anything fails; the new file
    keeps an existing file's permissions, or gets the ones ``open`` would give (the umask).
    """
    target = _target(path)
    folder = os.path.dirname(target) or "."
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(target)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _mode_for(target))
        os.replace(tmp, target)
    except BaseException:
        # Ctrl-C or a full disk: the previous file stays whole, and no temporary is left.
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _mode_for(target):
    """An existing file's permission bits, else those ``open(target, "w")`` would create."""
    try:
        return os.stat(target).st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask

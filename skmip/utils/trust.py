"""What code the ``skmip`` command may run on the user's behalf, and what it refuses.

The command builds estimators from text (``--estimator``) and from pickles
(``--estimator-file``), then trains them on private rows. Three doors let code or private data
out of that, and each is shut here, in one place:

* **Imports.** Naming ``pkg.mod.Class`` imports ``pkg.mod``, which runs its import-time code.
  :func:`check_installed` allows a top-level package only if an installed distribution declares
  it (``importlib.metadata``) or it is part of Python's standard library, and only if the current
  working directory neither provides it nor shadows the installed copy (``python -m skmip`` puts
  the working directory first on ``sys.path``).
* **Parameters that reach the file system.** ``Pipeline(memory=DIR)`` makes the audit cache
  pickles of fitted transformers and of transformed private rows in ``DIR`` and *load them* on the
  next identical run, so a pickle planted there runs; ``CountVectorizer(input="filename")`` reads
  whatever files the data names. :func:`refuse_io_parameters` refuses every parameter, at any
  depth of the estimator, whose name says it holds a path, a cache, a directory, a file or a
  checkpoint, unless it is unset (``None``/``False``) or a number (``SVC(cache_size=200)``).
* **Unpickling.** :func:`load_pickle` unpickles with every global the stream names checked
  first: classes of installed distributions and the reconstruction helpers pickles are made of
  (``numpy``'s ``_reconstruct``, ``torch``'s ``_rebuild_tensor_v2``, ``copyreg``), nothing else.
  ``os.system``, ``eval``, ``subprocess.Popen`` and any function that is not a reconstructor
  are refused before they are looked up. This narrows what a hostile file can do; it does not
  make one safe (an installed class may do anything in ``__setstate__``), so the command still
  says, where it loads the file, that it runs code from it.
"""

from __future__ import annotations

import contextvars
import functools
import importlib
import importlib.machinery
import importlib.metadata
import importlib.util
import os
import sys

__all__ = ["UntrustedError", "check_installed", "refuse_io_parameters", "load_pickle", "TRUST_WARNING"]

#: What the command prints where it unpickles a file (not only in ``--help``).
TRUST_WARNING = (
    "skmip: unpickling {path} runs code stored in it; skmip refuses pickles that name anything "
    "but installed classes and array reconstructors, but only load files you trust."
)


class UntrustedError(ValueError):
    """A name, a parameter or a pickle the command refuses to run (the message says why)."""


# ----------------------------------------------------------------------------- imports
@functools.lru_cache(maxsize=1)
def _distributions() -> dict:
    return importlib.metadata.packages_distributions()


def _find_spec_without_cwd(name: str):
    """The spec ``import name`` would find if the working directory were not on ``sys.path``."""
    cwd = os.path.realpath(os.getcwd())
    paths = [p for p in sys.path if p and os.path.realpath(p) != cwd]
    for finder in sys.meta_path:
        if finder is importlib.machinery.PathFinder:
            spec = finder.find_spec(name, paths)
        elif hasattr(finder, "find_spec"):
            try:
                spec = finder.find_spec(name, None)
            except (TypeError, ImportError):
                spec = None
        else:
            spec = None
        if spec is not None:
            return spec
    return None


def _origin(spec):
    return None if spec is None else (spec.origin or str(list(spec.submodule_search_locations or [])))


def check_installed(module: str, what: str) -> None:
    """Refuse to import ``module`` unless its top-level package comes from an installed distribution.

    Parameters
    ----------
    module : str
        A dotted module name, e.g. ``"sklearn.ensemble"``.
    what : str
        How the refusal names the request (``"--estimator sklearn.ensemble.Forest"``).

    Raises
    ------
    UntrustedError
        If no installed distribution declares the top-level package (and it is not in the
        standard library), or if the working directory provides or shadows it.
    """
    top = module.partition(".")[0]
    if top in sys.modules:
        return  # already imported: the code that runs is the code that is running
    if top not in sys.stdlib_module_names and top not in _distributions():
        raise UntrustedError(
            f"{what}: cannot import {top!r}: no installed distribution provides it. skmip imports "
            "only installed packages (pip install it), so that naming a module cannot run a file "
            "that merely lies in the working directory."
        )
    found, installed = importlib.util.find_spec(top), _find_spec_without_cwd(top)
    if installed is None or _origin(found) != _origin(installed):
        raise UntrustedError(
            f"{what}: {top!r} would be imported from {_origin(found)}, which shadows the installed "
            f"package ({_origin(installed)}); run skmip from another directory or rename that file."
        )


# ----------------------------------------------------------------------------- parameters
#: A word in a parameter's name that says its value names something on disk.
_IO_WORDS = frozenset({
    "memory", "cache", "cachedir", "path", "paths", "filepath", "file", "files", "filename",
    "filenames", "dir", "dirname", "directory", "folder", "location", "checkpoint", "logdir",
})

#: Parameters whose *value* turns reading the data into reading files (text vectorizers).
_IO_VALUES = {"input": frozenset({"file", "filename"})}


def _is_unset_or_number(value) -> bool:
    import numbers

    if value is None or value is False:
        return True
    return isinstance(value, numbers.Number) and not isinstance(value, bool)


def _io_reason(name: str, value):
    leaf = name.rpartition("__")[2]
    words = set(leaf.lower().split("_"))
    if words & _IO_WORDS and not _is_unset_or_number(value):
        return f"{name}={value!r} names a path, a cache or a file"
    if isinstance(value, str) and value in _IO_VALUES.get(leaf, ()):
        return f"{name}={value!r} makes the estimator read the files the data names"
    return None


def refuse_io_parameters(estimator, what: str) -> None:
    """Refuse an estimator any of whose parameters, at any depth, reaches the file system.

    Parameters
    ----------
    estimator : estimator
        Read with ``get_params(deep=True)`` (nested estimators, pipeline steps included).
    what : str
        How the refusal names the request.

    Raises
    ------
    UntrustedError
        Naming the first such parameter and the fix (unset it).

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn.svm import SVC
    >>> refuse_io_parameters(make_pipeline(StandardScaler(), SVC(cache_size=500)), "--estimator")
    >>> refuse_io_parameters(make_pipeline(StandardScaler(), SVC(), memory="/tmp/c"), "--estimator")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    skmip.utils.trust.UntrustedError: --estimator: memory='/tmp/c' names a path, a cache or a file; ...
    """
    params = estimator.get_params(deep=True) if hasattr(estimator, "get_params") else {}
    for name in sorted(params):
        reason = _io_reason(name, params[name])
        if reason is not None:
            raise UntrustedError(
                f"{what}: {reason}; the audit would write or read it while training on private "
                f"rows (a cache of pickles there is loaded, and runs, on the next run). Leave "
                f"{name.rpartition('__')[2]} unset."
            )


# ----------------------------------------------------------------------------- pickles
#: Standard-library globals that ordinary pickles of estimators and arrays are made of.
_STDLIB_GLOBALS = frozenset({
    ("copyreg", "_reconstructor"), ("copyreg", "__newobj__"), ("copyreg", "__newobj_ex__"),
    ("_codecs", "encode"), ("codecs", "encode"),
    ("collections", "OrderedDict"), ("collections", "defaultdict"), ("collections", "deque"),
    ("collections", "Counter"), ("functools", "partial"),
    ("builtins", "set"), ("builtins", "frozenset"), ("builtins", "slice"), ("builtins", "complex"),
    ("builtins", "bytearray"), ("builtins", "bytes"), ("builtins", "range"), ("builtins", "object"),
    ("builtins", "list"), ("builtins", "dict"), ("builtins", "tuple"), ("builtins", "int"),
    ("builtins", "float"), ("builtins", "str"), ("builtins", "bool"), ("builtins", "print"),
    ("datetime", "datetime"), ("datetime", "date"), ("datetime", "timedelta"), ("datetime", "timezone"),
    ("decimal", "Decimal"), ("fractions", "Fraction"),
})

#: Installed classes that act on the file system when the stream calls them.
_REFUSED_CLASSES = frozenset({("numpy", "memmap"), ("numpy.core.memmap", "memmap"), ("numpy._core.memmap", "memmap")})

#: Names of the module-level functions packages register to rebuild their objects (numpy's
#: random generators use ``__generator_ctor``, Cython classes ``__pyx_unpickle_Name``), read
#: after their leading underscores.
_RECONSTRUCTOR_PREFIXES = ("reconstruct", "rebuild", "unpickle", "new_", "load_from_bytes", "pyx_unpickle", "scalar")

#: A word of a function's name or module that says it may act on files, processes or code.
_REFUSED_WORDS = frozenset({
    "load", "loads", "save", "savez", "dump", "dumps", "open", "read", "write", "exec", "eval",
    "run", "system", "call", "spawn", "popen", "remove", "unlink", "rmtree", "fetch", "download",
    "compile", "import", "memmap", "fromfile", "tofile", "io", "hub", "cpp", "extension", "os",
    "subprocess", "shell", "socket", "request", "urlopen", "getattr", "setattr", "delattr",
})

_restricting = contextvars.ContextVar("skmip_trust_restricting", default=None)
_hook_installed = False


def _allowed_global(module: str, name: str) -> str | None:
    """``None`` when the stream may look up ``module.name``, else the reason it may not."""
    if (module, name) in _STDLIB_GLOBALS:
        return None
    top = module.partition(".")[0]
    if top in sys.stdlib_module_names or top == "__main__":
        return f"{module}.{name} is not a class or reconstructor of an installed package"
    if (module, name) in _REFUSED_CLASSES:
        return f"{module}.{name} acts on the file system"
    try:
        check_installed(module, "pickle")
        obj = importlib.import_module(module)
        for part in name.split("."):
            obj = getattr(obj, part)
    except (UntrustedError, ImportError, AttributeError) as exc:
        return f"{module}.{name} cannot be resolved among installed packages ({exc})"
    leaf = name.rpartition(".")[2]
    if isinstance(obj, type) or leaf.lstrip("_").startswith(_RECONSTRUCTOR_PREFIXES) or leaf.endswith("_ctor"):
        return None
    # Other functions are parameter values (FunctionTransformer(func=numpy.log1p), skorch's
    # setters, score functions); a stream may also call them, so none that acts on files,
    # processes or code is looked up.
    words = set(leaf.lower().strip("_").split("_")) | set(module.lower().split("."))
    if not callable(obj) or words & _REFUSED_WORDS:
        return f"{module}.{name} may act on files, processes or code"
    return None


def _audit(event, args):
    if event != "pickle.find_class" or _restricting.get() is None:
        return
    reason = _allowed_global(*args)
    if reason is not None:
        raise UntrustedError(f"{_restricting.get()}: refused to unpickle: {reason}.")


def load_pickle(path: str):
    """Unpickle ``path`` (``pickle`` or ``joblib.dump``) with every global it names checked first.

    Raises
    ------
    UntrustedError
        If the stream names a global that is neither a class of an installed package nor a
        reconstruction helper (``os.system``, ``builtins.eval``, ``subprocess.Popen``, ...); it
        is refused before it is looked up, so it never runs.
    """
    import joblib

    global _hook_installed
    if not _hook_installed:  # an audit hook cannot be removed; it acts only inside this function
        sys.addaudithook(_audit)
        _hook_installed = True
    token = _restricting.set(str(path))
    try:
        return joblib.load(path)
    finally:
        _restricting.reset(token)

"""Build a scikit-learn estimator from a text such as ``"sklearn.svm.SVC(C=2, probability=True)"``.

The text is parsed, never evaluated: every called name must resolve to a subclass of
:class:`sklearn.base.BaseEstimator`, checked on the class before anything is called; every
argument is a Python literal (:func:`ast.literal_eval`) or another such estimator call, e.g.
``sklearn.ensemble.BaggingClassifier(estimator=sklearn.tree.DecisionTreeClassifier(max_depth=3))``.
So ``"subprocess.Popen(args=['touch', 'x'])"`` is refused before ``Popen`` is called. Finding
a class imports its module, as ``import`` does, and only from an installed distribution
(:func:`skmip.utils.trust.check_installed`): a file in the working directory is never imported.
"""

from __future__ import annotations

import ast
import copy
import importlib
from dataclasses import dataclass, field

from skmip.utils.trust import UntrustedError, check_installed

__all__ = ["ExpressionError", "EstimatorCall", "parse_estimator", "build", "describe"]


class ExpressionError(ValueError):
    """A text that does not describe an estimator call skmip will make (the message says why)."""


@dataclass
class EstimatorCall:
    """A checked call ``cls(**kwargs)``; values may be literals or nested :class:`EstimatorCall`."""

    cls: type
    path: str
    kwargs: dict = field(default_factory=dict)


def _resolve(path: str, text: str) -> type:
    """The class named by dotted ``path``: the longest importable module, then attributes."""
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module_name = ".".join(parts[:cut])
        try:
            check_installed(module_name, text)  # before its import-time code can run
        except UntrustedError as exc:
            raise ExpressionError(str(exc)) from None
        try:
            obj = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name is not None and module_name.startswith(exc.name) and cut > 1:
                continue  # a shorter prefix may be the module (pkg.mod.Class.Inner)
            raise ExpressionError(
                f"{text}: cannot import {module_name!r} ({exc}). Is the package installed?"
            ) from None
        except ImportError as exc:
            raise ExpressionError(f"{text}: cannot import {module_name!r} ({exc}).") from None
        for i, attr in enumerate(parts[cut:]):
            if not hasattr(obj, attr):
                owner = ".".join(parts[: cut + i])
                raise ExpressionError(f"{text}: {owner} has no class {attr!r}.")
            obj = getattr(obj, attr)
        return obj
    raise ExpressionError(
        f"{text}: {path!r} is not a dotted import path such as "
        "sklearn.ensemble.RandomForestClassifier."
    )


def _check_estimator_class(obj, path: str, text: str) -> type:
    from sklearn.base import BaseEstimator

    if not (isinstance(obj, type) and issubclass(obj, BaseEstimator)):
        kind = f"class {obj.__name__}" if isinstance(obj, type) else type(obj).__name__
        raise ExpressionError(
            f"{text}: {path} is a {kind}, not a scikit-learn estimator (a subclass of "
            "sklearn.base.BaseEstimator); only estimator classes are constructed. Build anything "
            "else in Python and pass the estimator with --estimator-file."
        )
    return obj


def _dotted(node):
    """``"a.b.C"`` for a chain of names, else ``None`` (a call, a subscript... in the chain)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _node(node, text: str):
    """A literal value or an :class:`EstimatorCall`, from an AST node, calling nothing."""
    if isinstance(node, ast.Call):
        path = _dotted(node.func)
        if path is None or "." not in path:
            raise ExpressionError(
                f"{text}: {ast.unparse(node.func)} is not a dotted import path; name the class "
                "with its module, e.g. sklearn.tree.DecisionTreeClassifier(max_depth=3)."
            )
        cls = _check_estimator_class(_resolve(path, text), path, text)
        if node.args:
            raise ExpressionError(
                f"{text}: give parameters by name, as scikit-learn prints them, e.g. "
                "RandomForestClassifier(n_estimators=200)."
            )
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise ExpressionError(f"{text}: **kwargs is not supported; name each parameter.")
            kwargs[kw.arg] = _node(kw.value, text)
        return EstimatorCall(cls, path, kwargs)
    if isinstance(node, (ast.List, ast.Tuple)) and any(isinstance(e, ast.Call) for e in ast.walk(node)):
        items = [_node(e, text) for e in node.elts]  # e.g. Pipeline steps
        return items if isinstance(node, ast.List) else tuple(items)
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise ExpressionError(
            f"{text}: {ast.unparse(node)} is not a literal (numbers, strings, tuples, lists, None, "
            "True/False) nor an estimator call; build the estimator in Python and pass it with "
            "--estimator-file."
        ) from None


def parse_estimator(text: str) -> EstimatorCall:
    """Check ``text`` and return the call it describes; nothing is called.

    ``"pkg.Cls"`` and ``"pkg.Cls(a=1, inner=pkg.Other(b=2))"`` are accepted when every class is a
    :class:`~sklearn.base.BaseEstimator` subclass and every other value a literal.

    Raises
    ------
    ExpressionError
        For a syntax error, a name that is not an importable estimator class, a positional
        argument, or a value that is neither a literal nor an estimator call.

    Examples
    --------
    >>> call = parse_estimator("sklearn.linear_model.LogisticRegression(C=0.5)")
    >>> call.cls.__name__, call.kwargs
    ('LogisticRegression', {'C': 0.5})
    >>> parse_estimator("subprocess.Popen(args=['touch', 'x'])")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    skmip.utils.estimator_expr.ExpressionError: subprocess.Popen(args=['touch', 'x']): subprocess.Popen is a class Popen, not a scikit-learn estimator ...
    """
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        raise ExpressionError(
            f"{text}: not a dotted import path such as sklearn.ensemble.RandomForestClassifier "
            "or sklearn.ensemble.RandomForestClassifier(max_depth=5)."
        ) from None
    if isinstance(node, ast.Attribute):
        node = ast.Call(func=node, args=[], keywords=[])
    if not isinstance(node, ast.Call):
        raise ExpressionError(
            f"{text}: not a dotted import path such as sklearn.ensemble.RandomForestClassifier."
        )
    return _node(node, text)


def build(value):
    """Construct what :func:`parse_estimator` checked: a new object at every call."""
    if isinstance(value, EstimatorCall):
        return value.cls(**{k: build(v) for k, v in value.kwargs.items()})
    if isinstance(value, list):
        return [build(v) for v in value]
    if isinstance(value, tuple):
        return tuple(build(v) for v in value)
    return copy.deepcopy(value)  # a literal dict is not shared between estimators


def describe(value) -> str:
    """How a report names a call: ``"Bagging(estimator=DecisionTree(max_depth=3))"``."""
    if isinstance(value, EstimatorCall):
        args = ", ".join(f"{k}={describe(v)}" for k, v in value.kwargs.items())
        return f"{value.cls.__name__}({args})" if args else value.cls.__name__
    if isinstance(value, list):
        return "[" + ", ".join(describe(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(describe(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return repr(value)

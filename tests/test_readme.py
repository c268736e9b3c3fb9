"""The README's Python snippets run as written, in order (one namespace, like a reader's session)."""

import re
import warnings
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.docs_example
def test_readme_snippets_run():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 5
    namespace = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, code in enumerate(blocks):
            try:
                exec(compile(code, f"README.md python block {i + 1}", "exec"), namespace)
            except Exception as exc:  # pragma: no cover - the failure message is the point
                pytest.fail(f"README python block {i + 1} failed: {type(exc).__name__}: {exc}")
    assert namespace["private"].coupling_eta_upper_ <= 0.1
    assert namespace["X_synthetic"].shape == (1000, namespace["X_tr"].shape[1])

"""Neural networks with skorch: the optional torch leaf of skmip.

Nothing outside this package imports torch, skorch or opacus; importing it without them
raises an :class:`ImportError` that names the extra to install.

Contents
--------
- :class:`NeuralNetClassifier`, :class:`NeuralNetRegressor` — skorch nets with a
  ``random_state`` that seeds module initialisation and data order without touching the
  caller's global torch RNG (:mod:`skmip.nn.seeded_nets`).
- :class:`MLPModule` — a small fully connected torch module for tabular data.
- :class:`SkorchAdapter` — fitted net <-> flat parameter vector, for
  :class:`skmip.defend.MIPNoiseWrapper` and the audits (:mod:`skmip.nn.params`).
- :func:`fit_ensemble`, :func:`ensemble_vectors` — many copies of one net trained in one
  batched ``torch.func.vmap`` run, matching sequential fits (:mod:`skmip.nn.ensemble`);
  ``SeededNetMixin.fit_subsets`` is the hook for split fits and shadow pools.
- :func:`per_sample_gradients`, :func:`sgd_step_gradients`, :func:`glir_audit` —
  per-example gradients with ``torch.func`` and GLiR audits of one or k SGD steps
  (Leemann et al., Algorithm 1) (:mod:`skmip.nn.grads`).
- :class:`DPNeuralNetClassifier`, :class:`DPSGDLogisticRegression` — DP-SGD (Opacus'
  clipping), Poisson sampling and a rigorous PLD accountant (``dp_accounting``), noise and
  batches from full OS entropy or ``os.urandom``; ``privacy="gmip"`` calibrates the noise
  to mu-GMIP (Leemann et al.) instead (:mod:`skmip.nn.dpsgd`).
- :class:`PrivateHeadClassifier` — a linear softmax head solved exactly on a frozen
  (public) torch backbone: a GLM on fixed features, so :class:`skmip.defend.MIPNoiseWrapper`
  noises only the head, calibrated by the coupling bound (:mod:`skmip.nn.head`).
"""

from __future__ import annotations

import importlib.util

# find_spec, not import: opacus takes seconds to import and is only needed by fit.
_MISSING = [
    name for name in ("torch", "skorch", "opacus", "dp_accounting") if importlib.util.find_spec(name) is None
]
if _MISSING:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        f"skmip.nn needs {', '.join(_MISSING)}, which is not installed. Install the optional "
        'extra with: pip install "skmip[torch]"'
    )
del _MISSING

from skmip.nn.dpsgd import DPNeuralNetClassifier, DPSGDLogisticRegression  # noqa: E402
from skmip.nn.ensemble import ensemble_vectors, fit_ensemble  # noqa: E402
from skmip.nn.grads import glir_audit, per_sample_gradients, sgd_step_gradients  # noqa: E402
from skmip.nn.head import PrivateHeadClassifier  # noqa: E402
from skmip.nn.modules import MLPModule  # noqa: E402
from skmip.nn.params import SkorchAdapter  # noqa: E402
from skmip.nn.seeded_nets import NeuralNetClassifier, NeuralNetRegressor, SeededNetMixin  # noqa: E402

__all__ = [
    "DPNeuralNetClassifier",
    "DPSGDLogisticRegression",
    "MLPModule",
    "NeuralNetClassifier",
    "NeuralNetRegressor",
    "PrivateHeadClassifier",
    "SeededNetMixin",
    "SkorchAdapter",
    "ensemble_vectors",
    "fit_ensemble",
    "glir_audit",
    "per_sample_gradients",
    "sgd_step_gradients",
]

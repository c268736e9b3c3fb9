"""Old module paths (skmip 0.1) keep importing, with a FutureWarning naming the new one.

The 0.2 layout groups the package by pillar (docs/design.md). The public top-level names
(``from skmip import MIPNoiseWrapper``) never moved; a submodule path such as
``skmip.moments`` resolves here to the module that now holds its code, so old imports,
pickles and ``mock.patch`` targets keep working until 0.3 removes this table.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

MOVED = {
    "skmip._random": "skmip.utils.rng",
    "skmip._rows": "skmip.utils.rows",
    "skmip._threads": "skmip.utils.threads",
    "skmip._validation": "skmip.utils.validation",
    "skmip.attacks": "skmip.audit.attacks",
    "skmip.attacks._base": "skmip.audit.attacks._base",
    "skmip.attacks.bayes": "skmip.audit.attacks.bayes",
    "skmip.attacks.exact_audit": "skmip.audit.attacks.exact_audit",
    "skmip.attacks.exact_audit_suite": "skmip.audit.attacks.exact_audit_suite",
    "skmip.attacks.glir": "skmip.audit.attacks.glir",
    "skmip.attacks.lira": "skmip.audit.attacks.lira",
    "skmip.attacks.loss": "skmip.audit.attacks.loss",
    "skmip.attacks.rmia": "skmip.audit.attacks.rmia",
    "skmip.attacks.suite": "skmip.audit.attacks.suite",
    "skmip.attacks.synthetic": "skmip.audit.attacks.synthetic",
    "skmip.audit_plan": "skmip.app.audit_plan",
    "skmip.cli": "skmip.app.cli",
    "skmip.display": "skmip.audit.display",
    "skmip.domains": "skmip.release.domains",
    "skmip.dp_baselines": "skmip.release.dp_baselines",
    "skmip.dp_logistic": "skmip.defend.dp_logistic",
    "skmip.estimator_expr": "skmip.utils.estimator_expr",
    "skmip.game": "skmip.audit.game",
    "skmip.marginals": "skmip.release.marginals",
    "skmip.mechanisms": "skmip.calibration.noise_laws",
    "skmip.metrics": "skmip.audit.metrics",
    "skmip.moments": "skmip.calibration.spread.moments",
    "skmip.nn.seeding": "skmip.nn.seeded_nets",
    "skmip.nn.seeds": "skmip.nn.fit_randomness",
    "skmip.os_random": "skmip.utils.os_random",
    "skmip.report": "skmip.app.report",
    "skmip.scoring": "skmip.audit.scoring",
    "skmip.sensitivity": "skmip.calibration.swap",
    "skmip.sensitivity._common": "skmip.calibration.swap._common",
    "skmip.sensitivity._result": "skmip.calibration.swap._result",
    "skmip.sensitivity.batched": "skmip.calibration.swap.batched",
    "skmip.sensitivity.certify": "skmip.calibration.swap.certify",
    "skmip.sensitivity.compact": "skmip.calibration.swap.compact",
    "skmip.sensitivity.design": "skmip.calibration.noise_shape",
    "skmip.sensitivity.estimate": "skmip.calibration.swap.estimate",
    "skmip.sensitivity.exact": "skmip.calibration.swap.exact",
    "skmip.sensitivity.glm_losses": "skmip.calibration.losses.glm",
    "skmip.sensitivity.influence": "skmip.calibration.swap.influence",
    "skmip.sensitivity.losses": "skmip.calibration.losses.registry",
    "skmip.sensitivity.multinomial": "skmip.calibration.swap.multinomial",
    "skmip.sensitivity.newton": "skmip.calibration.swap.newton",
    "skmip.sensitivity.noise_factor": "skmip.calibration.spread.noise_factor",
    "skmip.sensitivity.polish": "skmip.calibration.swap.polish",
    "skmip.sensitivity.refit": "skmip.calibration.swap.refit",
    "skmip.sensitivity.rounds": "skmip.calibration.swap.rounds",
    "skmip.sensitivity.stacks": "skmip.calibration.swap.stacks",
    "skmip.sensitivity.statistic": "skmip.calibration.swap.closed_form",
    "skmip.sensitivity.svm_losses": "skmip.calibration.losses.svm",
    "skmip.sensitivity.whitening": "skmip.calibration.swap.whitening",
    "skmip.statistic": "skmip.release.statistic",
    "skmip.subsampled": "skmip.defend.subsampled",
    "skmip.synth_audit": "skmip.audit.synth_audit",
    "skmip.synth_cli": "skmip.app.synth_cli",
    "skmip.synthetic": "skmip.release.gaussian",
    "skmip.tabular": "skmip.release.tabular",
    "skmip.training_check": "skmip.audit.training_check",
    "skmip.wrappers": "skmip.defend",
    "skmip.wrappers._delegate": "skmip.defend._delegate",
    "skmip.wrappers._noise": "skmip.calibration.routes",
    "skmip.wrappers._preprocessing": "skmip.defend.preprocessing",
    "skmip.wrappers.mip_noise": "skmip.defend.mip_noise",
    "skmip.wrappers.mip_noise_cv": "skmip.defend.mip_noise_cv",
    "skmip.wrappers.synthetic_route": "skmip.defend.synthetic_route",
}


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path in :data:`MOVED` and loads it as the module at its new path."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in MOVED:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return None  # a placeholder module; exec_module swaps in the real one

    def exec_module(self, module):
        old = module.__name__
        new = MOVED[old]
        warnings.warn(
            f"{old} moved to {new} in skmip 0.2; import it from there "
            "(the old path goes in 0.3).",
            FutureWarning,
            stacklevel=2,
        )
        # The import system returns whatever sys.modules holds under the old name.
        sys.modules[old] = importlib.import_module(new)


def install():
    """Put the finder first on ``sys.meta_path``, once.

    First, because an old submodule path such as ``skmip.attacks.bayes`` would otherwise be
    found by the path finder under its (moved) parent's ``__path__`` and loaded a second time,
    as a separate module.
    """
    if not any(isinstance(f, _MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _MovedModuleFinder())

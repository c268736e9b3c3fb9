"""Every closed-form result of the papers skmip implements, as vectorised functions.

Pure math: numbers and arrays in, numbers and arrays out (numpy/scipy only). Each function
cites its theorem and equation; this package is the single source of every formula the
estimators and the scorer use. One submodule per paper or idea:

- :mod:`skmip.bounds.mip` — Izzo et al. (MIP noise constant, DP <-> MIP, TPR bound).
- :mod:`skmip.bounds.empirical` — Clopper--Pearson intervals, empirical DP epsilon, eta-MIP ROC check.
- :mod:`skmip.bounds.subsampling` — Thudi et al. (MI positive accuracy under subsampling + DP, unlearning).
- :mod:`skmip.bounds.coupling` — the coupling bound on the MIP level of Gaussian noise, with confidence
  (its parts: :mod:`~skmip.bounds.coupling_draws`, the per-draw values and their Jensen bounds;
  :mod:`~skmip.bounds.bernstein`, Maurer & Pontil's terms; :mod:`~skmip.bounds.coupling_scale`,
  the calibrated noise scale).
- :mod:`skmip.bounds.gmip` — Leemann et al. (mu-GMIP of noisy SGD), over
  :mod:`skmip.bounds.gdp` (the Gaussian trade-off, mu-GDP's composition and conversions).
- :mod:`skmip.bounds.betting` — confidence bounds on bounded means by betting (Waudby-Smith & Ramdas).
- :mod:`skmip.bounds.accounting` — rigorous DP-SGD accounting (privacy loss distributions).
- :mod:`skmip.bounds.one_run` — one-run auditing (Steinke et al. 2023; Mahloujifar et al. 2025):
  which (epsilon, delta) claims a canary guessing game refutes.

Neighbouring relations (each docstring says which one its theorem needs):

- **replace-one** (same size, one record replaced): Izzo et al.'s Theorem 4
  (:func:`dp_to_mip`, :func:`mip_to_dp_epsilon`), :func:`profile_to_mip`, f-MIP/GMIP and
  the GDP side of Leemann et al. (:mod:`skmip.bounds.gmip`), :func:`dpsgd_eta`;
- **add/remove-one**: Thudi et al.'s Theorem 3.3 and Section 5
  (:mod:`skmip.bounds.subsampling`), :func:`dp_epsilon_lower_bound`;
- **either, as asked**: :func:`dpsgd_epsilon`, :func:`dpsgd_delta`,
  :func:`dpsgd_noise_multiplier`; :func:`gdp_to_dp` and :func:`dp_to_gdp_mu` convert within
  one relation;
- **no DP at all**: the MIP noise constant (Corollary 10) and the coupling bound speak of
  Definition 1 directly.
"""

from skmip.bounds.mip import *  # noqa: F401,F403
from skmip.bounds.mip import __all__ as _mip_all

__all__ = list(_mip_all)

from skmip.bounds.subsampling import *  # noqa: E402,F401,F403
from skmip.bounds.subsampling import __all__ as _subsampling_all  # noqa: E402

__all__ += list(_subsampling_all)
from skmip.bounds.gmip import *  # noqa: E402,F401,F403
from skmip.bounds.gmip import __all__ as _gmip_all  # noqa: E402

__all__ += list(_gmip_all)

from skmip.bounds.coupling import *  # noqa: E402,F401,F403
from skmip.bounds.coupling import __all__ as _coupling_all  # noqa: E402

__all__ += list(_coupling_all)

from skmip.bounds.empirical import *  # noqa: E402,F401,F403
from skmip.bounds.empirical import __all__ as _empirical_all  # noqa: E402

__all__ += list(_empirical_all)

from skmip.bounds.betting import betting_mean_upper  # noqa: E402,F401

__all__ += ["betting_mean_upper"]

from skmip.bounds.accounting import *  # noqa: E402,F401,F403
from skmip.bounds.accounting import __all__ as _accounting_all  # noqa: E402

__all__ += list(_accounting_all)
from skmip.bounds.one_run import *  # noqa: E402,F401,F403
from skmip.bounds.one_run import __all__ as _one_run_all  # noqa: E402
__all__ += list(_one_run_all)

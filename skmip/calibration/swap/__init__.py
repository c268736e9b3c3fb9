r"""Swap sensitivity: how far one row moves a learner's output, for the coupling bound.

The coupling bound (:mod:`skmip.bounds.coupling`) needs, for every target row :math:`x^*` of
the dataset :math:`\mathcal{D}`, the law of the whitened swap distance

.. math::

    \delta = \big\|\big(\mathcal{A}(D_{out}) - \mathcal{A}(D_{out} - \{e\} + \{x^*\})\big) / w\big\|,

with :math:`D_{out}` uniform among the :math:`k`-subsets of :math:`\mathcal{D}\setminus\{x^*\}`
and :math:`e` uniform in :math:`D_{out}`. :func:`estimate_swap_deltas` draws it.

**Design of the draws.** A *round* draws one permutation :math:`\pi` of the :math:`n` rows,
cuts it into :math:`r = \lceil n/(n-k) \rceil` held-out blocks of :math:`h = n-k` consecutive
positions (the last one wraps around), and fits :math:`\mathcal{A}` on each complement
:math:`H_j = \mathcal{D} \setminus B_j` (:math:`k` rows). The row at position :math:`p` is a
target of block :math:`\lfloor p/h \rfloor`. Given its position, the other positions hold a
uniformly random permutation of :math:`\mathcal{D}\setminus\{x^*\}`, so its :math:`H_j` is
uniform among the :math:`k`-subsets without :math:`x^*`: exactly the coupling's
:math:`D_{out}`. Every row gets one draw per round, rounds are independent, and a round
costs :math:`r` fits (2 when :math:`k = n/2`).

**Engines.**

``"refit"``
    Any estimator: :math:`\mathcal{A}(D_{in})` is refitted for ``pairs_per_target`` random
    :math:`e` per target and round. Exact; costs :math:`n \times` ``pairs_per_target`` fits
    per round.
``"newton"``
    Generalised-linear losses (each row's loss a function of one margin
    :math:`\tilde x_i^\top\theta`: binary :class:`~sklearn.linear_model.LogisticRegression`,
    :class:`~sklearn.linear_model.Ridge`, :class:`~sklearn.linear_model.LinearRegression`,
    one block per output; ``PoissonRegressor``, ``GammaRegressor``, ``TweedieRegressor``;
    ``LinearSVC`` with the squared hinge, one block per class) and losses of one margin per
    class (multinomial ``LogisticRegression``: :mod:`.multinomial`, a :math:`K`-dimensional
    equation per pair and a rank-:math:`K` removal of :math:`e`). Everything but the target is expanded to second order at
    :math:`\mathcal{A}(H)`, with :math:`e`'s gradient and curvature removed exactly; the
    target's loss is kept exact, which leaves one scalar equation per pair (see
    ``_pair_coefficients``). Exact for least squares; for logistic regression it is what
    keeps the error small on the outlying targets that decide the maximum (a plain Newton
    step overshoots there, because a badly fitted target has almost no curvature at
    :math:`\mathcal{A}(H)`). For the most exposed targets of each fit (``refine``: 5%, at most
    4) the target's addition is solved to convergence (damped Newton or chord steps) and
    only :math:`e`'s removal is linearised: these targets decide the maximum over targets,
    and on ``load_breast_cancer`` this brings the calibrated noise within 0.1% of the value
    exact refits give (``benchmarks/bench_influence.py``). A round costs two fits (by
    warm-started steps to the exact minimiser, :class:`~skmip.calibration.swap.polish.MinimiserFits`)
    plus :math:`O(n p D)` arithmetic for :math:`p` sampled :math:`e` per target: linear in
    :math:`n`.
``"influence"``
    The first-order influence function :math:`\mathcal{A}(H - e + x^*) - \mathcal{A}(H)
    \approx \mathbf{H}^{-1}(\nabla\ell_e - \nabla\ell_{x^*})` with the regularised Hessian of
    the objective on :math:`H` (for any registered smooth loss; ``"auto"`` uses it only for
    losses that declare neither form).
``"closed_form"``
    A :class:`~skmip.release.statistic.Statistic` that is a mean of per-row features
    :math:`\phi(x)` (column means, second moments, marginal counts): the swap moves it by
    exactly :math:`(\phi(x^*) - \phi(e))/k` and :math:`e` is uniform on
    :math:`\mathcal{D}\setminus\{x^*\}`, so the expectation is a finite sum
    (:func:`statistic_swap_deltas`, :func:`marginal_swap_deltas`): exact, no confidence term.
``"exact"``
    For tiny problems (:math:`\binom{n}{k} \le 20\,000`): fits every :math:`k`-subset and
    lists every :math:`(D_{out}, e)` pair; the means over the result are the exact
    expectations, and no confidence statement is needed.

**Keeping many pairs at the cost of a few numbers.** The influence engines draw ``p``
values of :math:`e` per target and round (8 by default; every :math:`e \in H_j` with
``pairs_per_target="all"``) and store, per target and round, the means of ``summary_size``
consecutive blocks of their sorted values. Since :math:`t \mapsto 2\Phi(t/2s) - 1` is concave on :math:`t \ge 0`, Jensen's
inequality makes the average of the TV over each block at most the TV of the block's mean:
the stored summary *upper-bounds* the round's exact average over :math:`e` for every noise
scale at once, and is exact where the TV is linear (small distances).

Privacy hygiene: the result holds per-row sensitivities of the private data. It is an
intermediate for calibration, never something to release.

References
----------
Izzo et al., "Provable Membership Inference Privacy", Definition 1 and Proposition 2.
Koh, P. W., Liang, P. (2017). "Understanding Black-box Predictions via Influence
Functions", ICML (the first-order approximation).
"""

from skmip.calibration.swap._result import SwapDeltas
from skmip.calibration.swap.estimate import estimate_swap_deltas
from skmip.utils.deprecation import moved_names
from skmip.calibration.losses.registry import (
    GLMTerms,
    LossBlock,
    MultiMarginTerms,
    SmoothLoss,
    get_smooth_loss,
    register_smooth_loss,
)
from skmip.calibration.swap.polish import polish_to_minimiser
from skmip.calibration.swap.closed_form import marginal_swap_deltas, statistic_swap_deltas

__all__ = [
    "SwapDeltas",
    "estimate_swap_deltas",
    "polish_to_minimiser",
    "statistic_swap_deltas",
    "marginal_swap_deltas",
    "LossBlock",
    "GLMTerms",
    "MultiMarginTerms",
    "SmoothLoss",
    "register_smooth_loss",
    "get_smooth_loss",
]

# Names skmip 0.1's ``skmip.sensitivity`` exported that live elsewhere now (a re-export here
# would close an import cycle: both modules build on this package's polish and rounds).
__getattr__ = moved_names("skmip.calibration.swap", {
    "estimate_noise_factor": "skmip.calibration.spread.noise_factor",
    "design_noise_factor": "skmip.calibration.noise_shape",
    "design_target_shares": "skmip.calibration.noise_shape",
})

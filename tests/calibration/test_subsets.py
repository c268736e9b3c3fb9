"""The subsets both spread estimators share (skmip.calibration.spread.subsets)."""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression, Ridge

from skmip.calibration.spread.moments import estimate_sigma
from skmip.calibration.spread.noise_factor import estimate_noise_factor
from skmip.calibration.spread.subsets import (
    N_CHUNKS,
    RandomSubsets,
    check_vector,
    draw_split_seeds,
    rows_by_choice,
    rows_by_permutation,
)


@pytest.mark.parametrize("draw", [rows_by_choice, rows_by_permutation])
def test_each_subset_is_a_function_of_its_seed(draw):
    subsets = RandomSubsets(draw_split_seeds(0, 40), 30, 12, draw, "subset")
    rows = [subsets.rows(i) for i in range(len(subsets))]
    assert all(r.size == 12 and np.all(np.diff(r) > 0) and r[0] >= 0 and r[-1] < 30 for r in rows)
    np.testing.assert_array_equal(rows[7], draw(subsets.seeds[7], 30, 12))
    chunks = subsets.chunks()
    assert len(chunks) == N_CHUNKS and np.array_equal(np.concatenate(chunks), np.arange(40))


def test_both_laws_draw_uniform_subsets():
    # Each row's inclusion count over B subsets of k of n is Binomial(B, k/n) under a uniform
    # law; 5 standard deviations bound every one of the n counts (union: < 1e-4 to fail).
    B, n, k = 4000, 10, 4
    for draw in (rows_by_choice, rows_by_permutation):
        counts = np.bincount(np.concatenate([draw(s, n, k) for s in draw_split_seeds(1, B)]), minlength=n)
        sd = np.sqrt(B * k / n * (1 - k / n))
        assert np.all(np.abs(counts - B * k / n) < 5 * sd)


def test_check_vector_names_the_subsets():
    first = check_vector("owner", "subset", 0, 4, np.zeros(3), None, "the shape")
    assert first == (0, 3)
    with pytest.raises(ValueError, match=r"owner: subset 2 of 4 gave 2 parameters but subset 0 gave 3\. the shape"):
        check_vector("owner", "subset", 2, 4, np.zeros(2), first, "the shape")
    with pytest.raises(ValueError, match=r"subset 1 of 4 gave NaN or infinite parameters"):
        check_vector("owner", "subset", 1, 4, np.array([0.0, np.inf, 1.0]), first, "the shape")


def test_noise_factor_is_the_same_for_every_n_jobs_in_fresh_workers():
    # n_jobs=2 runs the chunks in loky worker processes, which import skmip through the
    # spread module (an import circle once made them fail); the fixed chunks make the
    # factor bit-identical.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = X @ [1.0, -1.0, 0.5] + rng.normal(size=60)
    one = estimate_noise_factor(Ridge(), X, y, n_subsets=32, random_state=0)
    two = estimate_noise_factor(Ridge(), X, y, n_subsets=32, random_state=0, n_jobs=2)
    assert one.tobytes() == two.tobytes()


def test_noise_factor_checks_its_data_and_reports_progress(capsys):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 2))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match="estimate_noise_factor: X contains 1 NaN or infinite"):
        estimate_noise_factor(Ridge(), np.where(np.arange(80).reshape(40, 2) == 5, np.nan, X), y, n_subsets=4)
    with pytest.raises(ValueError, match="estimate_noise_factor: X has 40 rows but y has 39"):
        estimate_noise_factor(Ridge(), X, y[:-1], n_subsets=4)
    estimate_noise_factor(LogisticRegression(), X, y, n_subsets=4, random_state=0, verbose=1)
    assert "estimate_noise_factor: 4/4 subset fits" in capsys.readouterr().out


def test_sigma_and_noise_factor_share_the_subset_machinery_but_keep_their_laws():
    # The same random_state gives each estimator its own (0.2.0) subsets: sigma's splits
    # are rows_by_choice of its seeds, which the mean of y over each split reproduces.
    y = np.arange(50.0)
    X = np.zeros((50, 1))
    from sklearn.dummy import DummyRegressor

    sigma, mean = estimate_sigma(DummyRegressor(), X, y, n_subsets=8, params=["constant_"], random_state=3,
                                 return_mean=True)
    means = np.array([y[rows_by_choice(s, 50, 25)].mean() for s in draw_split_seeds(3, 8)])
    np.testing.assert_allclose(mean, [means.mean()], rtol=1e-12)
    np.testing.assert_allclose(sigma, [means.std()], rtol=1e-12)


@pytest.mark.parametrize("module", ["skmip.calibration.spread.noise_factor", "skmip.calibration.noise_shape",
                                    "skmip.calibration.spread.moments"])
def test_the_spread_modules_import_first_in_a_fresh_interpreter(module):
    # The swap package re-exports them; entering skmip through them must not meet it (or the
    # loss registry it imports) half-initialised: a loky worker does exactly that.
    import os
    import subprocess
    import sys
    from pathlib import Path

    import skmip

    root = str(Path(skmip.__file__).parent.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, timeout=120,
                          env=env)
    assert done.returncode == 0, done.stderr

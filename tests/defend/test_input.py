"""What MIPNoiseWrapper accepts as data (skmip.defend._input)."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import DataConversionWarning
from sklearn.linear_model import LogisticRegression

from skmip import MIPNoiseWrapper


def test_a_column_vector_y_is_raveled_with_scikit_learns_warning():
    """scikit-learn's check_supervised_y_2d: y of shape (n, 1) for a single-output learner
    used to reach the multinomial loss as a column and fail to broadcast."""
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 20)
    X = rng.normal(size=(60, 2)) + y[:, None]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        flat = MIPNoiseWrapper(LogisticRegression(), eta=0.4, n_rounds=50, random_state=0).fit(X, y)
    with pytest.warns(DataConversionWarning):
        column = MIPNoiseWrapper(LogisticRegression(), eta=0.4, n_rounds=50, random_state=0).fit(X, y[:, None])
    np.testing.assert_array_equal(column.estimator_.coef_, flat.estimator_.coef_)

"""Tune eta with GridSearchCV, scoring both utility and measured membership leakage.

make_mi_scorer() plays a small LiRA membership game on each validation fold (greater is
better: it returns minus the attack AUC). PrivacyUtilityDisplay plots the trade-off; the
figure goes to a temporary directory or to $SKMIP_EXAMPLES_OUT.
"""
import os
import tempfile
import warnings

import matplotlib

matplotlib.use("Agg")
from sklearn.datasets import load_breast_cancer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.preprocessing import StandardScaler

from skmip import MIPNoiseWrapper, PrivacyUtilityDisplay, PrivacyWarning, make_mi_scorer
from skmip.calibration.routes import MomentsRoute

X, y = load_breast_cancer(return_X_y=True)
X = StandardScaler().fit_transform(X)
# Corollary 10 ("moments") noise is large on 380 rows; method="coupling" needs far less
# (see plot_mip_wrapper.py) but costs more fits than a gallery example should.
wrapper = MIPNoiseWrapper(LogisticRegression(C=0.1), method=MomentsRoute(n_subsets=16))
scoring = {"accuracy": "accuracy", "mi": make_mi_scorer(attack="lira", n_models=4, random_state=0)}
search = GridSearchCV(wrapper, {"eta": [0.05, 0.2, 0.45]}, scoring=scoring, refit="accuracy", cv=3)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", PrivacyWarning)  # the scorer's fixed seed; demo only
    search.fit(X, y)
for eta, acc, mi in zip(search.cv_results_["param_eta"], search.cv_results_["mean_test_accuracy"],
                        search.cv_results_["mean_test_mi"]):
    print(f"eta={eta:<5} accuracy={acc:.3f} LiRA AUC={-mi:.3f}")
disp = PrivacyUtilityDisplay.from_cv_results(search.cv_results_, privacy="mi", utility="accuracy")
out = os.environ.get("SKMIP_EXAMPLES_OUT") or tempfile.mkdtemp()
disp.figure_.savefig(os.path.join(out, "privacy_utility.png"))
print("best eta by accuracy:", search.best_params_["eta"], "- figure in", out)

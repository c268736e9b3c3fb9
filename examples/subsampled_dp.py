"""SubsampledDPClassifier: a promised bound on an attacker's positive accuracy (Thudi et al.).

Poisson subsampling at rate T plus (eps, delta)-DP training bounds P(x* in D | attack says
member) by Theorem 3.3. With target_bound=0.881 the classifier picks the largest epsilon that
keeps that bound; GridSearchCV then chooses the sampling rate T (train_size) with the best accuracy.
"""
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import GridSearchCV

from skmip import DPLogisticRegression, SubsampledDPClassifier

X, y = load_breast_cancer(return_X_y=True)
X = (X - X.mean(0)) / X.std(0)  # statistics of the pool, not of the private training draw
clf = SubsampledDPClassifier(DPLogisticRegression(data_norm=5.0), target_bound=0.881)
# Rates must stay below 0.881: at epsilon = 0 the bound is T itself (Section 3.4).
search = GridSearchCV(clf, {"train_size": [0.1, 0.3, 0.6, 0.85]}, cv=3)
search.fit(X, y)  # fresh OS entropy for every subsample and noise draw
for rate, acc in zip(search.cv_results_["param_train_size"],
                     search.cv_results_["mean_test_score"]):
    print(f"train_size={rate:<4} accuracy={acc:.3f}")
best = search.best_estimator_
print(f"best rate {best.train_size}: epsilon={best.epsilon_:.2f}, "
      f"positive-accuracy bound={best.positive_accuracy_bound_:.3f} (Theorem 3.3, delta={best.delta_:g})")

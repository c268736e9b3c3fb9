"""The options of the ``skmip`` command: its argument parser, grouped as ``--help`` lists them.

:func:`build_parser` is what :func:`skmip.app.cli.main` parses the command line with: the data
(a bundled dataset or a CSV file), the estimators and defenses to audit, the promises, the
membership game, a synthesizer audit instead of a model's, and where the results go.
"""

from __future__ import annotations

import argparse

from skmip.app.audit_plan import DEFENSES
from skmip.app.fitted_cli import add_fitted_options

__all__ = ["build_parser", "DEFAULT_DATASET"]

DEFAULT_DATASET = "german_credit"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="skmip",
        description=(
            "Audit a model and its membership-inference-private versions on real data: "
            "utility, the strongest attack's success (named) and the promised bound, side by side. "
            "With no --estimator: a neural network that leaks next to its GMIP noisy-SGD "
            "version, and a logistic regression next to its coupling-calibrated MIP version."
        ),
    )
    _add_data_options(p)
    _add_model_options(p)
    _add_promise_options(p)
    _add_game_options(p)
    _add_synthesizer_options(p)
    add_fitted_options(p)
    _add_output_options(p)
    return p


def _add_data_options(p: argparse.ArgumentParser) -> None:
    """What data: a bundled dataset or a CSV file, and how its columns are read."""
    from skmip.datasets import DATASETS

    p.add_argument("--dataset", default=DEFAULT_DATASET,
                   help=f"a bundled dataset ({', '.join(DATASETS)}) or a path to a CSV file with a "
                        f"header (then --target is required; delimiter ',', ';' or tab, sniffed; a "
                        f"UTF-8 byte-order mark is dropped). Default: {DEFAULT_DATASET}.")
    p.add_argument("--target", help="label column of a CSV dataset")
    p.add_argument("--categorical", action="append", metavar="COLUMN",
                   help="CSV column of categories: one-hot encoded with the sorted values the file "
                        "holds. Repeat for several.")
    p.add_argument("--categories", action="append", metavar="COLUMN=A,B,...",
                   help="CSV column of categories with its public category list (one-hot; a value "
                        "outside the list is an error). Repeat for several.")
    p.add_argument("--missing", choices=("fill", "keep"), default="fill",
                   help="missing numeric cells of a CSV: fill (after standardising, set to 0, the "
                        "column's mean over the file, and add a 0/1 column COLUMN=missing) or keep "
                        "(pass NaN to the estimator, e.g. a Pipeline with SimpleImputer from "
                        "--estimator-file, so the imputation is part of what is audited). Default: fill.")


def _add_model_options(p: argparse.ArgumentParser) -> None:
    """What to audit: the estimators and the defenses tried on each."""
    p.add_argument("--estimator", action="append", metavar="NAME",
                   help="model to audit; repeat for several. An alias: logreg (LogisticRegression, "
                        "C=0.1) or mlp (one hidden layer of 64: a seeded skorch net when the torch "
                        "extra is installed, else scikit-learn's MLPClassifier); or an import path, "
                        "with parameters as scikit-learn prints them: "
                        "'sklearn.ensemble.HistGradientBoostingClassifier(max_iter=200)'. "
                        "The text is parsed, never evaluated: only subclasses of "
                        "sklearn.base.BaseEstimator are constructed (checked on the class before "
                        "any call), with literal arguments or nested estimator calls, and "
                        "imported only from installed packages (never from a file in the working "
                        "directory); a parameter that names a path, a cache or a file (Pipeline "
                        "memory=...) is refused. Default: mlp and logreg with the defenses that fix them.")
    p.add_argument("--param", action="append", metavar="NAME=VALUE",
                   help="parameter of every --estimator (a Python literal; other text is a string), "
                        "e.g. --param max_iter=200. Repeat for several.")
    p.add_argument("--estimator-file", action="append", metavar="MODEL.pkl",
                   help="a pickled unfitted classifier or Pipeline (pickle.dump or joblib.dump) to "
                        "audit. Unpickling runs code from the file: only use files you trust "
                        "(only classes of installed packages and array reconstructors are "
                        "unpickled, and the command says so as it loads the file).")
    p.add_argument("--defense", choices=DEFENSES, action="append",
                   help="defense(s) to audit; repeat for several: mip (MIPNoiseWrapper), "
                        "subsampled-dp (SubsampledDPClassifier), dp-sgd and gmip (noisy SGD of a "
                        "torch network). The baseline (none) is always shown. Default: every "
                        "defense that applies to each estimator; the others are listed with the reason.")


def _wrapper_default(name):
    """MIPNoiseWrapper's default for ``name``, read from its signature (never restated here)."""
    import inspect

    from skmip import MIPNoiseWrapper

    return inspect.signature(MIPNoiseWrapper).parameters[name].default


def _add_promise_options(p: argparse.ArgumentParser) -> None:
    """The promises of the defenses (eta, mu, epsilon, bound) and how MIP calibrates."""
    p.add_argument("--eta", type=float, action="append",
                   help="eta of the MIP defense; repeat for several. Default: 0.1 and 0.3 "
                        "(0.3 in the no-argument run).")
    p.add_argument("--mip-method", choices=("auto", "coupling", "noisy_gradient", "moments"), default="auto",
                   help="noise calibration of MIPNoiseWrapper: coupling (tight; binary logistic "
                        "regression and GLMs), noisy_gradient (clipped noisy gradients for the "
                        "GLMs, accounted by PLD), moments (Izzo et al. Cor. 10, any model) or auto "
                        "(chosen from the data's shape as the wrapper chooses it: "
                        "docs/pipelines.md). Default: auto.")
    p.add_argument("--n-rounds", type=int, default=150,
                   help="rounds of swap distances for the coupling calibration (the wrapper's "
                        f"default for a release is {_wrapper_default('n_rounds')}; fewer rounds "
                        "need more noise and only allow larger eta). Default: 150.")
    p.add_argument("--mu", type=float, default=1.0,
                   help="mu of the GMIP noisy-SGD defense (Leemann et al.). Default: 1.")
    p.add_argument("--epsilon", type=float, default=2.0,
                   help="epsilon of the DP-SGD defense (delta = 1/(10 n)). Default: 2.")
    p.add_argument("--bound", type=float, default=0.881,
                   help="target positive-accuracy bound of the subsampled-DP defense "
                        "(Thudi et al. Thm 3.3). Default: 0.881.")
    p.add_argument("--sampling-rate", type=float, default=0.5,
                   help="sampling rate of the subsampled-DP defense. Default: 0.5.")


def _add_game_options(p: argparse.ArgumentParser) -> None:
    """The membership game: attacks, models, subsets, rows, processes and seed."""
    p.add_argument("--attack", action="append", metavar="NAME",
                   choices=("auto", *_attack_names()),
                   help="attack to run on every row's membership game; repeat for several (the "
                        "strongest at 1%% FPR is reported, named in the table's attack column, with "
                        "the 95%% confidence statements Bonferroni-corrected for the choice). auto: "
                        "every attack that applies (rmia, rmia_offline, lira, lira_offline, loss) on "
                        "the same shadow models. Default: auto.")
    p.add_argument("--n-models", type=int, default=16,
                   help="models in each membership game (LiRA needs >= 4). Default: 16.")
    p.add_argument("--n-subsets", "--n-splits", dest="n_subsets", type=int, default=32,
                   help="random subsets over which MIPNoiseWrapper measures the spread (--n-splits: "
                        "its name before 0.2). Default: 32.")
    p.add_argument("--n-samples", type=int, default=None,
                   help="use a random subset of this many rows (quick runs on large data); a CSV "
                        "file is subsampled while it is read, so memory follows the rows kept")
    p.add_argument("--n-jobs", type=int, default=None,
                   help="models of a membership game fitted in parallel (joblib processes; -1: all "
                        "cores). Default: all cores for the MIP rows, where every model is a whole "
                        "noise calibration; one process for the others, whose fits take less time "
                        "than starting a worker.")
    p.add_argument("--seed", type=int, default=0,
                   help="seed of the audit (splits, games, and each model's seed in the game). "
                        "Right for an audit, wrong for a release. Default: 0.")


def _add_synthesizer_options(p: argparse.ArgumentParser) -> None:
    """Audit a synthesizer of the records instead of a model."""
    p.add_argument("--synthesizer", action="append", metavar="NAME",
                   help="audit a synthesizer of the dataset's records instead of a model; repeat for "
                        "several: mip-marginal (MIPMarginalSynthesizer at each --eta), dp-marginal "
                        "(DPMarginalSynthesizer at the equal promise), copying (a control that copies "
                        "training records). Attacks: density ratio (DOMIAS), closest record, and the "
                        "likelihood of the noisy marginals (docs/auditing.md, 'Auditing a synthesizer').")
    p.add_argument("--bins", type=int, default=6,
                   help="with --synthesizer: quantile bins of each numeric column (the records are "
                        "categorical). Default: 6.")


def _add_output_options(p: argparse.ArgumentParser) -> None:
    """Where the results go besides the table, and progress."""
    p.add_argument("--json", metavar="OUT", help="also write the results as JSON to OUT")
    p.add_argument("--report", metavar="OUT.html",
                   help="also write a self-contained HTML report: the ROC curves of all rows on "
                        "log-log axes with the promised bounds, and a privacy-utility plot")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output")

def _attack_names():
    from skmip.audit.attacks import available_attacks

    return available_attacks()

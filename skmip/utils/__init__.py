"""Plumbing every pillar shares: parameter validation, randomness, rows, threads.

- :mod:`skmip.utils.validation` — a small parameter validator (scikit-learn's is private).
- :mod:`skmip.utils.rng` — seeds and generators; :mod:`skmip.utils.os_random` — draws from
  the operating system's cryptographic generator (noise of released models).
- :mod:`skmip.utils.rows` — fitting on subsets of rows; :mod:`skmip.utils.threads` — BLAS threads.
- :mod:`skmip.utils.deprecation` — renamed parameters and moved names (old spellings warn).
- :mod:`skmip.utils.estimator_expr` — an estimator from a text such as ``"SVC(C=2)"``.

Nothing here imports another part of skmip but :mod:`skmip.exceptions`.
"""

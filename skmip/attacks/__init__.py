"""Membership-inference attacks, one per module (e.g. :mod:`skmip.attacks.bayes`)."""

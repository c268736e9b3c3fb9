"""The application: the ``skmip`` command, its audit plan and its report.

- :mod:`skmip.app.cli` — ``skmip``: audit estimators and their defences on a dataset.
- :mod:`skmip.app.options` — the command's options (its argument parser).
- :mod:`skmip.app.synth_cli` — ``skmip --synthesizer``: audit synthesizers of tabular records.
- :mod:`skmip.app.audit_plan` — what one run audits and why some defences do not apply.
- :mod:`skmip.app.report` — the run's tables.

Nothing in the library imports this package.
"""

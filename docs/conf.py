"""Sphinx configuration for the skmip documentation."""

project = "skmip"
author = "the skmip developers"
copyright = "2026, the skmip developers"

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
autosummary_generate = True
autodoc_default_options = {"members": True, "inherited-members": False}
numpydoc_show_class_members = False
numpydoc_validation_checks = set()
myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3
html_theme = "alabaster"
suppress_warnings = ["myst.header"]

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
templates_path = ["_templates"]
autosummary_generate = True
# Methods scikit-learn adds to every estimator (metadata routing, params, the mixins'
# score) are documented by scikit-learn, not here.
autodoc_default_options = {
    "members": True,
    "inherited-members": False,
    "exclude-members": "set_fit_request, set_score_request, set_predict_request, "
    "set_transform_request, set_params, get_params, get_metadata_routing, score",
}
numpydoc_show_class_members = False
numpydoc_show_inherited_class_members = False
numpydoc_validation_checks = set()
myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3
html_theme = "alabaster"
suppress_warnings = ["myst.header"]

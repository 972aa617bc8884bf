"""Sphinx configuration for the API reference (built in CI with warnings as errors:
python -m sphinx -W --keep-going -b html docs/api build/api-docs)."""

project = "ringfire"
author = "the ringfire developers"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon", "sphinx.ext.viewcode"]
autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": True,
                           "member-order": "bysource", "imported-members": True}
autodoc_typehints = "description"
autodoc_inherit_docstrings = True
napoleon_google_docstring = True
napoleon_numpy_docstring = False
html_theme = "alabaster"
html_title = "ringfire API reference"
exclude_patterns = ["_build"]
# The native module's classes appear through the Python wrappers' signatures.
nitpicky = False

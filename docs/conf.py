"""Sphinx configuration for the dask_streamsvm documentation.

Build: ``make docs``, i.e.
``python -m sphinx -W --keep-going -b html docs docs/_build/html``.
The build needs no network: there is no intersphinx mapping.
"""

import os
import sys

# The package is installed in the environment (``pip install -e .[docs]``);
# the path below lets the docs build from a bare checkout too.
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..")))

import dask_streamsvm  # noqa: E402

project = "dask_streamsvm"
author = "dask_streamsvm developers"
copyright = "dask_streamsvm developers"
release = dask_streamsvm.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "numpydoc",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

# -- autodoc / numpydoc ------------------------------------------------------
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"
# Members are listed explicitly in api.rst; numpydoc's own member tables
# would point at autosummary stubs that this site does not generate.
numpydoc_show_class_members = False
numpydoc_show_inherited_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# -- MyST --------------------------------------------------------------------
# Anchors for headings down to level 3, so "page.md#a-heading" links resolve.
myst_heading_anchors = 3

# -- HTML --------------------------------------------------------------------
html_theme = "alabaster"
html_title = f"dask_streamsvm {release}"
html_static_path = []
html_theme_options = {
    "description": "SVMs on data larger than memory, with Dask",
    "fixed_sidebar": True,
}

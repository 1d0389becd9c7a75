"""Sphinx's settings for the documentation site (`make docs`): the notebooks under nbs/ as myst-nb renders them from the
outputs they keep (nothing is run), in sphinx-book-theme, with an API entry (autodoc) after each exported cell, as
nbdev's `show_doc` puts one (docs/nbdocs.py). The source folder is the repository's root, so that docs/GPU.md is a
page too and the index's links, written for the README at the root, reach their files.

    sphinx-build -c docs -d _docs/doctrees . _docs/html       # every page (what `make docs` runs)
    BILATERAL_DOCS_PAGES=details,04_agents sphinx-build -c docs . DIR/html    # the index and a few notebooks (tests)

myst-nb writes the outputs' pictures beside the site's folder (../jupyter_execute), hence the site in _docs/html/."""
import os, sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]
import bilateral, nbdocs

project = 'bilateral'
author = 'bilateral developers'
copyright = '2025, bilateral developers'
release = version = bilateral.__version__
REPO = 'https://github.com/bilateral-dev/bilateral'

extensions = ['myst_nb', 'sphinx.ext.autodoc', 'sphinx.ext.linkcode', 'nbdocs']
root_doc = 'nbs/index'
include_patterns = nbdocs.include_patterns()
exclude_patterns = ['.*', '_docs', 'jupyter_execute', 'build', 'dist', 'data', 'bilateral', 'tests', 'tools',
                    '**/.ipynb_checkpoints']
templates_path = [str(HERE / '_templates')]
html_static_path = [str(HERE / '_static')]
html_css_files = ['site.css']

# the notebooks as they were saved: their outputs, never run again
nb_execution_mode = 'off'
nb_merge_streams = True
myst_heading_anchors = 4            # links between lessons to a heading (`04_agents.ipynb#the-interface`)
myst_enable_extensions = ['attrs_inline']
suppress_warnings = ['myst.header', 'mystnb.unknown_mime_type', 'misc.highlighting_failure', 'toc.not_included']

# API entries as nbdev shows them: the signature (one parameter a line where it is long), the docstring, the parameters'
# comments (nbdev's docments); methods in source order; each entry links to its source on GitHub
autodoc_member_order = 'bysource'
autodoc_typehints = 'signature'
autodoc_class_signature = 'mixed'
autodoc_preserve_defaults = True
maximum_signature_line_length = 88
python_use_unqualified_type_names = True
add_module_names = False
default_role = 'py:obj'             # `Name` in a docstring: a link to its entry where it has one

def linkcode_resolve(domain, info):
    return nbdocs.source_url(REPO, 'main', domain, info)

html_theme = 'sphinx_book_theme'
html_title = 'bilateral'
html_last_updated_fmt = None
html_copy_source = True             # the notebook, to download from its page (the theme's download button)
html_theme_options = {
    'repository_url': REPO,
    'repository_branch': 'main',
    'path_to_docs': '',
    'use_repository_button': True,
    'use_source_button': True,      # the page's notebook on GitHub
    'use_issues_button': True,      # "Open issue", and "Report an issue" under each page (_templates/report-issue.html)
    'use_download_button': True,
    'home_page_in_toc': True,
    'show_toc_level': 2,
    'show_navbar_depth': 1,
    'article_footer_items': ['report-issue.html'],
    'navigation_with_keys': False,
    'navbar_persistent': [],        # the search field is the sidebar's (and a button on a narrow screen)
}
html_context = {'repository_url': REPO, 'default_mode': 'auto'}
# search works from file:// (searchindex.js is a script); its summaries would fetch each page, which file:// forbids
html_show_search_summary = False

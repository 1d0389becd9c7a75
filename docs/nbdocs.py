"""A Sphinx extension: each notebook's page as nbdev shows it, from the notebook's saved outputs (myst-nb runs nothing).

- After each exported cell, an API entry (autodoc) for every public function, class (with its methods) and patched
  method the cell defines, where nbdev's `show_doc` would put one; the build fails when a public name of
  `bilateral/_modidx.py` gets no entry on any page (`missing_entries`).
- nbdev's cell directives: `#| hide` cells and directive-only cells left out, `#| echo: false` cells without their code,
  the `#|` lines out of the code shown.
- `Name` in a lesson's text links to that name's entry, as nbdev's doc links do.
- Altair charts drawn in the browser by Vega-Embed, from a bundle written into the site (vl-convert's, so no network).
- The index's links, written for the README at the repository's root, made relative to nbs/; the site's table of
  contents (index, details, lessons, experiments, docs/*.md) added to the index.
- An experiment's page shows the outputs of its last run under data/runs/ (`make reproduce`), where there is one."""
import ast, importlib, inspect, json, math, os, re
from functools import cache
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NBS = ROOT / 'nbs'
VEGA = re.compile(r'application/vnd\.vegalite\.v\d+(\.json|\+json)')
BUNDLE = 'vega-bundle.js'

# --- the pages

def notebooks() -> list[Path]:
    """The notebooks of the site in its order: index, details, lessons, experiments; only the names in the environment
    variable BILATERAL_DOCS_PAGES (comma-separated stems, e.g. `index,04_agents`) where it is set."""
    every = [NBS / 'index.ipynb', NBS / 'details.ipynb', *sorted(NBS.glob('[0-9]*.ipynb')),
             *sorted((NBS / 'experiments').glob('*.ipynb'))]
    only = [s for s in os.environ.get('BILATERAL_DOCS_PAGES', '').split(',') if s.strip()]
    return [p for p in every if not only or p.stem in only or p == NBS / 'index.ipynb']

def docname(p: Path) -> str: return p.relative_to(ROOT).with_suffix('').as_posix()

def include_patterns() -> list[str]: return [p.relative_to(ROOT).as_posix() for p in notebooks()] + ['docs/*.md']

def toctree() -> str:
    "The site's table of contents, as a MyST cell of the index: the sidebar and previous/next follow it."
    groups = {'Start': [], 'Lessons': [], 'Experiments': [], 'More': []}
    for p in notebooks()[1:]:
        g = 'Experiments' if p.parent.name == 'experiments' else 'Lessons' if p.name[0].isdigit() else 'Start'
        groups[g].append('/' + docname(p))
    groups['More'] += ['/' + p.relative_to(ROOT).with_suffix('').as_posix()
                       for p in sorted((ROOT / 'docs').glob('*.md'))]
    return '\n'.join(f'```{{toctree}}\n:caption: {g}\n:hidden:\n\n' + '\n'.join(ds) + '\n```\n'
                     for g, ds in groups.items() if ds)

# --- the API entries

@cache
def modidx() -> dict:
    "Every name of `bilateral/_modidx.py`: full name -> (nbdev's page, module file)."
    from bilateral._modidx import d
    return {k: v for syms in d['syms'].values() for k, v in syms.items()}

def public(name: str) -> bool: return not any(p.startswith('_') for p in name.split('.')[1:])

def directives(src: str) -> tuple[dict, str]:
    "A code cell's nbdev directives (`#| export` -> {'export': ''}) and its code without them."
    found, code = {}, []
    for line in src.splitlines():
        if m := re.match(r'#\|\s*([\w-]+):?\s*(.*)$', line): found[m.group(1)] = m.group(2).strip()
        else: code.append(line)
    return found, '\n'.join(code).strip('\n')

def patched(node) -> list[str]:
    "The classes a `@patch`ed function is added to (its first argument's annotation), else []."
    names = [getattr(d.func if isinstance(d, ast.Call) else d, 'id', '') for d in node.decorator_list]
    if 'patch' not in names: return []
    ann = node.args.args[0].annotation if node.args.args else None
    items = ann.elts if isinstance(ann, ast.Tuple) else [ann]
    return [ast.unparse(a) for a in items if a is not None]

def defined(code: str, module: str) -> list[tuple[str, list[str]]]:
    "The public names an exported cell defines, as in `_modidx`: (full name, public methods of a class) in order."
    out = []
    for node in ast.parse(code).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out += [(f'{module}.{c}.{node.name}', []) for c in patched(node)] or [(f'{module}.{node.name}', [])]
        elif isinstance(node, ast.ClassDef):
            ms = [n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
            out.append((f'{module}.{node.name}', [m for m in ms if f'{module}.{node.name}.{m}' in modidx()]))
    return [(n, [m for m in ms if not m.startswith('_')]) for n, ms in out if n in modidx() and public(n)]

def resolve(name: str):
    "The object a full name of `_modidx` names: its module (the longest importable prefix), then attributes."
    parts = name.split('.')
    for i in range(len(parts) - 1, 0, -1):
        try: obj = importlib.import_module('.'.join(parts[:i]))
        except ModuleNotFoundError as e:            # not a module: a shorter prefix is; a missing dependency: raised
            if e.name and '.'.join(parts[:i]).startswith(e.name): continue
            raise
        for a in parts[i:]: obj = inspect.getattr_static(obj, a) if inspect.isclass(obj) else getattr(obj, a)
        return obj
    raise ImportError(name)

def entry(name: str, members: list[str]) -> str:
    """The autodoc directive (reStructuredText, see `Api`) of one API entry. A name that cannot be imported still gets
    its directive: autodoc says why it fails, and the build's check (`missing_entries`) names it."""
    try: obj = resolve(name)
    except Exception as e:
        from sphinx.util import logging
        logging.getLogger(__name__).warning(f'{name}: {type(e).__name__}: {e}')
        obj = None
    if inspect.isclass(obj):
        opts = f'\n   :members: {", ".join(members)}\n   :undoc-members:' if members else ''
        return f'.. autoclass:: {name}{opts}'
    if isinstance(obj, property): kind = 'autoproperty'
    elif name.split('.')[-2][0].isupper(): kind = 'automethod'
    else: kind = 'autofunction'
    return f'.. {kind}:: {name}'

def api_cells(nb: dict) -> dict[int, str]:
    """The API entries of a notebook: cell index -> the MyST of the entries to show after it. A name defined again
    later in the notebook gets its entry after its last definition (the one the module keeps)."""
    module, where = None, {}
    for i, c in enumerate(nb['cells']):
        if c['cell_type'] != 'code': continue
        ds, code = directives(''.join(c['source']))
        if 'default_exp' in ds: module = 'bilateral.' + ds['default_exp']
        if 'export' in ds and module:
            target = 'bilateral.' + ds['export'] if ds['export'] else module
            for name, ms in defined(code, target): where[name] = (i, ms)
    out = {}
    for name, (i, ms) in where.items(): out.setdefault(i, []).append(entry(name, ms))
    return {i: '```{api}\n' + '\n\n'.join(es) + '\n```' for i, es in out.items()}

def expected_names(nbs: list[Path]) -> set[str]:
    "The public names of `_modidx` whose module a notebook among `nbs` exports."
    mods = set()
    for p in nbs:
        for c in json.loads(p.read_text())['cells']:
            if c['cell_type'] == 'code' and 'default_exp' in (ds := directives(''.join(c['source']))[0]):
                mods.add('bilateral.' + ds['default_exp'])
    return {n for n in modidx() if public(n) and any(n.startswith(m + '.') for m in mods)}

def missing_entries(outdir: Path, nbs: list[Path]) -> list[str]:
    "The public names of `nbs`' modules that no page of the built site `outdir` has an entry for."
    ids = set()
    for page in Path(outdir).rglob('*.html'):
        ids.update(re.findall(r'<dt class="sig sig-object py" id="([^"]+)"', page.read_text()))
    return sorted(expected_names(nbs) - ids)

# --- the text

@cache
def short_names() -> dict[str, str]:
    "`Name` and `Class.method` -> the full name, for the public names whose short form is unique."
    seen = {}
    for full in modidx():
        if not public(full): continue
        mod, rest = full.split('.', 2)[1], full.split('.', 2)[2]
        seen.setdefault(rest, set()).add(full)
    return {k: v.pop() for k, v in seen.items() if len(v) == 1}

def doc_links(md: str) -> str:
    "`Name` outside fenced code -> a link to its entry (nbdev's doc links); other inline code stays as it is."
    names = short_names()
    def link(m):
        full = names.get(m.group(1))
        return f'{{py:obj}}`{m.group(1)} <{full}>`' if full else m.group(0)
    parts = re.split(r'(```.*?```)', md, flags=re.S)
    return ''.join(p if i % 2 else re.sub(r'(?<![`\w])`([A-Za-z_][\w.]*)`(?!`)', link, p) for i, p in enumerate(parts))

def readme_links(md: str) -> str:
    "The index's relative links and images, written from the repository's root, written from nbs/ instead."
    def fix(m):
        url = m.group(2)
        if re.match(r'[a-z]+:|#|/', url): return m.group(0)
        return m.group(1) + (url[4:] if url.startswith('nbs/') else '../' + url) + ')'
    return re.sub(r'(\]\()([^)\s]+)\)', fix, md)

def chart(spec) -> str:
    "A Vega-Lite chart as HTML that site.js draws with Vega-Embed."
    def clean(x):                       # NaN, which JSON cannot say, as null (Vega-Lite's missing value)
        if isinstance(x, float) and not math.isfinite(x): return None
        if isinstance(x, dict): return {k: clean(v) for k, v in x.items()}
        return [clean(v) for v in x] if isinstance(x, list) else x
    spec = clean(spec if isinstance(spec, dict) else json.loads(spec))
    text = json.dumps(spec, allow_nan=False).replace('</', '<\\/')
    return f'<div class="vega-chart"><script type="application/json">{text}</script></div>'

def altair_html(text: str) -> dict | None:
    "The Vega-Lite spec of a chart that Altair's `html` renderer wrote (it loads Vega from a CDN), else None."
    if 'altair-viz' not in text or (at := text.rfind('})(')) < 0: return None
    try: return json.JSONDecoder().raw_decode(text, at + 3)[0]
    except ValueError: return None

def page(nb: dict, is_index: bool) -> dict:
    "The notebook as its page shows it."
    api, cells = api_cells(nb), []
    for i, c in enumerate(nb['cells']):
        c = dict(c, source=''.join(c['source']))
        if c['cell_type'] == 'markdown':
            c['source'] = doc_links(readme_links(c['source']) if is_index else c['source'])
        elif c['cell_type'] == 'code':
            ds, c['source'] = directives(c['source'])
            if 'hide' in ds or ds.get('include') == 'false' or not c['source'].strip(): c = None
            else:
                tags = ['remove-input'] if ds.get('echo') == 'false' else []
                if ds.get('output') == 'false': tags.append('remove-output')
                c['metadata'] = {'tags': tags}
                for o in c.get('outputs', []):
                    data = o.get('data', {})
                    for k in [k for k in data if VEGA.fullmatch(k)]:
                        o['data'] = {'text/html': chart(data[k])}
                    if (spec := altair_html(''.join(data.get('text/html', '')))) is not None:
                        o['data'] = {'text/html': chart(spec)}
                    if 'text/markdown' in data:     # Quarto's link attributes, which markdown would show as text
                        md = ''.join(data['text/markdown'])
                        data['text/markdown'] = re.sub(r'\]\(([^)]*)\)\{[^}]*\}', r'](\1)', md)
        else: c = None
        if c: cells.append(c)
        if i in api:
            cells.append({'cell_type': 'markdown', 'metadata': {}, 'source': api[i]})
    if is_index: cells.append({'cell_type': 'markdown', 'metadata': {}, 'source': toctree()})
    for c in cells: c.pop('id', None)
    return dict(nb, cells=cells, nbformat=4, nbformat_minor=4)

RUNS = ROOT / 'data' / 'runs'

def last_run(name: str, runs: Path = RUNS) -> Path | None:
    "The newest executed copy of the experiment `name` under `runs` that has outputs (`make reproduce` writes them)."
    runs = sorted(((p.stat().st_mtime, p) for p in Path(runs).rglob(f'{name}.ipynb')), reverse=True)
    for _, p in runs:
        try: cells = json.loads(p.read_text())['cells']
        except (OSError, ValueError, KeyError): continue
        if any(c.get('outputs') for c in cells): return p
    return None

def experiment(nb: dict, name: str, runs: Path = RUNS) -> dict:
    "An experiment's page: its last run's cells and outputs, or its code and how to see them; said under its title."
    run = last_run(name, runs)
    if run:
        where = run.relative_to(ROOT) if run.is_relative_to(ROOT) else run
        nb, said = json.loads(run.read_text()), f'The outputs below are those of its last run, `{where}`.'
    else: said = ('This page shows the code only: `make reproduce` runs it (into `data/runs/offline/`), and '
                  '`make docs` then shows that run\'s outputs here.')
    cells = list(nb['cells'])
    at = 1 if cells and cells[0]['cell_type'] == 'markdown' else 0
    cells.insert(at, {'cell_type': 'markdown', 'metadata': {}, 'source': f'```{{note}}\n{said}\n```'})
    return dict(nb, cells=cells)

def source_read(app, name, source):
    if not name.startswith('nbs/'): return
    nb = json.loads(source[0])
    if name.startswith('nbs/experiments/'): nb = experiment(nb, name.rsplit('/', 1)[1])
    source[0] = json.dumps(page(nb, name == 'nbs/index'))

# --- API entries: the directive, the parameters' comments, the source links

def api_directive():
    "The `api` directive (docutils is imported here: the checks of this module need no Sphinx)."
    from docutils.parsers.rst import Directive

    class Api(Directive):
        """autodoc's directives, written in reStructuredText in a notebook's Markdown cell, parsed as reStructuredText.
        MyST's own `eval-rst` does the same but first pads the text with one blank line for each line before it, and
        myst-nb numbers a notebook's lines ten thousand a cell: a lesson's last entries would parse millions of lines."""
        has_content = True
        def run(self):
            from docutils.utils import new_document
            from myst_parser.mocking import MockRSTParser
            doc = new_document(self.state.document['source'], self.state.document.settings)
            doc.reporter = self.state.document.reporter
            MockRSTParser().parse('\n'.join(self.content), doc)
            for node in doc:
                if node['names']: self.state.document.note_explicit_target(node, node)
            return doc.children
    return Api

def rst_text(line: str) -> str:
    """A line of an nbdev docstring (Markdown: `code` in backticks, `*` as it is) as reStructuredText: `*`, `|` and a
    word's trailing `_` escaped, a code span joined to the word it touches (`Agent`s)."""
    parts = re.split(r'(`[^`]+`)', line)
    for i, p in enumerate(parts):
        if i % 2: continue
        p = re.sub(r'([*|])', r'\\\1', p)
        p = re.sub(r'(?<=\w)_(?!\w)', r'\\_', p)
        if i > 0 and p[:1].isalnum(): p = '\\ ' + p
        if i < len(parts) - 1 and p[-1:].isalnum(): p += '\\ '
        parts[i] = p
    return ''.join(parts)

def docstring(app, what, name, obj, options, lines):
    """An nbdev docstring read as Markdown, then the parameters' comments (nbdev's docments), as nbdev's parameter
    table shows them."""
    lines[:] = [rst_text(l) for l in lines]
    if what not in ('function', 'method', 'class'): return
    try:
        from fastcore.docments import docments
        said = docments(obj, returns=True)
    except Exception: return
    extra = [f':param {k}: {rst_text(v)}' if k != 'return' else f':returns: {rst_text(v)}'
             for k, v in said.items() if v and k != 'self']
    if extra: lines += ([''] if lines else []) + extra

def source_url(repo: str, branch: str, domain: str, info: dict):
    "The GitHub address of an API entry's source lines."
    if domain != 'py' or not info.get('module', '').startswith('bilateral'): return None
    try:
        obj = resolve(f"{info['module']}.{info['fullname']}")
        obj = inspect.unwrap(obj.fget if isinstance(obj, property) else getattr(obj, '__func__', obj))
        path = Path(inspect.getsourcefile(obj)).resolve().relative_to(ROOT)
        lines, start = inspect.getsourcelines(obj)
    except Exception: return None
    return f'{repo}/blob/{branch}/{path.as_posix()}#L{start}-L{start + len(lines) - 1}'

# --- the charts' script, the check

def builder_inited(app):
    "Vega, Vega-Lite and Vega-Embed, bundled by vl-convert into the site (wrapped so that its names stay its own)."
    import vl_convert as vlc
    static = Path(app.outdir) / '_static'
    static.mkdir(parents=True, exist_ok=True)
    stamp = f"/* vl-convert-python {version('vl-convert-python')}, Vega-Lite 6 */\n"
    target = static / BUNDLE
    if not target.exists() or not target.read_text()[:200].startswith(stamp):
        v6 = [v for v in vlc.get_vegalite_versions() if v.startswith('6')]
        bundle = vlc.javascript_bundle(vl_version=v6[-1] if v6 else None)
        target.write_text(stamp + '(function(){\n' + bundle + '\n})();\n')

def page_context(app, pagename, templatename, context, doctree):
    "The bundle and the script that draws the charts, on the pages with a chart only."
    if doctree is not None and 'class="vega-chart"' in context.get('body', ''):
        app.add_js_file(BUNDLE)
        app.add_js_file('charts.js')

def nbdev_pages(app):
    """nbdev's links (`_modidx`: `agents.html#agent.act`, what other nbdev projects follow) as pages of this site: each
    one a redirect to the Sphinx entry of the name (`nbs/04_agents.html#bilateral.agents.Agent.act`)."""
    objs, pages = app.env.get_domain('py').objects, {}
    for name, (link, _) in modidx().items():
        if name not in objs: continue
        page, _, frag = link.partition('#')
        target = f"{app.builder.get_target_uri(objs[name].docname)}#{objs[name].node_id}"
        pages.setdefault(page, {'': target.split('#')[0]})[frag] = target
    for page, table in pages.items():
        out = Path(app.outdir) / page
        if out.exists() or '/' in page: continue
        out.write_text('<!DOCTYPE html><meta charset="utf-8"><title>bilateral</title><script>var m = '
                       + json.dumps(table, sort_keys=True) + ';location.replace(m[location.hash.slice(1)] || m[""]);'
                       + f'</script><a href="{table[""]}">{table[""]}</a>\n')
        # and the page as markdown, where each module's docstring points (`Docs: .../agents.html.md`)
        nb = json.loads((ROOT / (table[''].removesuffix('.html') + '.ipynb')).read_text())
        out.with_name(page + '.md').write_text('\n\n'.join(
            src if c['cell_type'] == 'markdown' else f'```python\n{src}\n```' for c in nb['cells']
            if (src := ''.join(c['source']).strip()) and not src.startswith('#| hide')) + '\n')

def build_finished(app, exc):
    if exc is not None or app.builder.name != 'html': return
    missing = missing_entries(Path(app.outdir), notebooks())
    if missing:
        from sphinx.errors import ExtensionError
        raise ExtensionError(f'{len(missing)} public names of bilateral/_modidx.py have no API entry on any page: '
                             + ', '.join(missing[:30]))
    nbdev_pages(app)
    (Path(app.outdir) / 'index.html').write_text(
        '<!DOCTYPE html><meta charset="utf-8"><title>bilateral</title>'
        '<meta http-equiv="refresh" content="0; url=nbs/index.html"><a href="nbs/index.html">bilateral</a>\n')

def setup(app):
    app.add_directive('api', api_directive())
    app.connect('builder-inited', builder_inited)
    app.connect('source-read', source_read)
    app.connect('autodoc-process-docstring', docstring)
    app.connect('html-page-context', page_context)
    app.connect('build-finished', build_finished)
    return {'parallel_read_safe': True, 'parallel_write_safe': True}

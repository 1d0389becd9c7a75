"""Build the documentation site from the notebooks, offline, into `_docs/`: the index, every lesson, the experiments and
the details page, with a sidebar of every page.

Each notebook goes through nbdev's own processing for its docs (`show_doc` for every exported name, hidden cells
dropped, doc links, the page's title and file name), then nbconvert renders it to HTML. nbdev renders with Quarto,
whose PyPI package (`quarto-cli`) is an sdist that downloads the Quarto binary from GitHub while it installs, so it
cannot be installed without network; this renders the same processed notebooks without it. Altair charts kept as
Vega-Lite are drawn to SVG here (vl-convert), so every chart shows without JavaScript or network.

    python tools/docs.py [--out DIR] [NOTEBOOK ...]     # NOTEBOOK: paths under nbs/ (default: all of them)"""
import argparse, html, json, os, posixpath, re, shutil, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NBS = ROOT / 'nbs'
EXTRA = {'docs/GPU.md': 'GPU.html', 'LICENSE': 'LICENSE.txt', 'CITATION.cff': 'CITATION.cff'}  # repository files
VEGA = re.compile(r'application/vnd\.vegalite\.v\d+(\.json|\+json)')
CSS = """body{margin:0;font:15px/1.55 system-ui,sans-serif;color:#222;display:flex}
nav{width:250px;flex:none;height:100vh;overflow:auto;position:sticky;top:0;background:#f6f7f9;padding:12px;
box-sizing:border-box;font-size:13px}nav h4{margin:12px 0 4px;color:#555}nav a{display:block;padding:1px 0;
color:#1a5fb4;text-decoration:none}nav a.here{font-weight:bold;color:#000}
main{max-width:1000px;padding:16px 32px;min-width:0}pre{background:#f4f4f4;padding:8px;overflow:auto;font-size:13px}
.jp-InputArea pre{background:#eef3fb}table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ddd;
padding:2px 6px}img,svg{max-width:100%;height:auto}.jp-OutputPrompt,.jp-InputPrompt{display:none}
code{background:#f4f4f4;padding:0 2px}blockquote{color:#555;border-left:3px solid #ccc;margin-left:0;padding-left:12px}
"""

def pages(only=None) -> list[Path]:
    "The notebooks of the site, in the sidebar's order: index, details, the lessons, the experiments."
    lessons = sorted(p for p in NBS.glob('[0-9]*.ipynb'))
    every = [NBS / 'index.ipynb', NBS / 'details.ipynb', *lessons, *sorted((NBS / 'experiments').glob('*.ipynb'))]
    if not only: return every
    want = {(NBS / o).resolve() if not Path(o).is_absolute() else Path(o) for o in only}
    return [p for p in every if p.resolve() in want]

def process(src: Path, dst: Path) -> bool:
    """nbdev's processing of one notebook for its docs page (what `nbdev-proc-nbs` does before Quarto renders). nbdev
    runs the cells its `show_doc` entries need: the exported ones and every cell with an import. Where one of those
    fails (a cell that imports and also uses a name an earlier, unrun cell made), the page is processed without
    running anything, so it keeps its text, code and outputs but not its API entries; returns False then."""
    from nbdev.serve_drv import exec_nb
    from nbdev.processors import FilterDefaults, exec_show_docs
    class NoExec(FilterDefaults):
        def base_procs(self): return [p for p in super().base_procs() if p is not exec_show_docs]
    os.environ['IN_TEST'] = '1'
    try:
        try: exec_nb(src, dst, FilterDefaults)
        except Exception as e:
            said = str(e).splitlines() or ['']
            print(f'docs: {src.name}: {said[0]} {said[-1]}: rendered without its API entries', file=sys.stderr)
            exec_nb(src, dst, NoExec)
            return False
        return True
    finally: del os.environ['IN_TEST']

def front(nb: dict) -> dict:
    "The page's front matter (title, description, output-file) from nbdev's raw cell, which is then dropped."
    import yaml
    cells = nb['cells']
    if cells and cells[0]['cell_type'] == 'raw' and ''.join(cells[0]['source']).startswith('---'):
        meta = yaml.safe_load(''.join(cells.pop(0)['source']).strip().strip('-')) or {}
        return meta
    return {}

def page_name(src: Path, meta: dict) -> str:
    "Where a notebook's page lands in the site: nbdev's output file, experiments in their own folder."
    name = meta.get('output-file') or src.with_suffix('.html').name
    return f'experiments/{name}' if src.parent.name == 'experiments' else name

def tidy(nb: dict) -> None:
    "Directive lines out of the code; `echo: false` cells without their code; Vega-Lite outputs drawn as SVG."
    import vl_convert as vlc
    for c in nb['cells']:
        c['source'] = ''.join(c['source'])
        if c['cell_type'] != 'code': continue
        lines = c['source'].splitlines()
        c['metadata'] = {'hide_input': True} if any(re.match(r'#\|\s*echo:\s*false', l) for l in lines) else {}
        c['source'] = '\n'.join(l for l in lines if not l.startswith('#|')).strip()
        for o in c.get('outputs', []):
            if 'text/markdown' in o.get('data', {}):          # Quarto's link attributes, which markdown shows as text
                md = ''.join(o['data']['text/markdown'])
                o['data']['text/markdown'] = re.sub(r'\]\(([^)]*)\)\{[^}]*\}', r'](\1)', md)
            for k in [k for k in o.get('data', {}) if VEGA.fullmatch(k)]:
                spec = o['data'].pop(k)
                o['data']['image/svg+xml'] = vlc.vegalite_to_svg(spec if isinstance(spec, dict) else json.loads(spec))
                o['data'].pop('text/plain', None)

def body(nb: dict) -> str:
    "The notebook as an HTML fragment (nbconvert's basic template), `echo: false` inputs left out."
    import nbformat
    from nbconvert import HTMLExporter
    from traitlets.config import Config
    cfg = Config()
    cfg.TagRemovePreprocessor.enabled = True
    ex = HTMLExporter(template_name='basic', config=cfg)
    ex.exclude_input_prompt = ex.exclude_output_prompt = True
    node = nbformat.reads(json.dumps(nb), as_version=4)      # joins the multi-line strings, as reading a file does
    for c in node.cells:
        if c.get('metadata', {}).get('hide_input'): c.metadata['transient'] = {'remove_source': True}
    out, _ = ex.from_notebook_node(node)
    # Quarto's heading ids are lower case, and nbdev's doc links use them: keep both
    return re.sub(r'(<h[1-6] id="([^"]+)"[^>]*>)', lambda m: m.group(1) + (
        f'<span id="{m.group(2).lower()}"></span>' if m.group(2).lower() != m.group(2) else ''), out)

def links(text: str, here: str, base: str, names: dict, ids: dict) -> str:
    """Links to a notebook, a repository file or the docs host made relative links to their pages in the site; `base`
    is the folder, from the repository's root, that the page's links are written from. A doc link nbdev made to a
    name its page does not document (a private helper) leads to the page."""
    pages = set(names.values())
    def fix(m):
        url = html.unescape(m.group(2))
        path, hash_, frag = url.partition('#')
        host = re.match(r'https://github\.com/bilateral-dev/bilateral/([^/]+\.html)$', path)
        if host:
            target = host.group(1) if host.group(1) in pages else None
            if frag and frag not in ids.get(target, ()): hash_ = frag = ''
        elif path and not re.match(r'[a-z]+:', path): target = names.get(posixpath.normpath(posixpath.join(base, path)))
        else: target = None
        if target is None: return m.group(0)
        rel = posixpath.relpath(target, posixpath.dirname(here) or '.')
        return f'{m.group(1)}{html.escape(rel + hash_ + frag)}"'
    return re.sub(r'(href=")([^"]*)"', fix, text)

def sidebar(entries: list, here: str) -> str:
    "The sidebar: every page, grouped, the current one marked."
    out, group = [], None
    for g, name, title in entries:
        if g != group: out.append(f'<h4>{g}</h4>')
        group = g
        rel = posixpath.relpath(name, posixpath.dirname(here) or '.')
        out.append(f'<a href="{html.escape(rel)}"{" class=here" if name == here else ""}>{html.escape(title)}</a>')
    return '<nav>' + '\n'.join(out) + '</nav>'

def wrap(title: str, desc: str, nav: str, main: str) -> str:
    head = f'<h1>{html.escape(title)}</h1>' + (f'<p><em>{html.escape(desc)}</em></p>' if desc else '')
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{html.escape(title)} – bilateral</title>'
            f'<style>{CSS}</style></head><body>{nav}<main>{head}{main}</main></body></html>\n')

def extras(out: Path) -> dict:
    "The repository files the pages link to, in the site: GPU.md rendered, the license and citation as text."
    import mistune
    for src, name in EXTRA.items():
        text = (ROOT / src).read_text()
        if name.endswith('.html'):
            (out / name).write_text(wrap(Path(src).stem, '', '', mistune.html(text)))
        else: (out / name).write_text(text)
    return {src: name for src, name in EXTRA.items()}

def build(out: Path = ROOT / '_docs', only=None) -> list[Path]:
    "Process and render every page into `out`; returns the pages written."
    srcs, cwd = pages(only), os.getcwd()
    if not srcs: sys.exit('docs: no notebook to render')
    proc = out / '_proc'
    shutil.rmtree(out, ignore_errors=True)
    proc.mkdir(parents=True)
    os.chdir(NBS)                       # nbdev reads its config, and the notebooks their data, from here
    try:
        done = []
        for s in srcs:
            d = proc / s.relative_to(NBS)
            d.parent.mkdir(parents=True, exist_ok=True)
            process(s, d)
            nb = json.loads(d.read_text())
            meta = front(nb)
            done.append((s, nb, meta, page_name(s, meta)))
    finally: os.chdir(cwd)
    names = extras(out) | {s.relative_to(ROOT).as_posix(): name for s, nb, meta, name in done}
    # the index's links are written for the README, at the repository's root; a notebook's from its own folder
    base = lambda s: '' if s == NBS / 'index.ipynb' else s.parent.relative_to(ROOT).as_posix()
    group = lambda s: ('Start' if s.parent == NBS and not s.name[0].isdigit() else
                       'Experiments' if s.parent.name == 'experiments' else 'Lessons')
    entries = [(group(s), name, meta.get('title') or s.stem) for s, nb, meta, name in done]
    texts = {}
    for s, nb, meta, name in done:
        tidy(nb)
        texts[name] = wrap(meta.get('title') or s.stem, meta.get('description', ''), sidebar(entries, name), body(nb))
    ids = {name: set(re.findall(r' id="([^"]+)"', t)) for name, t in texts.items()}
    written = []
    for s, nb, meta, name in done:
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_text(links(texts[name], name, base(s), names, ids))
        written.append(out / name)
    shutil.rmtree(proc)
    # the index's pictures are written for the README too (nbs/assets/...): the same path under the site's root
    shutil.copytree(NBS / 'assets', out / 'nbs' / 'assets', ignore=shutil.ignore_patterns('*.js', '*.css'))
    return written

if __name__ == '__main__':
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--out', default=str(ROOT / '_docs'))
    ap.add_argument('notebooks', nargs='*', help='notebooks under nbs/ (default: every page)')
    a = ap.parse_args()
    w = build(Path(a.out).resolve(), a.notebooks)
    print(f'docs: {len(w)} pages in {a.out} (open {Path(a.out) / "index.html"})')

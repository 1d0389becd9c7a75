"""The lesson counts of issue 21 on a checkout's nbs/: `python tools/lesson_counts.py [ROOT] [--per]`.

lessons: code cells that are not exported, `default_exp` or `#| hide`; shows_nothing: such cells, other than
import-only ones, without output; ends_print: lessons whose last statement is `print(...)`; multi_def: exported
cells with two or more top-level `def`/`class`; public_funcs / docments: top-level public functions of exported
cells, and those with a comment on a line where exactly one parameter ends; noisy: cells with stderr, progress bars
(`NN%|`, `it/s]`), a `Warning` or a widget in their output; hide: `#| hide` cells."""
import ast, io, json, re, sys, tokenize
from pathlib import Path

def cells(p):
    cs = json.loads(p.read_text())['cells']
    for c in cs: c['src'] = ''.join(c['source'])
    return cs

def flags(src): return [l[3:].split()[0] for l in src.splitlines() if l.startswith('#| ') and len(l) > 3]

def is_export(src): return any(f in ('export', 'exports', 'exporti') for f in flags(src))

def is_lesson(c):
    if c['cell_type'] != 'code' or not c['src'].strip(): return False
    f = flags(c['src'])
    return not is_export(c['src']) and 'default_exp' not in f and 'hide' not in f

def import_only(src):
    try: t = ast.parse(src)
    except SyntaxError: return False
    return bool(t.body) and all(isinstance(n, (ast.Import, ast.ImportFrom)) for n in t.body)

def last_stmt(src):
    lines = [l for l in src.splitlines() if not l.lstrip().startswith(('%', '!'))]
    try: t = ast.parse('\n'.join(lines))
    except SyntaxError: return None
    return t.body[-1] if t.body else None

def ends_in_print(src):
    n = last_stmt(src)
    return isinstance(n, ast.Expr) and isinstance(n.value, ast.Call) and getattr(n.value.func, 'id', '') == 'print'

def shows_nothing(c):
    return is_lesson(c) and not import_only(c['src']) and not c.get('outputs')

DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
def n_defs(src):
    try: t = ast.parse(src)
    except SyntaxError: return 0
    return sum(isinstance(n, DEFS) for n in t.body)

def public_funcs(src):
    "Public top-level functions (and @patch methods) of a cell, with whether any parameter has a docment."
    try: t = ast.parse(src)
    except SyntaxError: return []
    lines = src.splitlines()
    out = []
    for n in t.body:
        if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) or n.name.startswith('_'): continue
        a = n.args
        params = [p for p in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if p is not None]
        params = [p for p in params if p.arg not in ('self', 'cls')]
        ends = [p.end_lineno for p in params]   # a docment: a comment on a line where one parameter ends
        doc = any(ends.count(p.end_lineno) == 1 and re.search(r'#\s*\S', lines[p.end_lineno - 1]) for p in params)
        out.append((n.name, len(params), doc))
    return out

def noisy(c):
    for o in c.get('outputs', []):
        if o.get('output_type') == 'stream' and o.get('name') == 'stderr': return True
        txt = ''.join(o.get('text', '')) + ''.join(o.get('data', {}).get('text/plain', ''))
        if re.search(r'\d+%\|', txt) or 'it/s]' in txt or 's/it]' in txt or 'Warning' in txt: return True
        if any('application/vnd.jupyter.widget' in k for k in o.get('data', {})): return True
    return False

def measure(root, per=False):
    nbs = sorted(Path(root, 'nbs').glob('*.ipynb'))
    tot = dict(lessons=0, shows_nothing=0, ends_print=0, exported=0, multi_def=0, public_funcs=0, docments=0,
               noisy=0, hide=0)
    rows = []
    for p in nbs:
        cs = cells(p)
        r = dict(nb=p.stem)
        les = [c for c in cs if is_lesson(c)]
        ex = [c for c in cs if c['cell_type'] == 'code' and is_export(c['src'])]
        pf = [f for c in ex for f in public_funcs(c['src'])]
        r.update(lessons=len(les), shows_nothing=sum(shows_nothing(c) for c in cs),
                 ends_print=sum(ends_in_print(c['src']) for c in les), exported=len(ex),
                 multi_def=sum(n_defs(c['src']) >= 2 for c in ex), public_funcs=len(pf),
                 docments=sum(d for _, _, d in pf), noisy=sum(noisy(c) for c in cs),
                 hide=sum('hide' in flags(c['src']) for c in cs if c['cell_type'] == 'code'))
        for k in tot: tot[k] += r[k]
        rows.append(r)
    if per:
        for r in rows: print(r)
    return tot

if __name__ == '__main__':
    args = [a for a in sys.argv[1:] if a != '--per']
    print(measure(args[0] if args else Path(__file__).resolve().parents[1], '--per' in sys.argv))

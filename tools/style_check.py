"""The house style, checked: lines of code within 120 characters, one statement per line (no `;`), exported notebook
cells of at most 30 lines, each followed by a cell that shows it working, and library notebooks that keep outputs.

`python tools/style_check.py` prints every breach as `path:line: what` and exits 1 when there is one."""
import io, json, sys, tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINE, MAX_CELL = 120, 30

def semicolons(src: str) -> list[int]:
    "Line numbers (1-based) of `;` used as a statement separator in Python source."
    try: toks = list(tokenize.generate_tokens(io.StringIO(src).readline))
    except (tokenize.TokenError, SyntaxError): return []
    return [t.start[0] for t in toks if t.type == tokenize.OP and t.string == ';']

def code_problems(src: str, where: str, first: int = 1) -> list[str]:
    "Long lines and semicolons of one piece of Python source."
    lines = enumerate(src.splitlines())
    out = [f'{where}:{first + i}: line of {len(l)} characters' for i, l in lines if len(l) > MAX_LINE]
    ipy = '\n'.join('' if l.lstrip().startswith(('%', '!')) else l for l in src.splitlines())
    return out + [f'{where}:{first + n - 1}: `;` joins two statements' for n in semicolons(ipy)]

def is_export(cell) -> bool:
    return cell['cell_type'] == 'code' and any(l.startswith('#| export') for l in cell['source'].splitlines()[:3])

def notebook_problems(path: Path, library: bool) -> list[str]:
    "Code style of every code cell; for a library notebook, the lesson shape too."
    cells, out, where = json.loads(path.read_text())['cells'], [], path.relative_to(ROOT)
    for c in cells: c['source'] = ''.join(c['source'])
    code = [c for c in cells if c['cell_type'] == 'code']
    for i, c in enumerate(code):
        out += code_problems(c['source'], f'{where} cell {c.get("id", i)}', 1)
    if not library: return out
    exported = [i for i, c in enumerate(cells) if is_export(c)]
    for k, i in enumerate(exported):
        c, n = cells[i], len(cells[i]['source'].splitlines())
        if n > MAX_CELL: out.append(f'{where} cell {c["id"]}: exported cell of {n} lines (at most {MAX_CELL})')
        nxt = exported[k + 1] if k + 1 < len(exported) else len(cells)
        shown = any(cells[j]['cell_type'] == 'code' for j in range(i + 1, nxt))
        if k and not shown: out.append(f'{where} cell {c["id"]}: exported cell with no cell after it that shows it')
    if not any(c.get('outputs') for c in code): out.append(f'{where}: no cell keeps its output')
    return out

def generated(src: str) -> str:
    "A module nbdev wrote, without the parts nbdev writes itself (the docstring from the title, `__all__`)."
    lines, out, in_all = src.splitlines(), [], False
    for i, l in enumerate(lines):
        in_all = l.startswith('__all__ = ') or (in_all and l.startswith(' '))
        head = i < 3 and not l.startswith(('#', 'from', 'import'))
        out.append('' if in_all or head else l)
    return '\n'.join(out)

def problems() -> list[str]:
    out = []
    for d in ('bilateral', 'tests', 'tools'):
        for p in sorted((ROOT / d).rglob('*.py')):
            if p.name == '_modidx.py': continue
            src = p.read_text()
            out += code_problems(generated(src) if d == 'bilateral' else src, str(p.relative_to(ROOT)))
    for p in sorted((ROOT / 'nbs').glob('*.ipynb')):
        out += notebook_problems(p, library=p.name != 'index.ipynb')
    for p in sorted((ROOT / 'nbs' / 'experiments').glob('*.ipynb')): out += notebook_problems(p, library=False)
    return out

if __name__ == '__main__':
    found = problems()
    print(*found, sep='\n')
    if found: sys.exit(f'style-check: {len(found)} breaches of the house style')
    print('style-check: lines within 120 characters, no `;`, exported cells short and shown, outputs kept')

"""Render nbs/index.ipynb to README.md (GitHub markdown) without Quarto, which cannot be installed here.

`python tools/readme.py --execute` first runs the notebook and stores its outputs (then run nbdev-clean)."""
import json, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INDEX = ROOT / 'nbs' / 'index.ipynb'

def _src(cell): return ''.join(cell['source'])

def _code(src): return '\n'.join(l for l in src.splitlines() if not l.startswith('#|')).strip()

def _outputs(cell):
    out = []
    for o in cell.get('outputs', []):
        if o['output_type'] == 'stream': out.append(''.join(o['text']))
        elif 'text/markdown' in o.get('data', {}): out.append(('MD', ''.join(o['data']['text/markdown'])))
        elif 'text/plain' in o.get('data', {}): out.append(''.join(o['data']['text/plain']))
    return out

def render(nb_path=INDEX) -> str:
    "The README text for a notebook."
    nb = json.loads(Path(nb_path).read_text())
    parts = ['<!-- Generated from nbs/index.ipynb by tools/readme.py: edit the notebook, not this file. -->']
    for cell in nb['cells']:
        src = _src(cell)
        if cell['cell_type'] == 'markdown':
            parts.append(src.strip())
            continue
        if cell['cell_type'] != 'code' or '#| hide' in src: continue
        if '#| echo: false' not in src and _code(src): parts.append(f'```python\n{_code(src)}\n```')
        for o in _outputs(cell): parts.append(o[1].strip() if isinstance(o, tuple) else f'```\n{o.rstrip()}\n```')
    return '\n\n'.join(parts) + '\n'

def execute(nb_path=INDEX, save=True):
    "Run the notebook in-process (as nbdev-test does) and return it with fresh outputs."
    from fastcore.nbio import read_nb, write_nb
    from execnb.shell import CaptureShell
    nb = read_nb(nb_path)
    CaptureShell().run_all(nb, exc_stop=True)
    if save: write_nb(nb, nb_path)
    return nb

if __name__ == '__main__':
    if '--execute' in sys.argv:
        execute()
        subprocess.run([str(Path(sys.executable).parent / 'nbdev-clean'), '--fname', str(INDEX)], check=True)
    (ROOT / 'README.md').write_text(render())

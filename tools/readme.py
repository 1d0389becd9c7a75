"""Render nbs/index.ipynb to README.md (GitHub markdown) without Quarto, which cannot be installed here."""
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

def _src(cell): return ''.join(cell['source'])

def _code(src):
    lines = [l for l in src.splitlines() if not l.startswith('#|')]
    return '\n'.join(lines).strip()

def _outputs(cell):
    out = []
    for o in cell.get('outputs', []):
        if o['output_type'] == 'stream': out.append(''.join(o['text']))
        elif 'text/markdown' in o.get('data', {}): out.append(('MD', ''.join(o['data']['text/markdown'])))
        elif 'text/plain' in o.get('data', {}): out.append(''.join(o['data']['text/plain']))
    return out

def render(nb_path=ROOT/'nbs'/'index.ipynb'):
    nb = json.loads(Path(nb_path).read_text())
    parts = ['<!-- Generated from nbs/index.ipynb by tools/readme.py: edit the notebook, not this file. -->']
    for cell in nb['cells']:
        src = _src(cell)
        if cell['cell_type'] == 'markdown': parts.append(src.strip()); continue
        if cell['cell_type'] != 'code' or '#| hide' in src: continue
        code = _code(src)
        if code and '#| echo: false' not in src: parts.append(f'```python\n{code}\n```')
        for o in _outputs(cell):
            if isinstance(o, tuple): parts.append(o[1].strip())
            else: parts.append(f'```\n{o.rstrip()}\n```')
    return '\n\n'.join(parts) + '\n'

if __name__ == '__main__': (ROOT/'README.md').write_text(render())

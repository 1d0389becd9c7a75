"Build nbs/16_lab.ipynb from tools/lab_draft.py (a scratch file of this branch, removed before the merge)."
import json, re, hashlib
src = open('tools/lab_draft.py').read()
cells = [{'cell_type': 'code', 'source': '#| default_exp lab'}]
cells.insert(0, {'cell_type': 'markdown', 'source': open('tools/lab_intro.md').read().strip()})
for chunk in re.split(r'^# %% ?', src, flags=re.M)[1:]:
    head, _, body = chunk.partition('\n')
    body = body.strip('\n')
    if head.startswith('md'):
        cells.append({'cell_type': 'markdown', 'source': body})
    elif head.startswith('export'):
        cells.append({'cell_type': 'code', 'source': '#| export\n' + body})
    else:
        flag = head.strip()
        cells.append({'cell_type': 'code', 'source': (f'#| {flag}\n' if flag else '') + body})
out = []
for i, c in enumerate(cells):
    cid = hashlib.sha1(f'{i}:{c["source"][:80]}'.encode()).hexdigest()[:8]
    d = {'cell_type': c['cell_type'], 'id': cid, 'metadata': {}, 'source': c['source'].splitlines(keepends=True)}
    if c['cell_type'] == 'code': d.update(execution_count=None, outputs=[])
    out.append(d)
nb = {'cells': out, 'metadata': {'kernelspec': {'display_name': 'python3', 'language': 'python', 'name': 'python3'}},
      'nbformat': 4, 'nbformat_minor': 5}
json.dump(nb, open('nbs/16_lab.ipynb', 'w'), indent=1, ensure_ascii=False)
open('nbs/16_lab.ipynb', 'a').write('\n')

"The repository's front door: its license, its citation, and notebooks light enough to open."
import json, re, tomllib
from pathlib import Path
import yaml

MAX_NOTEBOOK_BYTES = 2 * 2**20     # GitHub stops rendering notebooks well before 10 MB; readers open them in a browser

def _cff(root): return yaml.safe_load((root / 'CITATION.cff').read_text())

def test_citation_cff_parses_and_names_the_package_and_the_paper(root):
    cff = _cff(root)
    assert cff['cff-version'] == '1.2.0' and cff['type'] == 'software'
    assert cff['message'] and cff['title'].startswith('bilateral')
    assert all('name' in a or 'family-names' in a for a in cff['authors'])
    import bilateral
    assert cff['version'] == bilateral.__version__
    meta = tomllib.loads((root / 'pyproject.toml').read_text())['project']
    assert cff['repository-code'] == meta['urls']['Repository']
    paper, = [r for r in cff['references'] if 'Bilateral Trade' in r['title']]
    assert paper['type'] == 'article' and paper['authors']
    assert paper['title'] == 'Training Language Models for Bilateral Trade with Private Information'
    assert '2604.16472' in paper['url'] and paper['doi'] == '10.48550/arXiv.2604.16472'

def test_license_file_is_the_license_the_metadata_declares(root):
    declared = tomllib.loads((root / 'pyproject.toml').read_text())['project']['license']
    assert declared == 'Apache-2.0' == _cff(root)['license']
    text = (root / 'LICENSE').read_text()
    assert re.search(r'Apache License\s+Version 2\.0, January 2004', text)
    # the whole text: its nine sections and the appendix, not a pointer to it
    assert all(f'{i}. ' in text for i in range(1, 10)) and 'END OF TERMS AND CONDITIONS' in text
    assert 'APPENDIX: How to apply the Apache License to your work.' in text
    assert len(text) > 11_000

def test_every_notebook_is_light_enough_to_open(root):
    nbs = sorted((root / 'nbs').rglob('*.ipynb'))
    assert len(nbs) > 30
    heavy = {str(p.relative_to(root)): p.stat().st_size for p in nbs if p.stat().st_size > MAX_NOTEBOOK_BYTES}
    assert not heavy, f'notebooks over {MAX_NOTEBOOK_BYTES / 2**20:.0f} MB (draw fewer or smaller images): {heavy}'

def test_the_readme_is_short_and_its_links_lead_somewhere(root):
    text = (root / 'README.md').read_text()
    assert len(text.splitlines()) <= 250
    targets = set(re.findall(r'\]\(([^)#]+)(?:#[^)]*)?\)', text))
    assert {'nbs/details.ipynb', 'LICENSE', 'CITATION.cff', 'docs/GPU.md'} <= targets
    assert all((root / t).exists() for t in targets if not t.startswith('http')), targets

def test_the_details_page_keeps_the_recorded_seeds_table(root):
    "tools/seeds_table.py still writes the table the details page shows, from the recorded seeds."
    import pandas as pd, seeds_table
    table = seeds_table.table(pd.read_csv(root / 'data' / 'seeds' / 'offline.csv'))
    cells = json.loads((root / 'nbs' / 'details.ipynb').read_text())['cells']
    assert any(table in ''.join(c['source']) for c in cells if c['cell_type'] == 'markdown')

def test_the_readme_says_why_there_is_no_settings_ini(root):
    "One who knows nbdev 2 looks for settings.ini: the README says where nbdev 3's settings are, and there they are."
    text = ' '.join((root / 'README.md').read_text().split())
    assert 'no `settings.ini`: nbdev 3 reads its settings from `[tool.nbdev]` in `pyproject.toml`' in text
    assert not (root / 'settings.ini').exists()
    assert tomllib.loads((root / 'pyproject.toml').read_text())['tool']['nbdev']['lib_path'] == 'bilateral'

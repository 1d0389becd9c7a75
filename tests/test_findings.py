"The findings experiment runs through papermill on a store, and writes its headline table."
from pathlib import Path
import pandas as pd
from bilateral.report import _execute
from bilateral.tournament import TournamentSpec, run_tournament

AGENTS = ('boulware', 'linear', 'conceder', 'accommodating', 'haggler')

def test_findings_experiment_writes_the_headline_table(tmp_path):
    "A part of the ladder (so the notebook computes without asserting), 6 scenarios per pair, a small contrast run."
    run_tournament(TournamentSpec(AGENTS, 6, seed=2), tmp_path, progress=False)
    params = {'run_dir': str(tmp_path), 'n_boot': 100, 'contrast_games_per_pair': 3}
    _execute('findings', tmp_path / 'findings.ipynb', params, False)
    table = pd.read_csv(tmp_path / 'findings.csv')
    assert list(table['finding'].str[:3]) == ['(a)', '(b)', '(c)']
    md = (tmp_path / 'findings.md').read_text()
    assert md.startswith('| finding | measured (95 % CI) |') and md.count('\n') == 5
    assert 'assertions off' in (tmp_path / 'findings.ipynb').read_text()

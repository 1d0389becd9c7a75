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
    assert list(table['finding'].str[:3]) == ['(a)', '(b)', '(c)', '(c′', '(d)', '(e)']
    md = (tmp_path / 'findings.md').read_text()
    assert md.startswith('| finding | measured (95 % CI over scenarios) |') and md.count('\n') == 8
    assert 'assertions off' in (tmp_path / 'findings.ipynb').read_text()
    # `bilateral report` writes the same table for the run without the notebook
    from bilateral.findings import findings_table
    from bilateral.store import Store
    with Store(tmp_path, create=False) as st: rows = st.rows()
    again = findings_table(rows, 100, 0, contrast_games_per_pair=3)
    assert again.astype(str).values.tolist() == table.astype(str).values.tolist()

def test_report_writes_findings_only_where_the_agents_allow(tmp_path):
    "`write_report` writes findings.md for a run of the named agents with a non-proportional one, and none without."
    from bilateral.report import write_report
    with_all, without = tmp_path / 'all', tmp_path / 'without'
    run_tournament(TournamentSpec(AGENTS, 3, seed=1), with_all, progress=False)
    run_tournament(TournamentSpec(AGENTS[:4], 3, seed=1), without, progress=False)
    write_report(with_all, n_boot=20, figures=False)
    write_report(without, n_boot=20, figures=False)
    assert (with_all / 'findings.md').read_text().count('\n') == 8 and (with_all / 'findings.csv').exists()
    assert not (without / 'findings.md').exists()

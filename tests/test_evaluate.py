"""`evaluate` with the tiny model standing in for base, SFT and GRPO: the table covers every model and group, the
scenarios are the same for every model, its numbers are what the stores hold, the experiment runs through papermill."""
import json, math, os, sqlite3, subprocess, sys
from pathlib import Path
import pandas as pd
import pytest
from bilateral.evaluate import evaluate
from bilateral.store import Store

LABELS, SEEN, UNSEEN, GAMES, N_BOOT = ('base', 'sft', 'grpo'), ['boulware'], ['conceder'], 2, 200

@pytest.fixture(scope='module')
def evaluated(tiny_model, tmp_path_factory):
    "One evaluation of the tiny model under three labels, 2 scenarios per opponent, one seen and one unseen opponent."
    import torch
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    spec = f'hf:{tiny_model[0]}?window=4'
    models, out = {label: spec for label in LABELS}, tmp_path_factory.mktemp('evaluate')
    try: ev = evaluate(models, SEEN, UNSEEN, out, games_per_pair=GAMES, n_boot=N_BOOT, concurrency=4, figures=False)
    finally: torch.set_num_threads(threads)
    return models, out, ev

def stored_rows(out: Path) -> pd.DataFrame:
    "Every game of every run, read from the SQLite files themselves, with the label and group of its folder."
    recs = []
    for db in sorted(out.glob('runs/*/*/games.sqlite')):
        label, group = db.parent.parent.name, db.parent.name.split('-')[0]
        con = sqlite3.connect(f'file:{db}?mode=ro', uri=True)
        try: recs += [{**json.loads(r), 'label': label, 'group': group, 'index': i}
                      for r, i in con.execute('SELECT row, scenario_index FROM games')]
        finally: con.close()
    return pd.DataFrame(recs)

def model_side(df: pd.DataFrame, spec: str) -> pd.DataFrame:
    "One row per game: the role the model played there, its share (missing without a ZOPA) and whether it dealt."
    buyer = df['buyer'] == spec
    assert (buyer ^ (df['seller'] == spec)).all()                        # the model plays exactly one side
    share = df['buyer_share'].where(buyer, df['seller_share']).astype(float)
    return df.assign(role=buyer.map({True: 'buyer', False: 'seller'}), share=share, deal=df['deal'].astype(float))

def test_table_has_every_model_and_group_with_cis(evaluated):
    models, out, ev = evaluated
    t = ev['tables']['outcomes']
    keys = set(zip(t['model'], t['group'], t['role']))
    assert keys == {(m, g, r) for m in LABELS for g in ('seen', 'unseen') for r in ('buyer', 'seller', 'both')}
    assert list(dict.fromkeys(t['model'])) == list(LABELS)              # in the order given
    for m in ('share', 'deal'):
        finite = t[f'{m}_lo'].notna()
        assert finite[t['role'] == 'both'].all()
        assert ((t[f'{m}_lo'] <= t[m] + 1e-12) & (t[m] <= t[f'{m}_hi'] + 1e-12))[finite].all()
    both = t[t['role'] == 'both']
    assert (both['games'] == 2 * GAMES).all() and (both['scenarios'] == GAMES).all()
    summary = json.loads((out / 'summary.json').read_text())
    assert summary['games'] == summary['planned'] == len(LABELS) * 2 * 2 * GAMES
    md = (out / 'evaluation.md').read_text()
    assert all(f'| {m} |' in md for m in LABELS) and 'seen share' in md and 'unseen deal' in md

def test_every_model_plays_the_same_scenarios(evaluated):
    models, out, ev = evaluated
    df = stored_rows(out)
    assert len(df) == len(LABELS) * 2 * 2 * GAMES
    cols = ['index', 'seed', 'item_id', 'buyer_value', 'seller_cost', 'first_mover']
    per_model = {m: sorted(map(tuple, g[cols].drop_duplicates().values.tolist())) for m, g in df.groupby('label')}
    assert len(per_model) == len(LABELS) and len({json.dumps(v) for v in per_model.values()}) == 1
    assert len(per_model['base']) == GAMES                               # the scenarios of the seen and unseen runs too

def test_numbers_equal_a_recomputation_from_the_stores(evaluated):
    models, out, ev = evaluated
    df = model_side(stored_rows(out), next(iter(models.values())))
    t = ev['tables']['outcomes'].set_index(['model', 'group', 'role'])
    checked = 0
    for (label, group), g in df.groupby(['label', 'group']):
        for role, part in [('both', g), *g.groupby('role')]:
            row = t.loc[(label, group, role)]
            assert math.isclose(row['deal'], part['deal'].mean(), abs_tol=1e-9)
            share = part['share'].dropna()
            assert math.isclose(row['share'], share.mean(), abs_tol=1e-9) if len(share) else math.isnan(row['share'])
            assert row['games'] == len(part)
            checked += 1
    assert checked == len(LABELS) * 2 * 3
    gaps = ev['tables']['gaps']
    gaps = gaps[gaps['reference'] == 'base'].set_index(['model', 'group', 'measure'])   # each model against the base
    key = ['group', 'role', 'buyer', 'seller', 'seed']
    for label in LABELS[1:]:
        a = df[df['label'] == label].set_index(key)
        b = df[df['label'] == 'base'].set_index(key)
        for group in ('seen', 'unseen'):
            d = (a['share'] - b['share']).xs(group, level='group').dropna()
            assert math.isclose(gaps.loc[(label, group, 'share'), 'diff'], d.mean(), abs_tol=1e-9)

def test_experiment_notebook_runs_through_papermill(evaluated, root, tmp_path):
    "The notebook, on the same folder: it resumes (plays nothing), shows the same table, writes the figures."
    models, out, ev = evaluated
    before = len(stored_rows(out))
    params = {'models': models, 'seen': SEEN, 'unseen': UNSEEN, 'games_per_pair': GAMES, 'n_boot': N_BOOT,
              'threads': 1, 'out_dir': str(out)}
    nb = tmp_path / 'evaluate.ipynb'
    cmd = [sys.executable, '-m', 'papermill', str(root / 'nbs' / 'experiments' / 'evaluate.ipynb'), str(nb),
           '-y', json.dumps(params), '-k', 'python3']
    env = {**os.environ, 'PYTHONPATH': str(root)}
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert len(stored_rows(out)) == before
    summary = json.loads((out / 'summary.json').read_text())
    fresh = pd.DataFrame(summary['outcomes'])
    old = ev['tables']['outcomes']
    assert (fresh['share'] - old['share']).abs().max() < 1e-6 and list(fresh['model']) == list(old['model'])
    assert all((out / f).stat().st_size > 1000 for f in summary['figures']) and len(summary['figures']) == 3
    cells = json.loads(nb.read_text())['cells']
    assert not any(o.get('output_type') == 'error' for c in cells for o in c.get('outputs', []))
    text = json.dumps(cells)
    assert 'sft vs base, seen opponents: share' in text and 'tier spread of share' in text


def test_a_world_with_another_deadline_reaches_every_game_and_table(tmp_path):
    """`deadline` is played in every game of every run, and the world's name (`dollars-60s`) is in the summary, every
    table and the markdown; scripted agents stand in for the models."""
    ev = evaluate({'m': 'boulware'}, ['conceder'], ['linear'], tmp_path, games_per_pair=2, preset='dollars',
                  deadline=60, n_boot=10, figures=False)
    deadlines = set()
    for db in tmp_path.glob('runs/*/*/games.sqlite'):
        with Store(db.parent, create=False) as st: deadlines |= {t['rules']['deadline'] for _, t in st.transcripts()}
    assert deadlines == {60.0} and len(ev['rows']) == 8
    assert ev['summary']['world'] == 'dollars-60s' and ev['summary']['deadline'] == 60
    tables = [t for t in map(pd.read_csv, tmp_path.glob('tables/*.csv')) if len(t)]     # one model: no gaps
    assert len(tables) >= 4 and all(set(t['world']) == {'dollars-60s'} for t in tables)
    assert (tmp_path / 'evaluation.md').read_text().startswith('# Evaluation, dollars-60s world')


def test_a_world_without_a_zopa_is_evaluated_by_its_deals(tmp_path):
    """In `dollars-no-zopa` no price is good for both, so share is undefined in every game: the evaluation still runs
    through (it raised a KeyError from the paired gaps), its share gaps are empty (no scenario, no interval) and its
    deal-rate gaps are measured; scripted agents never take a loss there, so none of their games ends in a deal."""
    ev = evaluate({'base': 'boulware', 'sft': 'linear'}, ['conceder'], ['hardliner'], tmp_path, games_per_pair=4,
                  preset='dollars-no-zopa', deadline=60, n_boot=20, figures=False)
    assert len(ev['rows']) == 32 and not ev['rows']['has_zopa'].any() and not ev['rows']['deal'].any()
    gaps = ev['tables']['gaps']
    share, deal = gaps[gaps['measure'] == 'share'], gaps[gaps['measure'] == 'deal']
    assert len(share) == len(deal) == 2 and (share['scenarios'] == 0).all() and share['diff'].isna().all()
    assert (deal['scenarios'] == 4).all() and (deal['diff'] == 0).all()
    assert ev['summary']['world'] == 'dollars-no-zopa-60s'

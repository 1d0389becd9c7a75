"""The bargaining-sanity table on real stores: a constant-price agent is caught and boulware is not; a model that never
deals, or whose deals break IR, is flagged in the evaluation instead of called higher or lower; `bilateral report`
writes tables/sanity.csv; stores written before the offer counts existed still give a table."""
import json, math, subprocess, sys
from pathlib import Path
import pandas as pd
import pytest
from bilateral.agents import REGISTERED_BY, REGISTRY, register_agent
from bilateral.analysis import SANITY, sanity
from bilateral.evaluate import evaluate
from bilateral.metrics import game_row
from bilateral.play import play
from bilateral.protocol import ToolCall
from bilateral.scenarios import sample_scenarios
from bilateral.store import Store
from bilateral.strategies import Scripted, reservation_breaches
from bilateral.tournament import TournamentSpec, run_tournament

EXE = str(Path(sys.executable).parent / 'bilateral')

class Constant(Scripted):
    "Offers the same dollar price whatever the item and never accepts (the tiny models' habit, on purpose)."
    proportional = False
    def __init__(self, dollars: float): self.cents = round(dollars * 100)
    def decide(self): return self.offer(self.cents)

class Mute(Scripted):
    "Only waits: never offers, never accepts, never closes a deal."
    def decide(self): return [ToolCall('wait', {'seconds': 30})]

@pytest.fixture(scope='module', autouse=True)
def kinds():
    "The two broken kinds, known while this module's tests run (played in this process: workers=1)."
    register_agent('test-constant', lambda a: Constant(float(a or 44)), 'the same price whatever the item (tests)',
                   arg='DOLLARS')
    register_agent('test-mute', lambda a: Mute(), 'only waits (tests only)')
    yield
    for k in ('test-constant', 'test-mute'): del REGISTRY[k], REGISTERED_BY[k]

@pytest.fixture(scope='module')
def run_dir(tmp_path_factory):
    "A small stored tournament: boulware, the constant-price agent and random, 12 scenarios per pair, in this process."
    d = tmp_path_factory.mktemp('sanity-run')
    spec = TournamentSpec(('boulware', 'test-constant', 'random'), 12, seed=5)
    res = run_tournament(spec, d, progress=False, workers=1)
    assert res['failed'] == 0
    return d

@pytest.fixture(scope='module')
def table(run_dir):
    with Store(run_dir, create=False) as st: return sanity(st.rows()).set_index(['agent', 'role'])

def test_constant_price_is_caught_and_boulware_is_not(table):
    const, boul = table.loc['test-constant'], table.loc['boulware']
    assert (const['log_corr'] == 0).all() and (const['log_slope'] == 0).all() and (const['distinct_first'] == 1).all()
    assert (const['distinct_per_item'] < 0.2).all() and (const['items'] > 5).all()
    assert (boul.loc[['buyer', 'seller'], 'log_corr'] > 0.99).all()
    assert (boul.loc[['buyer', 'seller'], 'log_slope'] - 1).abs().max() < 0.01
    assert (boul.loc[['buyer', 'seller'], 'distinct_per_item'] > 0.8).all()
    assert (boul[['beyond_share', 'absurd_share', 'ir_of_deals', 'invalid_per_game']] == 0).all().all()
    assert (const['absurd_share'] > 0.1).all() and (const['ir_of_deals'] > 0.3).all()
    assert (table.loc['random', 'invalid_per_game'] > 0).all()

def test_numbers_match_a_count_over_the_stored_games(run_dir, table):
    "Games, deals, deal rate, first offers and IR violations recounted from the stored rows by hand."
    with Store(run_dir, create=False) as st: rows = st.rows()
    for agent in ('boulware', 'test-constant', 'random'):
        for role in ('buyer', 'seller'):
            mine = rows[rows[role] == agent]
            r = table.loc[(agent, role)]
            assert r['games'] == len(mine) and r['deals'] == mine['deal'].sum()
            assert math.isclose(r['deal_rate'], mine['deal'].mean())
            assert r['first_n'] == mine[f'{role}_anchor_list'].notna().sum()
            ir = mine[f'{role}_ir_violation'].sum() / mine['deal'].sum()
            assert math.isclose(r['ir_of_deals'], ir)
            offers = mine[f'{role}_n_offers'].sum()
            assert math.isclose(r['beyond_share'], mine[f'{role}_offers_beyond'].sum() / offers)
    both = table.xs('both', level='role')
    assert (both['games'] == table.xs('buyer', level='role')['games'] * 2).all()

def test_offers_beyond_counts_what_the_ladder_check_counts():
    "The offer count beyond the reservation agrees with `strategies.reservation_breaches` on random games."
    scs = sample_scenarios(8, seed=2)
    games = [play(sc, 'random:0.2', 'random', seed=i) for i, sc in enumerate(scs)]
    for g in games:
        row = game_row(g)
        breaches = [b for b in reservation_breaches(g) if ' offer ' in b]
        assert row['buyer_offers_beyond'] + row['seller_offers_beyond'] == len(breaches)
    assert sum(len(reservation_breaches(g)) for g in games) > 0

def test_rows_from_before_the_offer_counts(run_dir):
    "A store written before offers_beyond and offers_absurd existed: those shares are missing, the rest is there."
    with Store(run_dir, create=False) as st: rows = st.rows()
    old = rows.drop(columns=[c for c in rows if c.endswith(('_offers_beyond', '_offers_absurd'))])
    t = sanity(old)
    assert t['beyond_share'].isna().all() and t['absurd_share'].isna().all()
    new = sanity(rows)
    keep = [c for c in SANITY if c not in ('beyond_share', 'absurd_share')]
    pd.testing.assert_frame_equal(t[keep], new[keep])

def test_report_writes_the_sanity_table(run_dir):
    r = subprocess.run([EXE, 'report', str(run_dir), '--no-figures', '--n-boot', '50'], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert 'sanity.csv' in r.stdout
    t = pd.read_csv(run_dir / 'tables' / 'sanity.csv')
    assert list(t.columns) == ['agent', 'role', *SANITY]
    assert set(zip(t['agent'], t['role'])) == {(a, r) for a in ('boulware', 'test-constant', 'random')
                                               for r in ('buyer', 'seller', 'both')}
    assert 'tables/sanity.csv' in json.loads((run_dir / 'summary.json').read_text())['tables']
    assert (t.loc[t['agent'] == 'test-constant', 'log_corr'] == 0).all()

@pytest.fixture(scope='module')
def broken_eval(tmp_path_factory):
    "An evaluation of a working model (the reference), one that never deals and one that breaks IR."
    out = tmp_path_factory.mktemp('sanity-eval')
    models = {'base': 'conceder', 'mute': 'test-mute', 'const': 'test-constant'}
    return out, evaluate(models, ['hardliner'], ['split'], out, games_per_pair=8, n_boot=50, figures=False)

def test_a_model_that_never_deals_is_flagged(broken_eval):
    out, ev = broken_eval
    gaps = ev['tables']['gaps']
    mute = gaps[gaps['model'] == 'mute']
    assert len(mute) == 4 and (mute['direction'] == 'flagged: mute never closes a deal').all()
    const = gaps[(gaps['model'] == 'const') & (gaps['reference'] == 'base')]
    assert len(const) == 4 and const['direction'].str.startswith('flagged: const breaks IR in ').all()
    between = gaps[(gaps['model'] == 'const') & (gaps['reference'] == 'mute')]     # each model against the one before
    assert len(between) == 4 and between['direction'].str.contains('const breaks IR in .*; mute never closes').all()
    said = json.loads((out / 'summary.json').read_text())['findings']
    assert 'mute, seen opponents: never closes a deal; its comparisons are flagged, not read as higher or lower' in said
    gap_lines = [s for s in said if s.startswith(('mute vs', 'const vs'))]
    assert len(gap_lines) == 12 and all('(flagged: ' in s for s in gap_lines)
    assert not any(s.endswith(('(higher)', '(lower)', '(no clear difference)')) for s in gap_lines)
    san = pd.read_csv(out / 'tables' / 'sanity.csv')
    assert (san.loc[san['model'] == 'mute', 'deals'] == 0).all() and len(san) == 3 * 2 * 3
    assert '## Bargaining sanity' in (out / 'evaluation.md').read_text()

def test_the_flags_of_the_reference_count(broken_eval):
    "With the model that never deals as the reference, the working model's comparisons are flagged too."
    from bilateral.evaluate import model_gaps
    out, ev = broken_eval
    gaps = model_gaps(ev['rows'], reference='mute', n_boot=50, sanity=ev['tables']['sanity'])
    base = gaps[gaps['model'] == 'base']
    assert len(base) == 4 and (base['direction'] == 'flagged: mute never closes a deal').all()

"A fair game by default, and a ladder whose tier finding can fail: self-play symmetry, first mover, price scale."
import dataclasses, subprocess, sys
from pathlib import Path
import numpy as np
import pytest
from bilateral.core import Scenario
from bilateral.metrics import bootstrap_ci, game_row
from bilateral.play import play
from bilateral.scenarios import sample_scenarios
from bilateral.store import Store
from bilateral.strategies import LADDER

EXE = str(Path(sys.executable).parent / 'bilateral')
SYMMETRIC = ['linear', 'boulware', 'conceder']

@pytest.fixture(scope='module')
def default_run(tmp_path_factory):
    "`bilateral tournament` with its defaults (preset, first mover) over the three time-dependent agents."
    out = tmp_path_factory.mktemp('fair') / 'run'
    r = subprocess.run([EXE, 'tournament', '--agents', ','.join(SYMMETRIC), '--games-per-pair', '200',
                        '--out', str(out), '--quiet'], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    with Store(out, create=False) as st: return st.rows()

@pytest.mark.parametrize('agent', SYMMETRIC)
def test_symmetric_self_play_splits_the_surplus(default_run, agent):
    "On the default preset, each symmetric strategy's self-play buyer share has its 95 % CI inside 0.45-0.55."
    g = default_run[(default_run['buyer'] == agent) & (default_run['seller'] == agent)]
    assert len(g) == 200 and set(g['preset']) == {'symmetric'}
    for x in (g['buyer_share'], (g['buyer_share'] + g['seller_share']) / 2):
        m, lo, hi = bootstrap_ci(x.to_numpy(float))
        assert 0.45 <= lo and hi <= 0.55, (agent, m, lo, hi)

def test_default_tournament_alternates_the_first_mover(default_run):
    "Every pair plays half its paired games buyer-first and half seller-first, and each game records which."
    counts = default_run.groupby(['buyer', 'seller'])['first_mover'].value_counts().unstack()
    assert (counts['buyer'] == 100).all() and (counts['seller'] == 100).all()

def test_list_high_favours_the_seller():
    "The realistic preset keeps its documented bias: linear self-play gives the buyer well under half."
    scs = sample_scenarios(100, 'list-high', seed=3)
    shares = [game_row(play(sc, 'linear', 'linear', seed=i))['buyer_share'] for i, sc in enumerate(scs)]
    assert np.mean(shares) < 0.35

def scaled(sc: Scenario, k: int) -> Scenario:
    "The same scenario with every price multiplied by `k`."
    it = sc.item
    item = dataclasses.replace(it, listing_price=it.listing_price * k, low_price=it.low_price * k,
                               high_price=it.high_price * k)
    return dataclasses.replace(sc, item=item, buyer_value=sc.buyer_value * k, seller_cost=sc.seller_cost * k)

def _outcomes(buyer, seller, k, n=60):
    "(deal, buyer share) of `n` seeded games, every price multiplied by `k`."
    out = []
    for i, sc in enumerate(sample_scenarios(n, seed=21)):
        r = game_row(play(scaled(sc, k), buyer, seller, seed=i))
        out.append((r['deal'], r['buyer_share']))
    return out

@pytest.mark.parametrize('agent', [a for a in LADDER if a != 'haggler'])
def test_proportional_agents_ignore_the_price_scale(agent):
    "Multiplying every price by 100 leaves the games of a proportional agent the same (up to cent rounding)."
    for buyer, seller in ((agent, 'linear'), ('boulware', agent)):
        for (d1, s1), (d2, s2) in zip(_outcomes(buyer, seller, 1), _outcomes(buyer, seller, 100)):
            assert d1 == d2 and abs(s1 - s2) < 0.01, (buyer, seller, s1, s2)

def test_the_haggler_depends_on_the_price_scale():
    "Multiplying every price by 100 changes the haggler's games: its dollar steps become small against the prices."
    for buyer, seller in (('haggler', 'linear'), ('linear', 'haggler')):
        a, b = _outcomes(buyer, seller, 1), _outcomes(buyer, seller, 100)
        changed = sum(d1 != d2 or abs(s1 - s2) > 0.05 for (d1, s1), (d2, s2) in zip(a, b))
        assert changed >= len(a) // 2, (buyer, seller, changed)

"""The figures' fixes, checked on the chart specs, on what vl-convert renders, and on the data frames: the leaderboard's
row and panel order, the choice of price-path games, the price path's legends, and concession curves without
survivor bias."""
import re
import numpy as np
import pandas as pd
import pytest
import altair as alt
import vl_convert as vlc
from bilateral import plots
from bilateral.metrics import game_row
from bilateral.play import play
from bilateral.scenarios import sample_scenarios

# ---------------------------------------------------------------- leaderboard

def board(shares: dict) -> pd.DataFrame:
    "A leaderboard frame from {(agent, role): share}, intervals of +-0.05."
    recs = [{'agent': a, 'role': r, 'games': 10, 'share': s, 'share_lo': s - 0.05, 'share_hi': s + 0.05}
            for (a, r), s in shares.items()]
    return pd.DataFrame(recs)

def rendered_order(chart, names) -> tuple[list[str], list[str]]:
    "Agent labels top to bottom and every text that is a role name, in the order vl-convert's SVG draws them."
    svg = vlc.vegalite_to_svg(chart.to_dict())
    labels = re.findall(r'translate\((-?[\d.]+),(-?[\d.]+)\)[^>]*>([^<]+)</text>', svg)
    agents = [(float(y), n) for _, y, n in labels if n in names]
    assert len(agents) == len(set(names)), 'each agent labelled once, on the one shared axis'
    return [n for _, n in sorted(agents)], [n for _, _, n in labels if n in ('buyer', 'seller', 'both')]

def test_leaderboard_rows_best_first_by_both_row():
    lb = board({('alpha', 'buyer'): 0.1, ('alpha', 'seller'): 0.9, ('alpha', 'both'): 0.5,
                ('beta', 'buyer'): 0.7, ('beta', 'seller'): 0.7, ('beta', 'both'): 0.7,
                ('gamma', 'buyer'): 0.2, ('gamma', 'seller'): 0.2, ('gamma', 'both'): 0.2,
                ('delta', 'buyer'): 0.95, ('delta', 'seller'): 0.0, ('delta', 'both'): 0.3})
    lb = lb.sample(frac=1, random_state=3)                         # row order of the frame must not matter
    want = ['beta', 'alpha', 'delta', 'gamma']
    assert plots.agent_order(lb) == want
    ch = plots.leaderboard_chart(lb)
    spec = ch.to_dict()
    assert spec['facet']['column']['sort'] == ['buyer', 'seller', 'both']
    assert all(l['encoding']['y']['sort'] == want for l in spec['spec']['layer'])
    assert spec.get('resolve', {}).get('scale', {}).get('y') != 'independent'
    assert rendered_order(ch, set(want)) == (want, ['buyer', 'seller', 'both'])

def test_leaderboard_without_both_uses_mean_over_roles_and_keeps_rows_aligned():
    lb = board({('alpha', 'buyer'): 0.1, ('alpha', 'seller'): 0.9,    # mean 0.5
                ('beta', 'buyer'): 0.8, ('beta', 'seller'): 0.6,      # mean 0.7
                ('gamma', 'seller'): 0.6})                            # only a seller: mean 0.6
    want = ['beta', 'gamma', 'alpha']
    assert plots.agent_order(lb) == want
    ch = plots.leaderboard_chart(pd.concat([lb[lb['role'] == 'seller'].iloc[::-1], lb[lb['role'] == 'buyer']]))
    assert ch.to_dict()['facet']['column']['sort'] == ['buyer', 'seller']
    assert rendered_order(ch, set(want)) == (want, ['buyer', 'seller'])

def test_leaderboard_order_is_not_alphabetical_by_accident():
    lb = board({(a, r): s for a, s in [('a', 0.1), ('b', 0.3), ('c', 0.2)] for r in ('buyer', 'seller')})
    assert plots.agent_order(lb) == ['b', 'c', 'a']
    assert plots.agent_order(lb, 'share_hi') == ['b', 'c', 'a']

# ---------------------------------------------------------------- path_games

def game_rows() -> pd.DataFrame:
    "Games of six pairs with known mean buyer shares, some without a ZOPA."
    means = {('a', 'b'): 0.8, ('b', 'a'): 0.2, ('a', 'c'): 0.5, ('c', 'a'): 0.6, ('b', 'c'): 0.35, ('c', 'b'): 0.4,
             ('a', 'a'): 0.5, ('b', 'b'): 0.9, ('c', 'c'): 0.1}
    recs, k = [], 0
    for (b, s), m in means.items():
        for d in (-0.1, -0.01, 0.02, 0.05, 0.08):                  # median m + 0.02, mean m + 0.008
            recs.append({'game_id': f'g{k:03d}', 'buyer': b, 'seller': s, 'has_zopa': True, 'buyer_share': m + d,
                         'deal': True, 'seed': k})
            k += 1
        recs.append({'game_id': f'g{k:03d}', 'buyer': b, 'seller': s, 'has_zopa': False, 'buyer_share': np.nan,
                     'deal': False, 'seed': k})
        k += 1
    return pd.DataFrame(recs).sample(frac=1, random_state=1)

def pairs_of(rows, ids):
    r = rows.set_index('game_id').loc[ids]
    return list(zip(r['buyer'], r['seller']))

def test_path_games_spread_over_cross_play_pairs():
    rows = game_rows()
    ids = plots.path_games(rows, n=4)
    # cross-play by mean: ab .8, ca .6, ac .5, cb .4, bc .35, ba .2 -> indices 0, 2 (1.67), 3 (3.33), 5
    assert pairs_of(rows, ids) == [('a', 'b'), ('a', 'c'), ('c', 'b'), ('b', 'a')]
    shares = rows.set_index('game_id').loc[ids, 'buyer_share']
    assert np.allclose(shares, [0.82, 0.52, 0.42, 0.22])           # each pair's game closest to its median
    assert rows.set_index('game_id').loc[ids, 'has_zopa'].all()
    assert pairs_of(rows, plots.path_games(rows, n=2)) == [('a', 'b'), ('b', 'a')]

def test_path_games_self_play_fills_and_given_pairs():
    rows = game_rows()
    ids = plots.path_games(rows, n=8)
    assert pairs_of(rows, ids)[:6] == [('a', 'b'), ('c', 'a'), ('a', 'c'), ('c', 'b'), ('b', 'c'), ('b', 'a')]
    assert pairs_of(rows, ids)[6:] == [('b', 'b'), ('c', 'c')]     # highest and lowest of the self-play pairs
    assert len(set(ids)) == 8
    given = plots.path_games(rows, pairs=[('c', 'c'), ('x', 'y'), ('b', 'a')])
    assert pairs_of(rows, given) == [('c', 'c'), ('b', 'a')]

def test_path_games_on_real_rows_is_not_name_order():
    sc = sample_scenarios(6, 'mixed', 1)
    recs = []
    for i, s in enumerate(sc):
        for b, se in [('boulware', 'conceder'), ('conceder', 'boulware'), ('hardliner', 'conceder')]:
            recs.append(dict(game_row(play(s, b, se, seed=i)), game_id=f'{b}-{se}-{i}'))
    rows = pd.DataFrame(recs)
    ids = plots.path_games(rows, n=3)
    assert len(ids) == 3 and len({r[0] for r in pairs_of(rows, ids)}) > 1   # not all one agent as buyer
    means = rows[rows['has_zopa']].groupby(['buyer', 'seller'])['buyer_share'].mean()
    got = [means[p] for p in pairs_of(rows, ids)]
    assert got == sorted(got, reverse=True) and got[0] == means.max() and got[-1] == means.min()

# ---------------------------------------------------------------- price path legends

@pytest.fixture(scope='module')
def transcript():
    sc = sample_scenarios(1, 'mixed', 1)[0]
    return play(sc, 'boulware', 'conceder', seed=1).transcript

def legends(chart) -> list[dict]:
    return vlc.vegalite_to_vega(chart.to_dict())['legends']

def test_price_path_legends(transcript, tmp_path):
    assert transcript['outcome']['deal']
    ch = plots.price_path_chart(transcript)
    enc = [l['encoding'] for l in ch.to_dict()['layer']]
    assert enc[0]['fill']['scale']['domain'] == ['ZOPA', 'no ZOPA (gap)']
    assert enc[1]['color']['scale']['domain'] == ['buyer', 'seller']
    assert enc[2]['shape']['scale'] == {'domain': ['deal'], 'range': ['diamond']}
    assert all(e[c].get('legend', {}) is not None for e, c in zip(enc, ('fill', 'color', 'shape')))
    lg = legends(ch)
    assert [l.get('title') for l in lg] == ['between c and v', 'offers', None]
    svg = vlc.vegalite_to_svg(ch.to_dict())
    for label in ('ZOPA', 'no ZOPA (gap)', 'buyer', 'seller', 'deal'):
        assert f'>{label}</text>' in svg
    png = plots.save_chart(ch, tmp_path / 'path')['png']
    assert png.read_bytes()[:4] == b'\x89PNG' and png.stat().st_size > 10_000

def test_gap_band_and_stacked_paths_share_legends(transcript):
    sc = transcript['scenario']
    gap = dict(transcript, scenario=dict(sc, buyer_value=sc['seller_cost'] - 100),
               outcome={'reason': 'deadline', 'deal': False, 'price': None, 'by': None, 't': 180.0})
    ch = plots.price_path_chart(gap)
    assert ch.layer[0].data['band'].tolist() == ['no ZOPA (gap)'] and len(ch.layer) == 2
    assert [l.get('title') for l in legends(ch)] == ['between c and v', 'offers']
    stack = alt.vconcat(plots.price_path_chart(transcript), ch)
    assert len(legends(stack)) == 3                                 # one set for the stack, not one per game

# ---------------------------------------------------------------- concession curves

def toy(offers, value=100.0, cost=0.0, deadline=100.0, buyer='toy', seller='other') -> dict:
    "A transcript with the given (t, role, price) offers."
    log = [{'t': t, 'role': r, 'batch': i, 'tool': 'make_offer', 'arguments': {'price': p},
            'result': {'ok': True, 'price': p}} for i, (t, r, p) in enumerate(offers, 1)]
    return {'scenario': {'buyer_value': round(value * 100), 'seller_cost': round(cost * 100)},
            'rules': {'deadline': deadline}, 'agents': {'buyer': buyer, 'seller': seller}, 'log': log}

def in_bin_means(transcripts, bins=10) -> pd.Series:
    "The old curve: the mean progress of the offers made within each bin (only the games still running)."
    recs = []
    for t in transcripts:
        T, v = t['rules']['deadline'], t['scenario']['buyer_value'] / 100
        of = plots.offers_frame(t).query("role == 'buyer'")
        x0 = of['price'].iloc[0]
        recs += [{'bin': min(int(tt / T * bins), bins - 1), 'c': (x - x0) / (v - x0)}
                 for tt, x in zip(of['t'], of['price'])]
    return pd.DataFrame(recs).groupby('bin')['c'].mean()

def test_early_ending_game_makes_the_old_curve_dip_not_the_new():
    fast = toy([(5, 'buyer', 10), (15, 'buyer', 90)])                    # a deal at t = 20: no later offers
    slow = toy([(5, 'buyer', 10), (35, 'buyer', 20), (65, 'buyer', 30), (95, 'buyer', 40)])
    old = in_bin_means([fast, slow])
    assert old[1] > 0.8 and old[9] < 0.4 and old.diff().min() < -0.4        # the dip the old curve drew
    cc = plots.concession_curves([fast, slow]).query("role == 'buyer'")
    assert cc['games'].tolist() == [2] * 10 and cc['bin'].tolist() == list(range(10))
    assert cc['concession'].is_monotonic_increasing
    assert cc['concession'].iloc[-1] == pytest.approx((80 / 90 + 30 / 90) / 2)
    assert cc['time'].tolist() == pytest.approx([(b + 1) / 10 for b in range(10)])

def test_state_before_first_offer_is_zero_and_which_games_count():
    late = toy([(50, 'buyer', 10), (75, 'buyer', 55)])                   # first offer only in bin 5
    at_res = toy([(1, 'buyer', 100), (2, 'seller', 300)], cost=200)       # buyer opens at its value; seller once
    silent = toy([(3, 'seller', 300)], cost=200, seller='mute')           # buyer never offers
    cc = plots.concession_curves([late, at_res, silent])
    buyer = cc.query("role == 'buyer'")
    assert buyer['games'].tolist() == [1] * 10                             # only `late` measures the buyer
    assert buyer['concession'].tolist()[:7] == [0.0] * 7 and buyer['concession'].iloc[-1] == pytest.approx(0.5)
    seller = cc.query("role == 'seller'")
    assert set(seller['agent']) == {'other', 'mute'} and (seller['concession'] == 0).all()
    assert (seller['games'] == 1).all()

def test_real_games_count_in_every_bin(transcript):
    sc = sample_scenarios(4, 'mixed', 2)
    ts = [transcript] + [play(s, 'conceder', 'boulware', seed=i).transcript for i, s in enumerate(sc)]
    cc = plots.concession_curves(iter(ts), bins=8)
    assert (cc.groupby(['agent', 'role'])['games'].nunique() == 1).all()
    assert sorted(cc['bin'].unique()) == list(range(8))
    for (agent, role), g in cc.groupby(['agent', 'role']):
        finals = []
        for t in ts:
            of = plots.offers_frame(t).query('role == @role')
            r = t['scenario']['buyer_value' if role == 'buyer' else 'seller_cost'] / 100
            if t['agents'][role] == agent and len(of) and abs(of['price'].iloc[0] - r) > 1e-9:
                finals.append((of['price'].iloc[-1] - of['price'].iloc[0]) / (r - of['price'].iloc[0]))
        assert g['games'].iloc[-1] == len(finals) and g['concession'].iloc[-1] == pytest.approx(np.mean(finals))
    ch = plots.concession_chart(cc).to_dict()
    assert 'games' in [t['field'] for t in ch['spec']['encoding']['tooltip']]

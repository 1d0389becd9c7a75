"Metric values against hand-computed examples."
import math
import pytest
from bilateral.core import *
from bilateral.engine import Engine
from bilateral.protocol import Rules, ToolCall
from bilateral.play import GameResult
from bilateral.metrics import (outcome_metrics, role_behaviour, game_row, bootstrap_ci, leaderboard, role_table,
                               format_leaderboard)
from conftest import drive

ITEM = Item('chair', 'Office chair', 'office', 'Mesh office chair.', 20000, 15000, 24000)

def game(v, c, script, rules=Rules(latency=(1.0, 1.0))):
    "Play `script` for a buyer valuing the chair at `v` and a seller whose cost is `c` (cents): the game's result."
    eng = drive(Engine(Scenario(ITEM, v, c, 'mid'), rules), script)
    return GameResult(eng.scenario, eng.outcome, tuple(eng.events), eng.transcript(), {'buyer': 'b', 'seller': 's'}, 0,
                      {r.value: p.invalid for r, p in eng.parties.items()})

B, S = Role.BUYER, Role.SELLER

def test_deal_shares_and_efficiency():
    # v = 180, c = 100, p = 160: buyer 20/80 = 0.25, seller 60/80 = 0.75
    g = game(18000, 10000, [(S, [('make_offer', {'price': 160}), ('wait_for_response', {})]),
                            (B, [('accept_offer', {'offer_id': 'S1'})])],
             Rules(latency=(1.0, 1.0), first_mover='seller'))
    m = outcome_metrics(g)
    assert (m['price'], m['buyer_utility'], m['seller_utility']) == (160.0, 20.0, 60.0)
    assert m['buyer_share'] == pytest.approx(0.25) and m['seller_share'] == pytest.approx(0.75)
    assert m['efficiency'] == 1.0
    assert m['duration_s'] == 3.0 and m['n_events'] == 3   # offer at 1 s, wait at 2 s, accept at 3 s

def test_no_deal_is_zero_unconditional_and_missing_conditional():
    g = game(18000, 10000, [(B, [('make_offer', {'price': 90}), ('wait_for_response', {})]),
                            (S, [('quit_negotiation', {})])])
    m = outcome_metrics(g)
    got = (m['deal'], m['buyer_share'], m['seller_share'], m['efficiency'], m['end_reason'], m['ended_by'])
    assert got == (False, 0.0, 0.0, 0.0, 'quit', 'seller')
    lb = leaderboard([game_row(g)] * 2)
    assert lb['role'].tolist() == ['buyer', 'seller', 'both', 'both'] and lb['agent'].tolist() == ['b', 's', 'b', 's']
    assert (lb['share'] == 0).all() and (lb['gain_list'] == 0).all() and (lb['deal'] == 0).all()
    assert lb['share_if_deal'].isna().all() and lb['vs_self'].isna().all()   # no deal; no self-play game, no baseline

def test_no_zopa_shares_undefined_and_ir_violation():
    # v = 100 < c = 120; a deal at 110 is above the buyer's value and below the seller's cost: both violate
    g = game(10000, 12000, [(B, [('make_offer', {'price': 110}), ('wait_for_response', {})]),
                            (S, [('accept_offer', {'offer_id': 'B1'})])])
    m = outcome_metrics(g)
    assert math.isnan(m['buyer_share']) and math.isnan(m['efficiency'])
    assert m['buyer_ir_violation'] and m['seller_ir_violation']
    assert (m['buyer_utility'], m['seller_utility']) == (-10.0, -10.0)
    g = game(18000, 10000, [(B, [('make_offer', {'price': 190}), ('wait_for_response', {})]),
                            (S, [('accept_offer', {'offer_id': 'B1'})])])
    m = outcome_metrics(g)
    assert m['buyer_ir_violation'] and not m['seller_ir_violation'] and m['buyer_share'] == pytest.approx(-10 / 80)

def deal_at(p):
    "The seller asks `p` dollars for the chair (L = $200; v = $180, c = $100) and the buyer takes it."
    return game(18000, 10000, [(S, [('make_offer', {'price': p}), ('wait_for_response', {})]),
                               (B, [('accept_offer', {'offer_id': 'S1'})])],
                Rules(latency=(1.0, 1.0), first_mover='seller'))

def test_gain_list_is_the_gain_over_the_listing_price_in_every_game():
    t = role_table([game_row(deal_at(160))]).set_index('role')
    assert t['gain_list'].tolist() == pytest.approx([20 / 200, 60 / 200])
    assert t['share'].tolist() == pytest.approx([0.25, 0.75])
    # without a ZOPA the share is undefined but the gain over list is not: the buyer paid $10 over its value
    g = game(10000, 12000, [(B, [('make_offer', {'price': 110}), ('wait_for_response', {})]),
                            (S, [('accept_offer', {'offer_id': 'B1'})])])
    t = role_table([game_row(g)]).set_index('role')
    assert t['share'].isna().all() and t['gain_list'].tolist() == pytest.approx([-10 / 200, -10 / 200])

def test_leaderboard_both_roles_and_the_self_play_baseline():
    hi, lo = game_row(deal_at(160)), game_row(deal_at(120))      # buyer shares 0.25 and 0.75
    rows = [dict(hi, buyer='a', seller='a'), dict(lo, buyer='a', seller='b'), dict(lo, buyer='a', seller='b'),
            dict(hi, buyer='b', seller='a')]
    lb = leaderboard(rows, n_boot=200)
    assert list(zip(lb['role'], lb['agent'])) == [('buyer', 'a'), ('buyer', 'b'), ('seller', 'a'), ('seller', 'b'),
                                                  ('both', 'a'), ('both', 'b')]
    assert lb['games'].tolist() == [3, 1, 2, 2, 5, 3]
    assert lb['share'].tolist() == pytest.approx([1.75 / 3, 0.25, 0.75, 0.25, 3.25 / 5, 0.25])
    assert lb['gain_list'].tolist() == pytest.approx([0.7 / 3, 0.1, 0.3, 0.1, 1.3 / 5, 0.1])
    # baselines from the one self-play game: buyer 0.25, seller 0.75; 'both' weighs them by the agent's games in each
    # role: a has 3 as buyer and 2 as seller, b 1 and 2
    expected = [1.75 / 3 - 0.25, 0.0, 0.0, -0.5, 3.25 / 5 - (3 * 0.25 + 2 * 0.75) / 5, 0.25 - (0.25 + 2 * 0.75) / 3]
    assert lb['vs_self'].tolist() == pytest.approx(expected)
    base = lb['share'] - lb['vs_self']
    assert (lb['vs_self_lo'] + base).tolist() == pytest.approx(lb['share_lo'].tolist(), nan_ok=True)
    assert (lb['vs_self_hi'] + base).tolist() == pytest.approx(lb['share_hi'].tolist(), nan_ok=True)
    text = format_leaderboard(lb)
    # one scenario behind every row: no interval, each marked, and a note says why
    assert [l.split()[:2] for l in text.splitlines()[5:7]] == [['both', 'a'], ['both', 'b']]
    assert lb['scenarios'].tolist() == [1] * 6 and lb['thin'].all() and lb['share_lo'].isna().all()
    assert text.splitlines()[-1].startswith('* on fewer than')
    assert text.splitlines()[0].split()[6:9] == ['vs', 'self', 'gain/L'] and text.splitlines()[4].split()[6:8] == [
        '*', '-0.500']
    assert max(map(len, format_leaderboard(lb, lambda a: a * 40).splitlines())) <= 120

def test_concession_patience_and_waiting():
    # buyer offers 100 at t=1, waits 30 s (seller sleeps too), offers 120 at t=33, then 130:
    # concessions 20 and 10 of L=200
    g = game(18000, 10000, [(B, [('make_offer', {'price': 100}), ('wait', {'seconds': 30})]),
                            (S, [('make_offer', {'price': 190}), ('wait', {'seconds': 30})]),
                            (B, [('make_offer', {'price': 120}), ('wait_for_response', {})]),
                            (S, [('make_offer', {'price': 180}), ('wait_for_response', {})]),
                            (B, [('make_offer', {'price': 130}), ('wait_for_response', {})]),
                            (S, [('accept_offer', {'offer_id': 'B3'})])])
    b = role_behaviour(g, B)
    assert b['anchor'] == pytest.approx(100 / 180) and b['anchor_list'] == pytest.approx(0.5)
    assert b['concession'] == pytest.approx(0.15)
    assert b['concession_front'] == pytest.approx((20 / 30 + 30 / 30) / 2)
    t = [e.t for e in g.events if e.role is B]
    assert b['concession_rate'] == pytest.approx(0.15 / ((t[2] - t[0]) / 60))
    assert b['t_first_concession'] == t[1] and b['events_before_first_concession'] == 2
    assert (b['n_waits'], b['wait_s'], b['proposed_worse']) == (1, 30.0, 0)
    s = role_behaviour(g, S)
    assert s['t_accept'] == g.events[-1].t and s['events_before_accept'] == 5
    assert s['accepted_worse'] is False and s['concession'] == pytest.approx(0.05)

def test_explicit_rejection_then_worse_acceptance():
    g = game(18000, 10000, [(B, [('make_offer', {'price': 150}), ('wait_for_response', {})]),
                            (S, [('reject_offer', {'offer_id': 'B1'}), ('wait_for_response', {})]),
                            (B, [('make_offer', {'price': 140}), ('wait_for_response', {})]),
                            (S, [('accept_offer', {'offer_id': 'B2'})])])
    b, s = role_behaviour(g, B), role_behaviour(g, S)
    assert b['proposed_worse'] == 1          # 140 is worse for the seller than the rejected 150
    assert s['accepted_worse'] is True       # accepted 140 after rejecting 150

def test_bootstrap_ci_is_seeded_and_covers_mean():
    x = [0.1, 0.4, 0.35, 0.8, 0.55, 0.2]
    assert bootstrap_ci(x, seed=1) == bootstrap_ci(x, seed=1)
    m, lo, hi = bootstrap_ci(x)
    assert lo < m < hi and m == pytest.approx(sum(x) / len(x))

def test_leaderboard_interval_is_a_bootstrap_over_scenarios():
    "One leaderboard interval recomputed by resampling whole scenarios with plain pandas, draw for draw."
    import numpy as np, pandas as pd
    from bilateral.tournament import round_robin
    rows = pd.DataFrame([game_row(r) for r in round_robin(['boulware', 'conceder', 'linear'], 12, seed=5)])
    lb = leaderboard(rows, n_boot=300, seed=4).set_index(['agent', 'role'])
    rt = role_table(rows)
    mine = rt[rt['agent'] == 'conceder'].dropna(subset=['share'])   # 'both': a scenario's two roles drawn together
    seeds = sorted(mine['seed'].unique())
    draws = np.random.default_rng(4).integers(0, len(seeds), (300, len(seeds)))
    means = [pd.concat([mine[mine['seed'] == seeds[i]] for i in d])['share'].mean() for d in draws]
    row = lb.loc[('conceder', 'both')]
    assert (row['games'], row['scenarios'], bool(row['thin'])) == (72, 12, False)   # 3 opponents x 2 roles x 12
    assert [row['share_lo'], row['share_hi']] == pytest.approx(list(np.quantile(means, [0.025, 0.975])), abs=1e-12)
    # the games' bootstrap gives another interval on the same rows
    assert bootstrap_ci(mine['share'], 300, 4)[1:] != pytest.approx((row['share_lo'], row['share_hi']), abs=1e-3)

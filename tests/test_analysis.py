"The analysis functions on data made to test them: the tier test's unit is the scenario; edge cases of real runs."
from dataclasses import replace
import numpy as np
import pandas as pd
import pytest
from bilateral.metrics import game_row, role_table
from bilateral.play import play
from bilateral.scenarios import sample_scenarios
from bilateral.tournament import round_robin
from bilateral.analysis import tier_spread, bradley_terry, paired_comparison, _spreads

TEMPLATE = game_row(play(sample_scenarios(1, seed=0)[0], 'boulware', 'conceder', seed=0))

def synthetic(effects: dict, games: int, noise: float = 0.0, seed: int = 0) -> list[dict]:
    """Game rows of agent 'a' as buyer: scenario `s` of tier `t` (effects[t] lists the scenarios' mean shares) played
    against `games` opponents, one game each, the share varying by at most `noise` around the scenario's."""
    rng = np.random.default_rng(seed)
    rows, s = [], 0
    for tier, means in effects.items():
        for m in means:
            for k in range(games):
                x = m + rng.uniform(-noise, noise)
                rows.append(dict(TEMPLATE, seed=s, tier=tier, buyer='a', seller=f'o{k}', buyer_share=x,
                                 seller_share=1 - x))
            s += 1
    return rows

def game_level_p(rows: list[dict], n_perm: int = 1000, seed: int = 0) -> float:
    "The old test: the tier labels of agent a's games as buyer shuffled game by game."
    rt = role_table(rows)
    g = rt[(rt['agent'] == 'a') & (rt['role'] == 'buyer')]
    codes, names = pd.factorize(g['tier'])
    v = g['share'].to_numpy(float)
    obs = _spreads(v, codes[None, :], len(names))[0]
    rng = np.random.default_rng(seed)
    perm = _spreads(v, np.stack([rng.permutation(codes) for _ in range(n_perm)]), len(names))
    return float((1 + np.sum(perm >= obs - 1e-12)) / (1 + n_perm))

def a_buyer(ts: pd.DataFrame) -> pd.Series:
    "Agent a's row as buyer (a sorts first, so its shuffles are the first drawn from the seed)."
    return ts.set_index(['agent', 'role']).loc[('a', 'buyer')]

# Two scenarios per tier; the tiers differ only through which scenarios they drew (low 0.1 and 0.5, mid 0.2 and 0.6,
# high 0.3 and 0.7): two thirds of the ways to split six scenarios into three pairs give a spread at least as large.
CLUSTERED = {'low': [0.1, 0.5], 'mid': [0.2, 0.6], 'high': [0.3, 0.7]}

def test_a_tier_effect_carried_by_few_scenarios_is_not_significant():
    rows = synthetic(CLUSTERED, games=40, noise=0.02)
    r = a_buyer(tier_spread(rows, n_perm=1000))
    assert (r['scenarios'], r['games']) == (6, 240)
    assert r['spread'] == pytest.approx(0.2, abs=0.02)
    assert game_level_p(rows) < 0.01          # 240 games shuffled one by one: the old test called this significant
    assert r['p_value'] > 0.05                # six scenarios shuffled: it is not

def test_games_of_a_scenario_move_together():
    # the same scenario means from 1 game or 40 games per scenario give the same test and the same intervals
    one, many = (a_buyer(tier_spread(synthetic(CLUSTERED, games=n), n_perm=500, seed=3)) for n in (1, 40))
    cols = ['share_low', 'share_low_lo', 'share_low_hi', 'share_high', 'spread', 'p_value', 'scenarios']
    assert many[cols].tolist() == pytest.approx(one[cols].tolist(), rel=1e-12)
    assert (one['games'], many['games']) == (6, 240)

def test_a_real_tier_effect_is_significant_with_intervals_apart():
    rng = np.random.default_rng(1)
    effects = {t: list(m + rng.normal(0, 0.05, 10)) for t, m in (('low', 0.2), ('mid', 0.4), ('high', 0.6))}
    r = a_buyer(tier_spread(synthetic(effects, games=5, noise=0.05), n_perm=1000))
    assert r['p_value'] < 0.01 and r['scenarios'] == 30
    assert r['share_low_lo'] < r['share_low'] < r['share_low_hi'] < r['share_mid_lo']
    assert r['share_mid_hi'] < r['share_high_lo'] < r['share_high'] < r['share_high_hi']

def test_tier_spread_on_gain_list():
    ts = tier_spread(synthetic(CLUSTERED, games=3), n_perm=50, measure='gain_list')
    assert {'gain_list_low', 'gain_list_mid_lo', 'gain_list_high_hi'} <= set(ts.columns)
    assert not any(c.startswith('share') for c in ts.columns)
    # every synthetic game copies one real game, so its gain over list is the same everywhere: no spread
    assert (ts['spread'] == 0).all() and (ts['p_value'] == 1).all()

def no_zopa_rows(agents=('boulware', 'conceder'), n=3) -> list[dict]:
    "Real games on scenarios turned round so that the value is at most the cost."
    flip = lambda sc: replace(sc, buyer_value=min(sc.buyer_value, sc.seller_cost),
                              seller_cost=max(sc.buyer_value, sc.seller_cost))
    return [game_row(play(flip(sc), b, s, seed=i)) for i, sc in enumerate(sample_scenarios(n, seed=2))
            for b in agents for s in agents]

def test_bradley_terry_without_any_zopa_game():
    rows = no_zopa_rows()
    assert role_table(rows)['share'].isna().all()
    bt = bradley_terry(rows, n_boot=20)
    assert list(bt.columns) == ['agent', 'rating', 'lo', 'hi', 'matches']
    assert bt['agent'].tolist() == ['boulware', 'conceder'] and bt[['rating', 'lo', 'hi']].isna().all().all()
    assert (bt['matches'] == 0).all()
    ts = tier_spread(rows, n_perm=10)                # no share: an empty table with its columns
    assert len(ts) == 0 and {'share_low', 'p_value', 'scenarios'} <= set(ts.columns)

def test_paired_comparison_of_yes_no_measures():
    rows = pd.DataFrame([game_row(r) for r in round_robin(['boulware', 'hardliner', 'tit-for-tat'], 10, 'mixed', 4)])
    rt = role_table(rows)
    for measure in ('deal', 'ir_violation'):
        pc = paired_comparison(rows, 'buyer', measure=measure, n_boot=100).set_index(['a', 'b'])
        rate = rt[rt['role'] == 'buyer'].groupby('agent')[measure].mean()
        assert len(pc) == 3 and (pc['pairs'] == 30).all()
        for (a, b), d in pc[f'{measure}_diff'].items(): assert d == pytest.approx(rate[a] - rate[b])
    assert paired_comparison(rows, 'seller', measure='deal')['deal_diff'].abs().max() > 0

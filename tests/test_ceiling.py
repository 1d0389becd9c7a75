"The best-response ceiling: never below what any ladder agent got, reproduced by replaying its plan, right by hand."
import math
import pandas as pd
import pytest
from bilateral.ceiling import Plan, best_response, ceiling_table, play_plan, share_of
from bilateral.core import Role
from bilateral.metrics import game_row, role_table
from bilateral.play import play
from bilateral.protocol import Rules
from bilateral.strategies import LADDER
from bilateral.tournament import TournamentSpec, plan, round_robin

SPEC = TournamentSpec(tuple(LADDER), 3, seed=0, first_mover='alternate')    # the offline profile's first scenarios
TASKS = {t.seed: t for t in plan(SPEC)}


def _game(t, agent: str, opp: str, role: Role):
    "A real game of `agent` in `role` against `opp` on task `t`'s scenario, seed and rules."
    pair = (agent, opp) if role is Role.BUYER else (opp, agent)
    return play(t.scenario, *pair, t.rules, t.seed)


def test_ceiling_is_above_every_ladder_agent_and_replays():
    "Against each opponent, in each role and scenario: every ladder agent's real share <= ceiling = replayed plan."
    for t in TASKS.values():
        for opp in LADDER:
            for role in Role:
                ceil, p = best_response(opp, t.scenario, role, t.rules, seed=t.seed)
                assert p.method == 'exact' and 0.9 < ceil <= 1
                got = max(share_of(_game(t, a, opp, role), role) for a in LADDER)
                assert got <= ceil, (opp, role, got, ceil)
                r, used = play_plan(p.steps, opp, t.scenario, role, t.rules, t.seed)
                assert (share_of(r, role), r.outcome.price, used) == (ceil, p.price, len(p.steps))


def test_hand_computed_linear_and_whole_surplus():
    "Scenario 0 (bicycle helmet: L $45, v $61.75, c $35.89): the linear seller's target at 179.40 s, and share 1."
    t = next(iter(TASKS.values()))
    v, c = t.scenario.buyer_value, t.scenario.seller_cost
    assert (t.scenario.item.listing_price, v, c, t.rules.first_mover) == (4500, 6175, 3589, 'buyer')
    ceil, p = best_response('linear', t.scenario, 'buyer', seed=t.seed)
    assert p.price == round(6750 + (3589 - 6750) * 179.40 / 180) == 3600           # anchor 1.5 L, linear to cost
    assert ceil == pytest.approx((6175 - 3600) / (6175 - 3589))
    for opp in ('accommodating', 'hardliner', 'haggler', 'split', 'tit-for-tat'):
        share, p = best_response(opp, t.scenario, 'seller', seed=t.seed)
        assert (share, p.price, p.method) == (1.0, v, 'exact')                      # the buyer pays its whole value


def test_no_plan_one_cent_better_against_a_time_dependent_opponent():
    "Any number of passes, any sleep, then an offer one cent better than the ceiling's: never accepted."
    t = next(iter(TASKS.values()))
    for opp in ('boulware', 'conceder'):
        ceil, p = best_response(opp, t.scenario, 'buyer', t.rules, seed=t.seed)
        k = sum(s == ('pass',) for s in p.steps)
        for passes in range(max(0, k - 3), k + 4):
            for sleep in [None] + [x / 4 + 0.01 for x in range(0, 520, 9)]:
                steps = (('pass',),) * passes + ((('sleep', sleep),) if sleep else ()) + (('offer', p.price - 1),)
                r, _ = play_plan(steps, opp, t.scenario, 'buyer', t.rules, t.seed)
                assert share_of(r, 'buyer') <= ceil, (opp, passes, sleep)


def test_search_elsewhere():
    "A fuzzer is searched, not exact (and can give more than the whole surplus); so is a game under older rules."
    t = next(iter(TASKS.values()))
    share, p = best_response('random', t.scenario, 'buyer', seed=t.seed)
    assert p.method == 'searched' and share > 1
    old = Rules(counter_rejects=False, wake_on_pass=False)
    share, p = best_response('linear', t.scenario, 'buyer', old, seed=t.seed)
    assert p.method == 'searched' and 0 <= share <= 1
    share, p = best_response('boulware', t.scenario.__class__(t.scenario.item, 3000, 3589, 'low'), 'buyer')
    assert math.isnan(share) and p == Plan((), None, 'exact', 'no ZOPA: the share is undefined')


def test_table_matches_game_rows():
    "The table from a spec and from the run's own game rows agree, and every agent's share is under its row."
    tab = ceiling_table(SPEC)
    assert len(tab) == 3 * len(LADDER) * 2 and set(tab['method']) == {'exact'}
    rows = pd.DataFrame([game_row(g) for g in round_robin(LADDER, games_per_pair=3, seed=0)])
    again = ceiling_table(rows, opponents=['boulware', 'split'])
    key = ['opponent', 'role', 'seed']
    both = again.merge(tab, on=key, suffixes=('', '_spec'))
    assert len(both) == 3 * 2 * 2 and (both['ceiling'] == both['ceiling_spec']).all()
    rt = role_table(rows).merge(tab[key + ['ceiling']], on=key)
    assert len(rt) == len(rows) * 2 and (rt['share'] <= rt['ceiling']).all()

"Properties of the scripted ladder over many seeded games."
import itertools
import numpy as np
from bilateral.play import play
from bilateral.metrics import game_row, role_table
from bilateral.scenarios import sample_scenarios, PRESETS
from bilateral.strategies import LADDER, reservation_breaches
from bilateral.core import derive_seed

def test_no_ir_violation_over_5000_games():
    "No ladder agent offers or accepts beyond its reservation, in 5,000 games over all pairings and presets."
    pairs, presets = list(itertools.product(LADDER, LADDER)), list(PRESETS)
    n, rows = 0, []
    for k in range(5000):
        b, s = pairs[k % len(pairs)]
        sc = sample_scenarios(k // len(pairs) + 1, presets[k % len(presets)], seed=k % 7)[-1]
        r = play(sc, b, s, seed=derive_seed('ir', k))
        assert reservation_breaches(r) == [], (b, s, k)
        rows.append(game_row(r))
        n += 1
    roles = role_table(rows)
    assert n == 5000
    assert not roles['ir_violation'].any()
    assert roles['proposed_worse'].sum() == 0 and not roles['accepted_worse'].any()
    assert roles['invalid_calls'].sum() == 0

def _buyer_share(buyer, seller, n=150):
    "The buyer's mean share over `n` seeded games of `buyer` against `seller`."
    games = (play(sc, buyer, seller, seed=i) for i, sc in enumerate(sample_scenarios(n, seed=5)))
    return np.mean([game_row(g)['buyer_share'] for g in games])

def test_boulware_beats_conceder_as_buyer():
    "Boulware buyer vs conceder seller earns a higher buyer share than conceder buyer vs boulware seller."
    strong, weak = _buyer_share('boulware', 'conceder'), _buyer_share('conceder', 'boulware')
    assert strong > weak + 0.2, (strong, weak)

def test_accommodating_buyer_does_worst():
    "Averaged over every seller of the ladder, the accommodating buyer keeps the smallest share."
    shares = {a: np.mean([_buyer_share(a, s, 30) for s in LADDER]) for a in LADDER}
    assert min(shares, key=shares.get) == 'accommodating', shares

def test_patience_hardliner_waits_and_gains():
    "The hardliner waits (patience) and beats the accommodating buyer against the same sellers."
    assert _buyer_share('hardliner', 'linear', 60) > _buyer_share('accommodating', 'linear', 60)

def test_random_fuzzer_games_all_end_with_a_reason():
    "Games of random agents end with a scored reason, a price exactly when they end in a deal, and the accepting party."
    reasons = set()
    for i, sc in enumerate(sample_scenarios(300, 'mixed', seed=9)):
        o = play(sc, 'random:0.5', 'random:0.3', seed=i).outcome
        assert o.reason.scored and (o.price is not None) == o.deal, (i, o)
        assert o.by is not None or not o.deal, (i, o)
        reasons.add(o.reason.value)
    assert {'invalid_calls', 'deal'} <= reasons

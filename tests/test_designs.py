"Tournament designs that remove nuisance by construction: both first movers in each scenario, antithetic pairs."
import numpy as np
import pandas as pd
from bilateral.tournament import TournamentSpec, plan, run_tournament
from bilateral.scenarios import mirror
from bilateral.store import Store
from bilateral.analysis import paired_comparison, _win_matrices
from bilateral.findings import first_mover_gap, paired_gap
from bilateral.ceiling import regret_table

AGENTS = ('boulware', 'conceder', 'accommodating')

def test_both_first_movers_play_each_scenario_twice_on_its_seed():
    tasks = list(plan(TournamentSpec(AGENTS, 6, seed=3, first_mover='both')))
    assert len(tasks) == 9 * 6 and len({t.game_id for t in tasks}) == len(tasks)
    by = pd.DataFrame([(t.buyer, t.seller, t.seed, t.rules.first_mover, t.scenario) for t in tasks],
                      columns=['b', 's', 'seed', 'mover', 'sc'])
    assert by['seed'].nunique() == 3                                   # 6 games a pair: 3 scenarios, each twice
    per = by.groupby(['b', 's', 'seed'])['mover'].apply(sorted)
    assert all(m == ['buyer', 'seller'] for m in per)
    assert all(g['sc'].nunique() == 1 for _, g in by.groupby('seed'))   # the same scenario both times

def test_antithetic_pairs_cancel_the_sample_tilt():
    tasks = list(plan(TournamentSpec(AGENTS, 8, seed=4, antithetic=True)))
    scs = [t.scenario for t in tasks if (t.buyer, t.seller) == AGENTS[:2]]
    assert all(scs[i + 1] == mirror(scs[i]) for i in range(0, 8, 2))
    assert sum((s.buyer_value + s.seller_cost) - 2 * s.item.listing_price for s in scs) == 0
    plain = [t.scenario for t in plan(TournamentSpec(AGENTS, 8, seed=4)) if (t.buyer, t.seller) == AGENTS[:2]]
    assert sum((s.buyer_value + s.seller_cost) - 2 * s.item.listing_price for s in plain) != 0

def test_the_analysis_reads_a_both_run_by_scenario(tmp_path):
    run_tournament(TournamentSpec(AGENTS, 8, seed=5, first_mover='both', antithetic=True), tmp_path, progress=False)
    with Store(tmp_path, create=False) as st: rows = st.rows()
    assert len(rows) == 9 * 8
    fm = first_mover_gap(rows, 200).set_index(['agent', 'role'])
    assert fm.loc[('all', 'both'), ['scenarios_first', 'scenarios_second']].tolist() == [4, 4]  # within scenarios
    pc = paired_comparison(rows, 'buyer', n_boot=100)
    assert (pc['pairs'] == 3 * 4).all() and (pc['scenarios'] == 4).all()   # a scenario's two games averaged
    g = paired_gap(rows, 'boulware', 'conceder', n_boot=100)
    assert (g['pairs'], g['scenarios']) == (2 * 3 * 4, 4)
    _, W = _win_matrices(rows)
    assert all(np.trace(w) == 0 for w in W)                               # no agent plays itself in a match
    reg = regret_table(rows, 100)
    roles, both = reg[reg['role'] != 'both'], reg[reg['role'] == 'both']
    assert (roles['games'] == 3 * 8).all() and (both['games'] == 2 * 3 * 8).all()   # every game has its ceiling
    assert (reg['regret'] >= -1e-12).all()

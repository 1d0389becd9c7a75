"The tournament runner and store under real processes: kill -9, Ctrl-C, concurrent readers, resume, report, papermill."
import json, os, signal, sqlite3, subprocess, sys, time
from pathlib import Path
import pandas as pd
import pytest
from conftest import child, stored
from bilateral.store import Store
from bilateral.tournament import TournamentSpec, plan, pairings, run_tournament
from bilateral.report import write_report

EXE = str(Path(sys.executable).parent / 'bilateral')
LADDER = 'boulware,linear,conceder,tit-for-tat,accommodating,hardliner,split'
ARGS = ['tournament', '--agents', LADDER, '--games-per-pair', '30', '--seed', '5', '--preset', 'mixed', '--quiet']
N = 49 * 30

def start(out):
    return subprocess.Popen([EXE, *ARGS, '--out', str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

# Kill -9 and Ctrl-C tests run `bilateral` with the `held` agent (tests/held_cli.py): with the hold set, the run can
# never finish before the signal lands, whatever the machine's speed; without it, the same command plays every game.
HELD = [sys.executable, str(Path(__file__).parent / 'held_cli.py'), 'tournament', '--agents',
        'held,boulware,linear,conceder,tit-for-tat', '--games-per-pair', '40', '--seed', '5', '--preset', 'mixed',
        '--quiet']
HELD_N = 25 * 40

def start_held(out, hold_after=200):
    "The held command as a child to signal (default SIGINT handling; killed if the test fails)."
    env = {**os.environ, 'BILATERAL_TEST_HOLD_AFTER': str(hold_after)}
    return child([*HELD, '--out', str(out)], env=env)

def run_held(out):
    env = {k: v for k, v in os.environ.items() if k != 'BILATERAL_TEST_HOLD_AFTER'}
    return subprocess.run([*HELD, '--out', str(out)], capture_output=True, text=True, timeout=600, env=env)

def wait_for(out, n, proc, limit=120):
    t0, seen = time.time(), []
    while time.time() - t0 < limit:
        c = stored(out)
        seen.append(c)
        if c >= n or proc.poll() is not None: return seen
        time.sleep(0.02)
    raise AssertionError('timed out')

def snapshot(out):
    with Store(out, create=False) as st:
        return st.rows().sort_values('game_id').reset_index(drop=True), dict(st.transcripts())

@pytest.fixture(scope='module')
def reference(tmp_path_factory):
    "An uninterrupted run of the same command."
    out = tmp_path_factory.mktemp('ref')
    r = subprocess.run([EXE, *ARGS, '--out', str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return out, snapshot(out)

@pytest.fixture(scope='module')
def held_reference(tmp_path_factory):
    "An uninterrupted run of the `held` command."
    out = tmp_path_factory.mktemp('held-ref')
    r = run_held(out)
    assert r.returncode == 0, r.stderr
    return snapshot(out)

def test_kill_9_then_resume_loses_and_duplicates_nothing(tmp_path, held_reference):
    out = tmp_path / 'run'
    with start_held(out) as proc:
        seen = wait_for(out, 150, proc)
        assert proc.poll() is None, proc.communicate()[1][-2000:]   # the hold keeps it running: no race with the kill
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    killed_at = stored(out)
    assert 150 <= killed_at < HELD_N
    assert seen == sorted(seen)                                   # a concurrent reader saw the count only grow
    r = run_held(out)
    assert r.returncode == 0, r.stderr
    assert f'{HELD_N}/{HELD_N} games stored' in r.stdout and f'({HELD_N - killed_at} played now' in r.stdout
    con = sqlite3.connect(out / 'games.sqlite')
    assert con.execute('SELECT COUNT(*), COUNT(DISTINCT game_id) FROM games').fetchone() == (HELD_N, HELD_N)
    rows, transcripts = snapshot(out)
    pd.testing.assert_frame_equal(rows, held_reference[0])
    assert transcripts == held_reference[1]

def test_ctrl_c_keeps_finished_games_and_exits_cleanly(tmp_path, held_reference):
    out = tmp_path / 'run'
    with start_held(out) as proc:
        wait_for(out, 150, proc)
        assert proc.poll() is None
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and 'Traceback' not in err, err
    n = stored(out)
    assert f'interrupted: {n} finished games are stored' in err and 150 <= n < HELD_N
    r = run_held(out)
    assert r.returncode == 0 and stored(out) == HELD_N, r.stderr
    pd.testing.assert_frame_equal(snapshot(out)[0], held_reference[0])

def test_report_reads_while_a_run_goes_on(tmp_path):
    out = tmp_path / 'run'
    proc = start(out)
    try:
        wait_for(out, 100, proc)
        r = subprocess.run([EXE, 'report', str(out), '--no-figures', '--n-boot', '50'], capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr
        assert 'Bradley-Terry' in r.stdout
    finally:
        proc.kill()
        proc.wait()

def test_report_regenerates_identical_numbers(reference, tmp_path):
    out = reference[0]
    write_report(out, n_boot=200, figures=False)
    tables = {p.name: p.read_bytes() for p in (out / 'tables').glob('*.csv')}
    write_report(out, n_boot=200, figures=False)
    assert tables == {p.name: p.read_bytes() for p in (out / 'tables').glob('*.csv')}
    assert len(tables) == 11 and {'regret.csv', 'listening.csv'} <= set(tables)
    lb = pd.read_csv(out / 'tables' / 'leaderboard.csv')
    assert set(lb['agent']) == set(LADDER.split(',')) and (lb['games'] == 7 * 30 * (1 + (lb['role'] == 'both'))).all()

def test_report_errors_are_one_line(tmp_path):
    for target in (tmp_path / 'missing', tmp_path):
        r = subprocess.run([EXE, 'report', str(target)], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and 'Traceback' not in r.stderr
    (tmp_path / 'games.sqlite').write_text('not a database')
    r = subprocess.run([EXE, 'report', str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr

def test_foreign_run_directory_is_refused(tmp_path):
    run_tournament(TournamentSpec(('linear',), 2, seed=1), tmp_path, progress=False)
    r = subprocess.run([EXE, 'tournament', '--agents', 'linear', '--games-per-pair', '2', '--seed', '2',
                        '--out', str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and 'holds another tournament (differs in: seed)' in r.stderr

def test_paired_design_properties():
    spec = TournamentSpec(('hardliner', 'split', 'linear'), games_per_pair=9, seed=3, self_play=False)
    tasks = list(plan(spec))
    assert len(tasks) == 6 * 9 and len({t.game_id for t in tasks}) == len(tasks)
    per_pair = {}
    for t in tasks: per_pair.setdefault((t.buyer, t.seller), []).append((t.index, t.scenario, t.seed))
    assert set(per_pair) == set(pairings(spec.agents, False)) and all(b != s for b, s in per_pair)
    first = next(iter(per_pair.values()))
    assert all(v == first for v in per_pair.values())
    assert [sc.tier for _, sc, _ in first] == ['low', 'mid', 'high'] * 3
    shuffled = TournamentSpec(('linear', 'hardliner', 'split'), games_per_pair=9, seed=3, self_play=False)
    assert {t.game_id for t in plan(shuffled)} == {t.game_id for t in tasks}
    other_seed = TournamentSpec(spec.agents, 9, seed=4, self_play=False)
    assert not {t.game_id for t in plan(other_seed)} & {t.game_id for t in tasks}

def test_failed_games_are_recorded_apart_never_scored_and_played_again(tmp_path):
    from bilateral.agents import Agent, register_agent
    class Broken(Agent):
        async def act(self, obs): raise TimeoutError('model did not answer')
    register_agent('broken-test', lambda a: Broken(), 'test agent that always fails')
    spec = TournamentSpec(('broken-test', 'linear'), 3)
    s = run_tournament(spec, tmp_path, progress=False)
    assert s['failed'] == 9 and s['failures'] == {'agent_crash': 9} and s['stored'] == 3
    assert 'agent_error' not in s['end_reasons']
    with Store(tmp_path, create=False) as st:
        assert set(st.rows()['buyer']) == {'linear'} and len(st.failures()) == 9
        assert st.failures()['message'].str.contains('TimeoutError: model did not answer').all()
    again = run_tournament(spec, tmp_path, progress=False)
    assert again['played'] == 0 and again['failed'] == 9           # tried again, still unplayable, still unscored
    with Store(tmp_path, create=False) as st: assert (st.failures()['attempts'] == 2).all()

def test_smoke_profile_through_papermill(tmp_path):
    r = subprocess.run([EXE, 'reproduce', '--profile', 'smoke', '--out', str(tmp_path), '--quiet'],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert 'main stage' not in r.stderr and 'Executing' not in r.stderr      # --quiet: no progress bars
    for nb in ('tournament.ipynb', 'report.ipynb'):
        cells = json.loads((tmp_path / nb).read_text())['cells']
        assert any('injected-parameters' in c['metadata'].get('tags', []) for c in cells)
        assert all(not any(o.get('output_type') == 'error' for o in c.get('outputs', [])) for c in cells)
    for f in ('leaderboard', 'share_by_tier', 'concession_curves', 'deal_rate_by_zopa_width', 'price_paths'):
        assert (tmp_path / 'figures' / f'{f}.png').stat().st_size > 1000
        html = (tmp_path / 'figures' / f'{f}.html').read_text()
        assert 'cdn.jsdelivr' not in html
    assert len(pd.read_parquet(tmp_path / 'games.parquet')) == 36
    page = (tmp_path / 'report.html').read_text()                  # the report writes the run's page too
    data = json.loads(page.split('id="data">')[1].split('</script>')[0])
    assert '<script src' not in page and data['run']['stored'] == 36
    assert len((tmp_path / 'transcripts.jsonl').read_text().splitlines()) == 36
    assert json.loads((tmp_path / 'summary.json').read_text())['games'] == 36

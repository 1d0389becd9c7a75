"""Fault injection against the project's own endpoint (bilateral.fakeserver on 127.0.0.1): each fault ends its games
with a typed outcome, scored when the model played badly, unscored (recorded with a cause, played again later) when the
model could not be reached; every transcript, failures included, replays; a resume after the fault clears completes the
run."""
import json, os, sqlite3, subprocess, sys, time
from pathlib import Path
import pandas as pd
import pytest
from bilateral.play import play_game, run_sync
from bilateral.core import dumps
from bilateral.engine import replay
from bilateral.fakeserver import FAULTS
from bilateral.scenarios import sample_scenarios
from bilateral.store import Store

EXE = str(Path(sys.executable).parent / 'bilateral')
SC = sample_scenarios(2, seed=11)

pytestmark = pytest.mark.usefixtures('llm_cache')   # `srv` and `llm_cache` live in conftest.py

SCORED = {'deal', 'quit', 'deadline', 'both_idle', 'event_cap', 'invalid_calls', 'agent_limit', 'context_overflow',
          'content_filter'}
# fault -> (agent options, what every game must end with: a set of scored reasons, or the cause of an unplayable game)
CASES = {
    'ok': ({}, {'deal'}), 'reasoning': ({}, {'deal'}),
    'ratelimit': ({}, {'deal'}), 'storm': ({}, {'deal'}), 'flaky': ({}, {'deal'}), 'burst': ({}, {'deal'}),
    'always500': ({'retries': 2}, 'server_error'), 'timeout': ({'timeout': 0.3, 'retries': 1}, 'timeout'),
    'hang': ({'timeout': 0.5, 'retries': 1}, 'timeout'), 'badbody': ({'retries': 1}, 'bad_response'),
    'unauthorized': ({}, 'refused'), 'forbidden': ({}, 'refused'), 'leaky': ({}, 'refused'), 'keyed': ({}, 'refused'),
    'context': ({}, {'context_overflow'}), 'filter': ({}, {'content_filter'}),
    'malformed': ({}, {'invalid_calls'}), 'truncated': ({}, {'invalid_calls'}), 'nullname': ({}, {'invalid_calls'}),
    'chatty': ({}, {'invalid_calls'}), 'digits': ({}, {'both_idle', 'invalid_calls'}),
    'noisy': ({}, {'deal'}), 'later500': ({'retries': 1}, 'server_error'),
    'trickle': ({'timeout': 1, 'retries': 0}, 'timeout'), 'huge': ({'max_reply_bytes': 65536}, 'too_large'),
    'gzip': ({}, {'deal'}), 'bomb': ({'retries': 0}, 'too_large'), 'bigusage': ({}, 'bad_usage'),
    'negusage': ({}, 'bad_usage'), 'echokey': ({}, {'deal'}), 'needchoice': ({'tool_choice': 'required'}, {'deal'}),
}

def test_every_fault_has_a_case():
    assert set(CASES) == set(FAULTS)

def spec(srv, kind, **opts):
    q = '&'.join(f'{k}={v}' for k, v in {'cache': 'off', 'retries': 6, **opts}.items())
    return f'openai:{kind}@{srv.url}?{q}'

@pytest.mark.parametrize('http', ['aiohttp', 'httpx'])     # the client's two transports map errors differently
@pytest.mark.parametrize('kind', sorted(CASES))
def test_fault_outcome_is_typed_and_replays(srv, kind, http):
    opts, expected = CASES[kind]
    a = spec(srv, kind, http=http, **opts)
    async def go():
        return await __import__('asyncio').gather(play_game(SC[0], a, 'conceder', seed=1),
                                                  play_game(SC[1], 'linear', a, seed=2))
    games = run_sync(go())
    for g in games:
        if isinstance(expected, set):
            assert g.outcome.reason.value in expected and g.failure is None, (kind, g.outcome, g.failure)
            assert g.outcome.reason.scored
        else:
            assert g.outcome.reason.value == 'agent_error' and not g.outcome.reason.scored, (kind, g.outcome)
            assert g.failure['cause'] == expected and g.failure['fatal'] == (expected == 'refused'), g.failure
        replay(json.loads(dumps(g.transcript)))                     # every ending replays, failures and null names too
    if kind == 'nullname':
        assert any(r.get('tool', 0) is None and 'arguments' in r for g in games for r in g.transcript['log'])

def tournament(out, agents, env=None, extra=()):
    t0 = time.time()
    r = subprocess.run([EXE, 'tournament', '--agents', ','.join(agents), '--games-per-pair', '3', '--out', str(out),
                        '--quiet', *extra], capture_output=True, text=True, timeout=300,
                       env={**os.environ, **(env or {})})
    return r, time.time() - t0

def report(out):
    return subprocess.run([EXE, 'report', str(out), '--n-boot', '50', '--no-figures'], capture_output=True, text=True,
                          timeout=300)

def table(out, name):
    con = sqlite3.connect(Path(out) / 'games.sqlite')
    try: return con.execute(f'SELECT game_id FROM {name}').fetchall()
    finally: con.close()

def test_refused_key_stops_the_run_then_a_fixed_key_completes_it(srv, tmp_path):
    out, agents = tmp_path / 'run', [spec(srv, 'keyed', key_env='TEST_FAULT_KEY', cache='on'), 'boulware', 'linear']
    srv.post('/reset')
    r, _ = tournament(out, agents, {'TEST_FAULT_KEY': 'sk-wrong'})
    assert r.returncode == 2, (r.returncode, r.stderr)
    asked = srv.stats().get('keyed', 0)       # the model plays 15 of the 27 games; each would ask once and be refused
    assert 1 <= asked < 15, asked             # stopped at the refusal: no retries, no new games (not a timing)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and 'refused the request (HTTP 401)' in lines[0] and '$TEST_FAULT_KEY' in lines[0], r.stderr
    assert 'sk-wrong' not in r.stderr + r.stdout
    assert table(out, 'failures')                               # the unplayable games are recorded with their cause ...
    with Store(out, create=False) as st: reasons = st.rows().get('end_reason', pd.Series(dtype=str))
    assert not (reasons == 'agent_error').any()
    r, _ = tournament(out, agents, {'TEST_FAULT_KEY': 'sk-good'})  # ... and played once the key is right
    assert r.returncode == 0, r.stderr
    assert '27/27 games stored' in r.stdout
    assert len(table(out, 'games')) == 27 and not table(out, 'failures')
    rep = report(out)
    assert rep.returncode == 0 and 'not in the results' not in rep.stdout, rep.stderr
    summary = json.loads((out / 'summary.json').read_text())
    assert summary['games'] == summary['planned'] == 27 and summary['missing'] == 0
    assert 'agent_error' not in summary['end_reasons']

def test_a_server_down_leaves_games_unplayed_and_a_resume_plays_them(srv, tmp_path):
    out, agents = tmp_path / 'run', [spec(srv, 'always500', retries=1), 'boulware', 'linear']
    r, _ = tournament(out, agents)
    assert r.returncode == 3, r.stderr                            # done, with games left unplayed
    assert 'could not be played (server_error ' in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    n_failed = len(table(out, 'failures'))
    assert n_failed == 15 and len(table(out, 'games')) == 12      # 5 of the 9 pairs involve the model
    rep = report(out)
    assert rep.returncode == 0, rep.stderr
    assert '15 of 27 planned games are not in the results' in rep.stdout, rep.stdout
    lb = pd.read_csv(out / 'tables' / 'leaderboard.csv')
    assert not lb['agent'].str.startswith('openai').any()          # never scored as zero-share games
    con = sqlite3.connect(out / 'games.sqlite')
    blobs = con.execute('SELECT transcript FROM games UNION ALL SELECT transcript FROM failures').fetchall()
    con.close()
    assert len(blobs) == 27
    for (b,) in blobs: replay(json.loads(__import__('zlib').decompress(b)))   # every stored game replays, failures too
    srv.post('/clear')
    try: r, _ = tournament(out, agents)
    finally: srv.post('/reset')
    assert r.returncode == 0 and '27/27 games stored' in r.stdout and '(15 played now' in r.stdout, r.stdout + r.stderr
    con = sqlite3.connect(out / 'games.sqlite')
    assert con.execute('SELECT COUNT(*), COUNT(DISTINCT game_id) FROM games').fetchone() == (27, 27)
    assert con.execute('SELECT COUNT(*) FROM failures').fetchone() == (0,)

def test_missing_key_is_reported_before_any_game(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != 'OPENAI_API_KEY'}
    for args in (['run', '--buyer', 'openai:gpt-4.1-mini', '--seller', 'linear'],
                 ['tournament', '--agents', 'openai:gpt-4.1-mini,linear', '--games-per-pair', '2',
                  '--out', str(tmp_path / 'r')]):
        t0 = time.time()
        r = subprocess.run([EXE, *args], capture_output=True, text=True, timeout=60, env=env)
        assert r.returncode == 2 and time.time() - t0 < 30, r.stderr
        expected = 'no API key for model gpt-4.1-mini: set the environment variable OPENAI_API_KEY'
        assert r.stderr.strip() == f'bilateral: error: {expected}'
    assert not (tmp_path / 'r').exists()                          # nothing was created, no game played

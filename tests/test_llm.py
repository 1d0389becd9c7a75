"""The OpenAI-compatible agent against a fault-injecting endpoint on 127.0.0.1: every game ends with a typed reason,
nothing hangs."""
import asyncio, json, os, sqlite3, subprocess, sys, zlib
from pathlib import Path
import pytest
from bilateral.core import EndReason
from bilateral.play import play, play_game, run_sync
from bilateral.scenarios import sample_scenarios, Scenario
from bilateral.tournament import TournamentSpec, run_tournament
from bilateral.store import Store

pytestmark = pytest.mark.usefixtures('llm_cache')   # `srv` and `llm_cache` live in conftest.py

SC = sample_scenarios(3, seed=11)

def agent(srv, model, **opts):
    q = '&'.join(f'{k}={v}' for k, v in {'cache': 'off', 'retries': 3, **opts}.items())
    return f'openai:{model}@{srv.url}?{q}'

async def _games(specs, n=3, timeout=60):
    games = (play_game(sc, b, s, seed=i) for b, s in specs for i, sc in enumerate(SC[:n]))
    return await asyncio.wait_for(asyncio.gather(*games), timeout)

@pytest.mark.parametrize('model,opts,expected', [
    ('ok', {}, {'deal'}),
    ('ratelimit', {}, {'deal'}),
    ('flaky', {}, {'deal'}),
    ('always500', {'retries': 1}, {'agent_error'}),                 # could not be played: recorded apart, never scored
    ('timeout', {'timeout': 0.3, 'retries': 1}, {'agent_error'}),
    ('unauthorized', {}, {'agent_error'}),
    ('malformed', {}, {'invalid_calls'}),
    ('context', {}, {'context_overflow'}),
    ('filter', {}, {'content_filter'}),
])
def test_fault_ends_with_typed_reason(srv, model, opts, expected):
    games = run_sync(_games([(agent(srv, model, **opts), 'conceder'), ('linear', agent(srv, model, **opts))]))
    reasons = {g.outcome.reason.value for g in games}
    errors = [r for g in games for r in g.transcript['log'] if 'agent_error' in r][:2]
    assert reasons == expected, (model, reasons, errors)
    for g in games:
        for role, msgs in (g.messages or {}).items():
            calls = [c['id'] for m in msgs if m['role'] == 'assistant' for c in m.get('tool_calls', [])]
            answered = [m['tool_call_id'] for m in msgs if m['role'] == 'tool']
            # every tool_call_id answered once
            assert sorted(calls) == sorted(answered) and len(set(calls)) == len(calls)

def test_rate_limits_are_retried_and_honoured(srv):
    before = srv.stats().get('429', 0)
    g = play(SC[0], agent(srv, 'ratelimit'), 'conceder', seed=1)
    assert g.outcome.deal and srv.stats()['429'] - before >= 2
    assert g.info['buyer']['calls'] >= 2

def test_refused_key_stops_the_endpoint_fast(srv):
    before = srv.stats().get('unauthorized', 0)
    games = run_sync(_games([(agent(srv, 'unauthorized'), 'linear')], n=3))
    assert all(g.outcome.reason is EndReason.AGENT_ERROR for g in games)
    assert srv.stats()['unauthorized'] - before <= 3           # no retries on 401
    err = next(r['agent_error'] for r in games[0].transcript['log'] if 'agent_error' in r)
    assert 'refused the request (HTTP 401)' in err and '$None' not in err
    assert all(g.failure['cause'] == 'refused' and g.failure['fatal'] for g in games)

def test_cache_replays_without_requests(srv, tmp_path):
    spec = TournamentSpec((f'openai:ok@{srv.url}', 'conceder', 'boulware'), games_per_pair=2, seed=3)
    n0 = srv.stats().get('requests', 0)
    run_tournament(spec, tmp_path / 'a', progress=False)
    n = srv.stats()['requests']
    run_tournament(spec, tmp_path / 'b', progress=False)
    assert srv.stats()['requests'] == n                         # the second run is served from the cache
    with Store(tmp_path / 'a', create=False) as x, Store(tmp_path / 'b', create=False) as y:
        ta, tb = dict(x.transcripts()), dict(y.transcripts())
        strip = lambda t: {k: v for k, v in t.items() if k != 'agent_info'}
        # the same games, call for call
        assert {g: strip(t) for g, t in ta.items()} == {g: strip(t) for g, t in tb.items()}
        ra, rb = x.rows().set_index('game_id'), y.rows().set_index('game_id')
    llm, sllm = ra['buyer'].str.startswith('openai'), ra['seller'].str.startswith('openai')
    # the first run sent one request per distinct request: games of other pairs in flight with the same one shared it
    sent = sum((ra.loc[m, f'{r}_llm_calls'] - ra.loc[m, f'{r}_cache_hits']).sum() for r, m in (('buyer', llm),
                                                                                                ('seller', sllm)))
    assert (ra.loc[llm, 'buyer_llm_calls'] > 0).all() and sent == n - n0
    assert (rb.loc[llm, 'buyer_cache_hits'] == rb.loc[llm, 'buyer_llm_calls']).all()
    assert (rb.loc[llm, 'buyer_cost_usd'] == 0).all()

def test_accounting_and_prompt_identity(srv):
    g = play(SC[1], agent(srv, 'ok'), 'conceder', seed=2)
    info = g.info['buyer']
    assert info['prompt'] == 'bilateral-v4' and len(info['prompt_hash']) == 12
    assert info['tokens_in'] > 0 and info['tokens_out'] > 0 and info['calls'] >= 1
    assert g.transcript['agent_info']['buyer']['prompt_hash'] == info['prompt_hash']

def test_canary_private_value_never_reaches_the_opponent(srv):
    item = SC[0].item
    sc = Scenario(item, buyer_value=98765, seller_cost=1234, tier=SC[0].tier)     # $987.65 and $12.34
    for b, s in [(agent(srv, 'ok'), agent(srv, 'ok')), (agent(srv, 'ok'), 'boulware')]:
        g = play(sc, b, s, seed=4)
        seller_view = json.dumps(g.messages.get('seller', []))
        assert '987.65' not in seller_view and '98765' not in seller_view
        log = g.transcript['log']
        results = json.dumps([r.get('result') for r in log] + [r.get('update') for r in log])
        assert '987.65' not in results and '12.34' not in results
        assert '12.34' not in json.dumps(g.messages['buyer'])

def test_canary_api_key_never_written(srv, tmp_path, monkeypatch):
    key = 'sk-canary-7f3a9c1e5b2d4f6a8c0e'
    monkeypatch.setenv('CANARY_API_KEY', key)
    out = tmp_path / 'run'
    env = {**os.environ, 'CANARY_API_KEY': key}
    specs = [f'openai:ok@{srv.url}?key_env=CANARY_API_KEY', 'linear']
    leaky = f'openai:leaky@{srv.url}?key_env=CANARY_API_KEY&cache=off'
    exe = str(Path(sys.executable).parent / 'bilateral')
    r0 = subprocess.run([exe, 'tournament', '--agents', ','.join([leaky, *specs]), '--games-per-pair', '2',
                         '--out', str(out / 'leaky')], capture_output=True, text=True, env=env, timeout=300)
    errors = [x for x in r0.stderr.splitlines() if x.startswith('bilateral:')]   # the rest of stderr: the progress bar
    # a refused key stops the run
    assert r0.returncode == 2 and len(errors) == 1 and 'Traceback' not in r0.stderr, r0.stderr[-2000:]
    r = subprocess.run([exe, 'tournament', '--agents', ','.join(specs), '--games-per-pair', '2', '--out', str(out)],
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    r2 = subprocess.run([exe, 'report', str(out), '--n-boot', '50'], capture_output=True, text=True, env=env,
                        timeout=300)
    assert r2.returncode == 0, r2.stderr[-2000:]
    import papermill as pm
    from bilateral.report import experiment_path
    pm.execute_notebook(str(experiment_path('tournament')), str(out / 'executed.ipynb'), kernel_name='python3',
                        progress_bar=False,
                        parameters={'agents': specs, 'games_per_pair': 2, 'out_dir': str(out / 'pm')})
    texts = [r0.stdout, r0.stderr, r.stdout, r.stderr, r2.stdout, r2.stderr]
    for p in out.rglob('*'):
        if p.is_file(): texts.append(p.read_bytes().decode('latin-1'))
    for db in (out / 'games.sqlite', out / 'leaky' / 'games.sqlite'):
        con = sqlite3.connect(db)
        for t, m in con.execute('SELECT transcript, messages FROM games'):
            texts += [zlib.decompress(t).decode()] + ([zlib.decompress(m).decode()] if m else [])
        for m, t in con.execute('SELECT message, transcript FROM failures'):
            texts += [m] + ([zlib.decompress(t).decode()] if t else [])
    cache = Path(os.environ['BILATERAL_CACHE'])
    if cache.exists(): texts.append(cache.read_bytes().decode('latin-1'))
    blob = '\n'.join(texts)
    assert 'refused the request (HTTP 401)' in blob                 # the leaky endpoint was hit
    assert key not in blob and key[3:15] not in blob and key[-12:] not in blob

def test_reasoning_is_kept_private(srv):
    "A reasoning model's reasoning is stored with its own messages, never sent back, never shown to the opponent."
    g = play(SC[2], agent(srv, 'reasoning'), 'narrated:linear', seed=5)
    mine = [m for m in g.messages['buyer'] if m['role'] == 'assistant']
    assert mine and all(m.get('reasoning_content', '').startswith('private plan') for m in mine)
    assert srv.stats().get('reasoning_echoed', 0) == 0
    assert 'private plan' not in json.dumps(g.messages['seller'])
    assert 'private plan' not in json.dumps(g.transcript['log'])

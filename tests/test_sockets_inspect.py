"""The inspect_ai socket: `inspect eval bilateral/bargaining` from the command line against the project's fault
endpoint, its scores and prices game for game equal to the same games through the package's own `openai:` agent,
and its log loaded back into a results store that replays."""
import os, subprocess, sys
from pathlib import Path
import pytest
pytest.importorskip('inspect_ai')
from inspect_ai.log import read_eval_log
from bilateral.engine import replay
from bilateral.inspect_task import score_values, store_from_log
from bilateral.metrics import game_row
from bilateral.protocol import Rules
from bilateral.store import Store
from bilateral.tournament import round_robin
from test_beliefs_probes import belief_server      # the server whose model answers belief questions

def inspect_eval(tmp_path, srv, *args):
    "`inspect eval bilateral/bargaining ARGS` in a subprocess against the fake endpoint (or one at a URL); its log."
    env = {**os.environ, 'FAKE_BASE_URL': getattr(srv, 'url', srv), 'FAKE_API_KEY': 'none'}
    cmd = [str(Path(sys.executable).parent / 'inspect'), 'eval', 'bilateral/bargaining', '--log-dir', str(tmp_path),
           '--display', 'none', *args]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    return read_eval_log(str(next(tmp_path.glob('*.eval'))))

def test_cli_scores_equal_the_openai_agent(tmp_path, srv):
    log = inspect_eval(tmp_path, srv, '--model-role', 'buyer=openai-api/fake/ok', '--model-role',
                       'seller=openai-api/fake/ok', '-T', 'n=6', '-T', 'seed=3')
    assert log.status == 'success' and len(log.samples) == 6
    ref = round_robin([f'openai:ok@{srv.url}?cache=off'], games_per_pair=6, seed=3)
    by_id = {s.id: s for s in log.samples}
    for i, r in enumerate(ref):
        s = by_id[i]
        assert s.scores['bargaining_score'].value == score_values(game_row(r))
        g = s.metadata['bilateral']
        assert g['transcript']['log'] == r.transcript['log'] and g['transcript']['outcome'] == r.transcript['outcome']
        assert g['messages'] == r.messages
    means = {e.name: e.metrics['mean'].value for e in log.results.scores}
    assert means['deal'] == pytest.approx(sum(game_row(r)['deal'] for r in ref) / 6)
    assert means['buyer_share'] == pytest.approx(sum(score_values(game_row(r))['buyer_share'] for r in ref) / 6)
    run = tmp_path / 'run'
    assert store_from_log(next(tmp_path.glob('*.eval')), run) == 6
    with Store(run, create=False) as st:
        assert sorted(st.rows()['price']) == sorted(game_row(r)['price'] for r in ref)
        for _, t in st.transcripts(): replay(t)

def test_a_seat_can_be_a_bilateral_agent(tmp_path, srv):
    rules = '{"deadline": 90, "max_invalid": 3}'
    log = inspect_eval(tmp_path, srv, '--model', 'openai-api/fake/ok', '-T', 'n=4', '-T', 'seller=boulware',
                       '-T', f'rules={rules}', '-T', 'first_mover=seller')
    ref = round_robin([f'openai:ok@{srv.url}?cache=off', 'boulware'], games_per_pair=4, self_play=False,
                      rules=Rules(deadline=90, max_invalid=3), first_mover='seller')
    ref = [r for r in ref if r.agents['seller'] == 'boulware']
    got = sorted(log.samples, key=lambda s: s.id)
    assert [s.metadata['bilateral']['row']['price'] for s in got] == [game_row(r)['price'] for r in ref]
    assert {s.metadata['bilateral']['row']['seller'] for s in got} == {'boulware'}

def test_the_store_command_without_logs_is_one_line_and_exit_2(tmp_path):
    "The README's `bilateral-inspect-store logs/*.eval` before any eval: the shell hands the pattern over unexpanded."
    script = Path(sys.executable).parent / 'bilateral-inspect-store'
    (tmp_path / 'notes.eval').write_text('not a log')
    for args, said in ((['logs/*.eval'], 'no log file at logs/*.eval (a pattern that matched no file: run `inspect '
                                         'eval` first)'),
                       (['notes.eval'], 'notes.eval is not an inspect eval log ('), ([], 'the following arguments')):
        r = subprocess.run(f'{script} {" ".join(args)} --out data/runs/inspect', shell=True, cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
        assert (r.returncode, r.stdout, len(r.stderr.splitlines())) == (2, '', 1), r.stderr[-2000:]
        assert r.stderr.startswith(f'bilateral-inspect-store: error: {said}'), r.stderr
    assert not (tmp_path / 'data').exists()

def test_a_model_seat_answers_belief_probes(tmp_path, belief_server):
    """`-T probe=request` against a server whose model answers a belief question (in JSON, in words, unreadably, with
    NaN): the games are the same byte for byte as without probes, the answers travel through the log into a store, are
    read into numbers where they can be, and are scored against the truth beside the Bayesian reference."""
    from bilateral.core import dumps
    from bilateral.probes import probe_table, probe_traces
    args = ('--model', 'openai-api/fake/believer', '-T', 'n=4', '-T', 'seller=boulware', '-T', 'seed=5')
    logs = {k: inspect_eval(tmp_path / k, belief_server, *args, *extra)
            for k, extra in (('plain', ()), ('probed', ('-T', 'probe=request')))}
    strip = lambda t: dumps({**t, 'agent_info': {r: {k: v for k, v in i.items() if k not in ('probes', 'latency_s')}
                                                for r, i in t['agent_info'].items()}})
    games = {k: [strip(s.metadata['bilateral']['transcript']) for s in sorted(v.samples, key=lambda s: s.id)]
             for k, v in logs.items()}
    assert games['plain'] == games['probed'] and len(games['plain']) == 4
    assert all('probes' not in s.metadata['bilateral']['transcript']['agent_info']['buyer']
               for s in logs['plain'].samples)
    assert store_from_log(next((tmp_path / 'probed').glob('*.eval')), tmp_path / 'run') == 4
    tr = probe_traces(tmp_path / 'run')
    assert set(tr.role) == {'buyer'} and set(tr.why) == {'offer'} and tr.ref.notna().all()
    read = tr[tr.estimate.notna()]
    assert len(read) and len(read) < len(tr)                    # JSON and words are read; the other two are not
    assert ((read.estimate / read.listing - 0.7).abs() < 0.01).all() and (read.lo < read.hi).all()
    pt = probe_table(tmp_path / 'run', n_boot=50)
    assert list(pt.role) == ['buyer'] and (pt.unit == 'scenario').all() and pt.error.notna().all()

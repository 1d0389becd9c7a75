"""Hardening, round two (issue 20): each finding of the hostile-endpoint probe, reproduced against the project's own
fault endpoint (bilateral.fakeserver: `noisy`, `later500`, `trickle`, `huge`) or the command line in real processes.

- a reply cache that reproduces a concurrent run exactly;
- server errors never charged to the model;
- every request bounded in wall time and bytes, `max_wall_s` during a request too, `retries` in a range;
- every option and command-line number checked before anything is written; a missing model folder too;
- Ctrl-C at start-up and while the leaderboard is computed: one line, no traceback;
- one process per run directory;
- error texts built from the stored (canonical) arguments, so that every stored game replays."""
import asyncio, json, os, signal, subprocess, sys, time
from pathlib import Path
import pytest
from conftest import child, fault_agent as agent, fault_game as game, stored
from bilateral.agents import make_agent
from bilateral.core import Role, dumps
from bilateral.engine import Engine, replay
from bilateral.play import play_game, run_sync
from bilateral.protocol import Rules, ToolCall
from bilateral.scenarios import sample_scenarios
from bilateral.store import Store
from bilateral.tournament import TournamentSpec, run_tournament

EXE = str(Path(sys.executable).parent / 'bilateral')
HELD_CLI = str(Path(__file__).parent / 'held_cli.py')
SC = sample_scenarios(2, seed=11)


def files(d: Path) -> dict:
    "Every file under `d` with its bytes, to show that a refused command wrote nothing."
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(Path(d).rglob('*')) if p.is_file()}

# 1. the cache reproduces a run at any concurrency

def strip(t: dict) -> dict:
    "A transcript without what differs between a run that asked the model and one served by the cache (timing, usage)."
    return {k: v for k, v in t.items() if k != 'agent_info'}

@pytest.mark.usefixtures('llm_cache')
def test_two_concurrent_runs_on_one_cache_store_identical_games(srv, tmp_path):
    spec = TournamentSpec((f'openai:noisy@{srv.url}', 'boulware', 'linear'), games_per_pair=4, seed=3)
    srv.post('/reset')
    a = run_tournament(spec, tmp_path / 'a', concurrency=8, progress=False)
    sent = srv.stats()['requests']
    b = run_tournament(spec, tmp_path / 'b', concurrency=8, progress=False)
    assert a['stored'] == b['stored'] == 36
    assert srv.stats()['requests'] == sent                        # the second run sent no request: all cache hits
    with Store(tmp_path / 'a', create=False) as x, Store(tmp_path / 'b', create=False) as y:
        ta, tb = dict(x.transcripts()), dict(y.transcripts())
    assert ta.keys() == tb.keys()
    assert [g for g in ta if dumps(strip(ta[g])) != dumps(strip(tb[g]))] == []

@pytest.mark.usefixtures('llm_cache')
def test_identical_requests_in_flight_at_once_send_one_request(srv):
    async def go():
        agents = [make_agent(f'openai:noisy@{srv.url}') for _ in range(6)]
        for a in agents: await a.start(Engine(SC[0], seed=1).brief(Role.BUYER))
        msgs = [{'role': 'system', 'content': 'You are the buyer.'}, {'role': 'user', 'content': 'Listing price: $80.'}]
        return await asyncio.gather(*(a.complete(msgs, a.tools) for a in agents))
    srv.post('/reset')
    replies = run_sync(go())
    assert srv.stats()['requests'] == 1
    assert len({json.dumps(r.tool_calls) for r in replies}) == 1 and sum(not r.cached for r in replies) == 1

# 2. server errors are the server's

def test_repeated_server_errors_from_a_server_that_answered_before_are_not_the_models(srv):
    g = game(srv, 'later500', retries=1)
    assert g.outcome.reason.value == 'agent_error' and not g.outcome.reason.scored, g.outcome
    assert g.failure['cause'] == 'server_error' and not g.failure['fatal'], g.failure
    assert g.invalid['buyer'] == 0                                 # nothing charged to the model
    assert any(e.role.value == 'buyer' for e in g.events)          # it had played a turn before the errors

# 3. no request hangs

def test_a_trickling_reply_is_cut_off_by_the_timeout(srv):
    g = game(srv, 'trickle', limit=60, timeout=1, retries=1)
    assert g.failure and g.failure['cause'] == 'timeout', (g.outcome, g.failure)

def test_max_wall_s_holds_during_a_request(srv):
    g = game(srv, 'trickle', limit=60, timeout=600, retries=0, max_wall_s=2)
    assert g.failure and g.failure['cause'] == 'timeout' and 'max_wall_s' in g.failure['message'], g.failure
    assert not g.outcome.reason.scored

# 4, 5. every option and number checked before anything is written

def hostile(srv_url):
    "(command line, what its one line must name)"
    m = f'openai:ok@{srv_url}'
    t = ['tournament', '--games-per-pair', '2', '--quiet', '--agents']
    return [
        ([*t, f'{m}?concurrency=0,linear'], 'concurrency must be a whole number in [1, 4096]'),
        ([*t, f'{m}?retries=1000000000,linear'], 'retries must be a whole number in [0, 20]'),
        ([*t, f'{m}?retries=-1,linear'], 'retries must be a whole number in [0, 20]'),
        ([*t, f'{m}?timeout=nan,linear'], 'timeout must be a finite number in [0.1, 3600]'),
        ([*t, f'{m}?timeout=0,linear'], 'timeout must be'),
        ([*t, f'{m}?timeout=-5,linear'], 'timeout must be'),
        ([*t, f'{m}?temperature=inf,linear'], 'temperature must be a finite number in [0, 2]'),
        ([*t, f'{m}?max_turns=0,linear'], 'max_turns must be a whole number in [1, 10000]'),
        ([*t, f'{m}?window=-1,linear'], 'window must be a whole number'),
        ([*t, f'{m}?max_reply_bytes=10,linear'], 'max_reply_bytes must be'),
        ([*t, f'{m}?cache=maybe,linear'], 'cache must be one of on, off'),
        ([*t, 'random:NaN,linear'], 'RATE must be a finite number in [0, 1]'),
        ([*t, 'random:2,linear'], 'RATE must be a finite number in [0, 1]'),
        ([*t, 'haggler:inf,linear'], 'STEP must be'),
        ([*t, 'hf:/nonexistent/model-folder,linear'], 'no model folder at /nonexistent/model-folder'),
        ([*t, 'hf:/nonexistent/m?temperature=nan,linear'], 'temperature must be'),
        ([*t, 'linear', '--concurrency', '0'], 'argument --concurrency: must be a whole number in [1, inf)'),
        ([*t, 'linear', '--games-per-pair', '-1'], 'argument --games-per-pair'),
        ([*t, 'linear', '--seed', '-3'], 'argument --seed'),
        (['run', '--buyer', 'linear', '--seller', 'linear', '--deadline', 'inf'], 'argument --deadline'),
        (['run', '--buyer', 'linear', '--seller', 'linear', '--deadline', 'nan'], 'argument --deadline'),
        (['run', '--buyer', f'{m}?top_p=0', '--seller', 'linear'], 'top_p must be a finite number in (0, 1]'),
        (['report', '--n-boot', '0', 'x'], 'argument --n-boot'),
        (['bench', '--llm', '4,0'], 'argument --llm'),
    ]

def test_hostile_command_lines_are_one_line_exit_2_and_write_nothing(srv, tmp_path):
    bad = []
    for args, names in hostile(srv.url):
        out = tmp_path / f'run{len(bad)}'
        cmd = [*args, '--out', str(out)] if args[0] == 'tournament' else args
        r = subprocess.run([EXE, *cmd], capture_output=True, text=True, timeout=120, cwd=tmp_path)
        lines = r.stderr.strip().splitlines()
        ok = r.returncode == 2 and len(lines) == 1 and names in lines[0] and not out.exists()
        bad += [] if ok else [(args, r.returncode, r.stderr[-300:])]
    assert bad == []
    assert sorted(p.name for p in tmp_path.iterdir()) == []         # nothing written anywhere, ./games.sqlite neither

def test_an_empty_out_is_refused_and_writes_nothing(tmp_path):
    r = subprocess.run([EXE, 'tournament', '--agents', 'linear', '--games-per-pair', '1', '--out', ''],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 2 and 'argument --out: must be a path' in r.stderr, r.stderr
    assert files(tmp_path) == {}

# 6. Ctrl-C outside the playing phase

def wait_for_file(path: Path, proc, limit=120):
    t0 = time.time()
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.time() - t0 < limit, 'the hold was never reached'
        time.sleep(0.02)

def interrupted(cmd: list, env: dict, mark: Path) -> tuple[int, list]:
    "Run `cmd` until it reaches the hold that writes `mark`, press Ctrl-C: (exit code, stderr lines)."
    with child(cmd, env=env) as proc:
        wait_for_file(mark, proc)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    return proc.returncode, err.strip().splitlines()

def test_ctrl_c_at_start_up_is_one_line_and_writes_nothing(tmp_path):
    out, mark = tmp_path / 'run', tmp_path / 'held'
    env = {**os.environ, 'BILATERAL_TEST_HOLD_CHECK': str(mark)}
    cmd = [sys.executable, HELD_CLI, 'tournament', '--agents', 'held,linear', '--games-per-pair', '2', '--quiet',
           '--out', str(out)]
    assert interrupted(cmd, env, mark) == (2, [
        f'bilateral: error: interrupted: 0 finished games are stored in {out}; run the same command again to resume'])
    assert not out.exists()
    mark.unlink()
    cmd = [sys.executable, HELD_CLI, 'run', '--buyer', 'held', '--seller', 'linear']
    assert interrupted(cmd, env, mark) == (130, ['bilateral: interrupted'])

def test_ctrl_c_while_the_leaderboard_is_computed_is_one_line_and_keeps_every_game(tmp_path):
    out, mark = tmp_path / 'run', tmp_path / 'held'
    env = {**os.environ, 'BILATERAL_TEST_HOLD_LEADERBOARD': str(mark)}
    cmd = [sys.executable, HELD_CLI, 'tournament', '--agents', 'held,linear', '--games-per-pair', '3', '--quiet',
           '--out', str(out)]
    assert interrupted(cmd, env, mark) == (2, [
        f'bilateral: error: interrupted: 12 finished games are stored in {out}; run the same command again to resume'])
    assert stored(out) == 12

def test_ctrl_c_tests_pass_with_sigint_ignored(root):
    "A test run started with SIGINT ignored (`make test &`): the Ctrl-C tests' children still get Ctrl-C."
    ignore = lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)
    r = subprocess.run([sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider',
                        'tests/test_hardening.py::test_ctrl_c_at_start_up_is_one_line_and_writes_nothing'],
                       cwd=root, capture_output=True, text=True, timeout=300, preexec_fn=ignore)
    assert r.returncode == 0, r.stdout[-2000:]

# 7. one process per run directory

def test_a_second_process_on_a_run_directory_is_refused(tmp_path):
    out = tmp_path / 'run'
    held = [sys.executable, HELD_CLI, 'tournament', '--agents', 'held,linear', '--games-per-pair', '40', '--quiet',
            '--out', str(out)]
    with child(held, env={**os.environ, 'BILATERAL_TEST_HOLD_AFTER': '5'}) as first:
        t0 = time.time()
        while stored(out) < 5:
            assert first.poll() is None and time.time() - t0 < 120, first.communicate()
            time.sleep(0.02)
        before = files(out)
        second = subprocess.run(held, capture_output=True, text=True, timeout=120)
        assert second.returncode == 2 and second.stderr.strip().splitlines() == [
            f'bilateral: error: {out} is in use by another bilateral process: wait for it to finish, or use another '
            'run directory'], second.stderr
        assert first.poll() is None
    assert stored(out) >= 5 and set(files(out)) == set(before)

# 8. replies bounded in bytes

def test_a_huge_reply_is_refused_past_max_reply_bytes(srv):
    g = game(srv, 'huge', max_reply_bytes=65536)
    assert g.failure and g.failure['cause'] == 'too_large' and 'max_reply_bytes=65536' in g.failure['message']

def test_a_conversation_of_huge_replies_stops_at_max_request_bytes(srv):
    srv.post('/reset')
    g = game(srv, 'huge')
    assert g.outcome.reason.value == 'agent_limit', g.outcome
    assert any('max_request_bytes' in r.get('agent_error', '') for r in g.transcript['log'])
    assert srv.stats()['max_request_bytes'] <= 8 * 2**20            # no request grew past the default cap

# 9. the README's exit codes

def test_the_readme_says_what_each_exit_code_means_for_what_was_written(root):
    text = (root / 'README.md').read_text()
    para = next(p for p in text.split('\n\n') if 'exit status' in p)
    for code in ('`0`', '`2`', '`3`', '`130`'): assert code in para, code
    assert 'nothing was written' in para and 'finished games are kept' in para

# 11. error texts from the stored form: every stored game replays

@pytest.mark.parametrize('args', [{'price': {'0': None, '': None}}, {'price': {'currency': 'USD', 'amount': 12}},
                                  {'price': [{'b': 1, 'a': 2}]}])
def test_a_rejected_call_with_unsorted_keys_replays(args):
    eng = Engine(SC[0], Rules(), seed=3)
    role = eng.next_turn()
    eng.take(role)
    eng.submit(role, [ToolCall('make_offer', args), ToolCall('wait_for_response', {})])
    eng.next_turn()
    t = eng.transcript({'buyer': 'x', 'seller': 'y'})
    assert next(r for r in eng.log if r.get('tool') == 'make_offer')['result']['error'] == 'wrong_type'
    replay(json.loads(dumps(t)))

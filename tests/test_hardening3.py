"""Hardening, round three (issue 39): each finding of the hostile test from outside, reproduced against the project's
own fault endpoint (bilateral.fakeserver: `gzip`, `bomb`, `bigusage`, `negusage`, `echokey`, `needchoice`) or real
processes.

1. a reply is bounded by the bytes it decodes to, not by the bytes that arrive (both HTTP transports);
2. token counts the server reports are checked: out of range is the server's fault (unplayed, with a cause);
3. a key that a normal reply repeats is scrubbed from everything stored or printed;
9. `--workers N` sends no more requests than one process (a claim in the shared reply cache per request in flight);
10. `tool_choice` is an `openai:` option, checked like the others."""
import asyncio, json, os, shutil, sqlite3, subprocess, sys, time, zlib
from pathlib import Path
import pytest
from conftest import child, fault_agent as agent, fault_game as game
from bilateral.agents import make_agent
from bilateral.core import ConfigError
from bilateral.play import play_game, run_sync
from bilateral.scenarios import sample_scenarios
from bilateral.store import Store
from bilateral.tournament import TournamentSpec, run_tournament

EXE = str(Path(sys.executable).parent / 'bilateral')
SC = sample_scenarios(2, seed=11)


def cache_rows(path: Path) -> list:
    if not path.exists(): return []
    con = sqlite3.connect(path)
    try: return con.execute('SELECT key, reply FROM replies').fetchall()
    finally: con.close()

# 1. bounded after decompression

@pytest.mark.parametrize('http', ['httpx', 'aiohttp'])
def test_a_compressed_reply_that_inflates_past_max_reply_bytes_is_refused(srv, http, tmp_path, monkeypatch):
    monkeypatch.setenv('BILATERAL_CACHE', str(tmp_path / 'cache.sqlite'))
    g = game(srv, 'bomb', http=http, cache='on', retries=0)        # 32 KB on the wire, 32 MB decoded; the cap: 2 MB
    assert g.failure and g.failure['cause'] == 'too_large', (g.outcome, g.failure)
    assert 'max_reply_bytes=2097152' in g.failure['message'] and not g.outcome.reason.scored
    assert cache_rows(tmp_path / 'cache.sqlite') == []             # nothing of it was cached

@pytest.mark.parametrize('http', ['httpx', 'aiohttp'])
def test_a_compressed_reply_within_the_cap_plays(srv, http):
    g = game(srv, 'gzip', http=http)
    assert g.failure is None and g.outcome.reason.value == 'deal', (g.outcome, g.failure)

# 2. server-reported usage checked

@pytest.mark.parametrize('kind', ['bigusage', 'negusage'])
def test_token_counts_out_of_range_are_the_servers_fault(srv, kind):
    g = game(srv, kind, retries=0)
    assert g.failure and g.failure['cause'] == 'bad_usage', (g.outcome, g.failure)
    assert not g.outcome.reason.scored and 'tokens' in g.failure['message']

def test_a_run_keeps_no_game_with_usage_out_of_range(srv, tmp_path):
    s = run_tournament(TournamentSpec((agent(srv, 'negusage', retries=0), 'linear'), games_per_pair=1, seed=2,
                                      self_play=False), tmp_path / 'run', progress=False)
    assert s['stored'] == 0 and s['failed'] == 2 and s['failures'] == {'bad_usage': 2}, s
    with Store(tmp_path / 'run', create=False) as st: assert st.rows().empty

# 3. the key scrubbed from normal replies

KEY = 'sk-echo-4f9a2b7c1d8e3f6a0b5c'

def stored_texts(run: Path, cache: Path) -> list[str]:
    "Every text a run stored: transcripts, conversations and failures of its games, and the reply cache."
    out = []
    con = sqlite3.connect(run / 'games.sqlite')
    try:
        for t, m in con.execute('SELECT transcript, messages FROM games'):
            out += [zlib.decompress(b).decode() for b in (t, m) if b is not None]
        for row in con.execute('SELECT * FROM failures'):
            out += [zlib.decompress(x).decode() if isinstance(x, bytes) else str(x) for x in row]
    finally: con.close()
    return out + [r for _, r in cache_rows(cache)]

def test_a_key_a_normal_reply_repeats_is_stored_nowhere(srv, tmp_path, monkeypatch):
    monkeypatch.setenv('ECHO_API_KEY', KEY)
    monkeypatch.setenv('BILATERAL_CACHE', str(tmp_path / 'cache.sqlite'))
    spec = f'openai:echokey@{srv.url}?key_env=ECHO_API_KEY'
    s = run_tournament(TournamentSpec((spec, 'linear'), games_per_pair=1, seed=2, self_play=False), tmp_path / 'run',
                       progress=False)
    assert s['stored'] == 2, s
    texts = stored_texts(tmp_path / 'run', tmp_path / 'cache.sqlite')
    assert any('My key is ***' in t for t in texts) and any('psst: ***' in t for t in texts)   # the reply was kept
    assert [t for t in texts if KEY in t or KEY[3:15] in t] == []
    raw = b''.join(p.read_bytes() for p in tmp_path.rglob('*') if p.is_file())
    assert KEY.encode() not in raw

def test_a_key_a_normal_reply_repeats_is_printed_nowhere(srv, tmp_path):
    spec = f'openai:echokey@{srv.url}?key_env=ECHO_API_KEY&cache=off'
    r = subprocess.run([EXE, 'run', '--buyer', spec, '--seller', 'linear', '--seed', '1'], capture_output=True,
                       text=True, timeout=120, cwd=tmp_path,
                       env={**__import__('os').environ, 'ECHO_API_KEY': KEY, 'BILATERAL_CACHE': str(tmp_path / 'c')})
    assert r.returncode == 0, r.stderr[-500:]
    assert 'psst: ***' in r.stdout and KEY not in r.stdout + r.stderr

# 10. tool_choice

def test_tool_choice_is_sent_to_a_server_that_needs_it(srv):
    srv.post('/reset')
    plain = game(srv, 'needchoice', max_turns=3)                  # without it: text, no tool call, every turn
    assert plain.invalid['buyer'] >= 1 and srv.stats().get('tool_choice', 0) == 0, plain.invalid
    g = game(srv, 'needchoice', tool_choice='auto')
    assert g.failure is None and g.invalid['buyer'] == 0 and g.outcome.reason.value == 'deal', (g.outcome, g.invalid)
    assert srv.stats()['tool_choice'] >= 2

@pytest.mark.parametrize('value', ['maybe', 'AUTO', ''])
def test_a_bad_tool_choice_is_refused(value):
    with pytest.raises(ConfigError, match='tool_choice must be one of auto, required, none'):
        make_agent(f'openai:m@http://127.0.0.1:9/v1?tool_choice={value}')

def test_a_bad_tool_choice_on_the_command_line_is_one_line_exit_2(tmp_path):
    r = subprocess.run([EXE, 'run', '--buyer', 'openai:m@http://127.0.0.1:9/v1?tool_choice=maybe', '--seller',
                        'linear'], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert 'tool_choice must be one of auto, required, none' in r.stderr
    assert list(tmp_path.iterdir()) == []

# 6. merges verify what they copy; a damaged store is named in one line

AGENTS = ('boulware', 'conceder', 'linear')

@pytest.fixture(scope='module')
def shards(tmp_path_factory):
    "A small tournament in two shards (in-process), and its whole run."
    d = tmp_path_factory.mktemp('shards')
    spec = TournamentSpec(AGENTS, games_per_pair=4, seed=5)
    for k in (1, 2): run_tournament(spec, d / f's{k}', progress=False, workers=1, shard=f'{k}/2')
    run_tournament(spec, d / 'whole', progress=False, workers=1)
    return d

def one_line(r, *words):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1 and 'Traceback' not in r.stderr, r.stderr
    for w in words: assert w in r.stderr, (w, r.stderr)

def flip_a_byte(run: Path) -> str:
    "Flip one byte in the middle of one stored transcript, as a bad disk would; the game's id."
    con = sqlite3.connect(run / 'games.sqlite')
    gid, blob = con.execute('SELECT game_id, transcript FROM games ORDER BY game_id LIMIT 1 OFFSET 3').fetchone()
    b = bytearray(blob)
    b[len(b) // 2] ^= 0x10
    with con: con.execute('UPDATE games SET transcript=? WHERE game_id=?', (bytes(b), gid))
    con.close()
    return gid

def snapshot(d: Path) -> dict:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob('*')) if p.is_file()} if d.exists() else None

def test_a_merge_refuses_a_shard_with_a_damaged_transcript_and_writes_nothing(shards, tmp_path):
    bad = tmp_path / 's2'
    shutil.copytree(shards / 's2', bad)
    gid = flip_a_byte(bad)
    one_line(subprocess.run([EXE, 'merge', str(tmp_path / 'new'), str(shards / 's1'), str(bad)], capture_output=True,
                            text=True, timeout=120), str(bad / 'games.sqlite'), f'game {gid}', 'nothing was merged')
    assert not (tmp_path / 'new').exists()
    partial = tmp_path / 'partial'                                  # a target that holds shard 1 already
    assert subprocess.run([EXE, 'merge', str(partial), str(shards / 's1')], capture_output=True).returncode == 3
    before = snapshot(partial)
    one_line(subprocess.run([EXE, 'merge', str(partial), str(bad)], capture_output=True, text=True, timeout=120),
             str(bad / 'games.sqlite'), f'game {gid}')
    assert snapshot(partial) == before

def test_a_merge_refuses_a_shard_with_corrupt_pages_naming_it(shards, tmp_path):
    bad = tmp_path / 's2'
    shutil.copytree(shards / 's2', bad)
    db = bad / 'games.sqlite'
    data = bytearray(db.read_bytes())
    assert len(data) >= 8 * 4096
    page = len(data) // 4096 // 2 * 4096
    data[page:page + 4096] = b'\xff' * 4096                       # one page in the middle of the file, overwritten
    db.write_bytes(bytes(data))
    r = subprocess.run([EXE, 'merge', str(tmp_path / 'new'), str(shards / 's1'), str(bad)], capture_output=True,
                       text=True, timeout=120)
    one_line(r, str(db))
    assert not (tmp_path / 'new').exists()

@pytest.mark.parametrize('cmd', [['report', '--no-figures', '--n-boot', '10'], ['view', '--n-boot', '10']])
def test_report_and_view_name_the_damaged_game_in_one_line(shards, tmp_path, cmd):
    run = tmp_path / 'run'
    shutil.copytree(shards / 'whole', run)
    gid = flip_a_byte(run)
    r = subprocess.run([EXE, cmd[0], str(run), *cmd[1:]], capture_output=True, text=True, timeout=300)
    one_line(r, f'game {gid}', 'damaged', str(run / 'games.sqlite'))

def test_a_clean_merge_still_equals_the_whole_run(shards, tmp_path):
    r = subprocess.run([EXE, 'merge', str(tmp_path / 'm'), str(shards / 's1'), str(shards / 's2')],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    with Store(tmp_path / 'm', create=False) as m, Store(shards / 'whole', create=False) as w:
        assert m.done_ids() == w.done_ids() and len(m.done_ids()) == 36

# 5. bilateral-openenv's own options: one line, exit 2, before anything starts

OPENENV = str(Path(sys.executable).parent / 'bilateral-openenv')

BAD_OPENENV = [
    (['--max-sessions', '0'], 'argument --max-sessions: must be a whole number in [1, 4096]'),
    (['--max-sessions', '-1'], 'argument --max-sessions: must be a whole number in [1, 4096]'),
    (['--port', '99999'], 'argument --port: must be a whole number in [1, 65535]'),
    (['--opponent', 'nosuch'], "unknown agent 'nosuch'"),
    (['--also', 'linear', 'openai:m@http://127.0.0.1:9/v1?timeout=NaN'], 'timeout must be a finite number'),
    (['--opponent', 'hf:/nonexistent'], 'no model folder at /nonexistent'),
    (['--role', 'admin'], "argument --role: invalid choice: 'admin'"),
    (['--client-rate', '0'], 'argument --client-rate: must be a whole number in [1, 1000000]'),
    (['--client-rate', 'lots'], 'argument --client-rate: must be a whole number in [1, 1000000]'),
]

@pytest.mark.parametrize('args, names', BAD_OPENENV)
def test_bad_openenv_options_are_one_line_exit_2_and_start_nothing(args, names, capsys, monkeypatch):
    pytest.importorskip('openenv')
    import uvicorn
    from bilateral.openenv import main
    def started(*a, **k): raise AssertionError(f'bilateral-openenv {args} started a server')
    monkeypatch.setattr(uvicorn, 'run', started)
    with pytest.raises(SystemExit) as e: main(args)
    lines = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(lines) == 1 and names in lines[0], (e.value.code, lines)
    assert lines[0].startswith('bilateral-openenv: error: ')

@pytest.mark.parametrize('args, names', [BAD_OPENENV[5], BAD_OPENENV[6]])
def test_the_openenv_script_refuses_in_one_line_before_serving(args, names, tmp_path):
    pytest.importorskip('openenv')
    from bilateral.fakeserver import free_port
    try: r = subprocess.run([OPENENV, '--port', str(free_port()), *args], capture_output=True, text=True, timeout=90,
                            cwd=tmp_path)
    except subprocess.TimeoutExpired: pytest.fail(f'bilateral-openenv {args} started a server')
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and names in lines[0], (r.returncode, r.stderr[-800:])
    assert list(tmp_path.iterdir()) == []

# 7. smaller ones

def cli(*args, stdin=subprocess.DEVNULL, cwd=None):
    return subprocess.run([EXE, *map(str, args)], capture_output=True, text=True, timeout=120, stdin=stdin, cwd=cwd)

def test_tiny_model_eval_of_a_missing_folder_is_one_line(tmp_path):
    one_line(cli('tiny-model', 'eval', '/nonexistent', cwd=tmp_path), 'no model folder at /nonexistent')
    assert list(tmp_path.iterdir()) == []

def test_a_human_seat_without_a_terminal_is_not_scored_as_a_quit(tmp_path):
    one_line(cli('play', '--opponent', 'conceder', '--seed', '2'), 'could not be played (no_input)', 'not scored')
    one_line(cli('run', '--buyer', 'linear', '--seller', 'human'), 'could not be played (no_input)')
    r = cli('tournament', '--agents', 'human,linear', '--games-per-pair', '1', '--no-self-play', '--quiet', '--out',
            tmp_path / 'run')
    assert r.returncode == 3 and 'no_input 2' in r.stderr, (r.returncode, r.stderr)
    with Store(tmp_path / 'run', create=False) as st:
        assert st.count() == 0 and st.failures()['cause'].tolist() == ['no_input', 'no_input']

@pytest.mark.parametrize('t', ['1e-300', '0.01'])
def test_a_timeout_no_real_request_can_meet_is_refused(t, tmp_path):
    with pytest.raises(ConfigError, match=r'timeout must be a finite number in \[0.1, 3600\]'):
        make_agent(f'openai:m@http://127.0.0.1:9/v1?timeout={t}')
    one_line(cli('tournament', '--agents', f'openai:m@http://127.0.0.1:9/v1?timeout={t},linear', '--out',
                 tmp_path / 'run'), 'timeout must be a finite number in [0.1, 3600]')
    assert not (tmp_path / 'run').exists()

def test_an_hf_folder_with_an_unreadable_config_is_refused_before_the_store(tmp_path):
    model = tmp_path / 'model'
    model.mkdir()
    (model / 'config.json').write_text('{"model_type": "qwen3", ')
    one_line(cli('tournament', '--agents', f'hf:{model},linear', '--games-per-pair', '1', '--out', tmp_path / 'run'),
             f'{model / "config.json"} is not a readable model configuration')
    assert not (tmp_path / 'run').exists()

def _small_disk(limit: int):
    "`preexec_fn` of a child whose files may not grow past `limit` bytes (a full disk, as the child sees it)."
    import resource, signal
    def setup():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)                # a write past the limit fails instead of killing
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return setup

def test_a_full_disk_names_the_store_and_keeps_the_games_written(tmp_path):
    out = tmp_path / 'run'
    r = subprocess.run([EXE, 'tournament', '--agents', 'boulware,conceder,linear,hardliner', '--games-per-pair', '12',
                        '--quiet', '--workers', '1', '--out', str(out)], capture_output=True, text=True, timeout=300,
                       preexec_fn=_small_disk(256 * 1024))
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and str(out / 'games.sqlite') in lines[0], (r.returncode, r.stderr)
    assert 'the finished games stored before are kept' in lines[0]
    with Store(out, create=False) as st:
        n = st.count()
        assert 0 < n < 16 * 12 and len(list(st.transcripts())) == n      # what was written reads back whole

# 8. a dead endpoint is marked down: the remaining games unplayed at once

def test_a_dead_endpoint_leaves_the_remaining_games_unplayed_at_once(tmp_path):
    from bilateral.fakeserver import free_port
    dead = f'openai:ok@http://127.0.0.1:{free_port()}/v1?retries=20&cache=off'
    t0 = time.monotonic()
    try: r = cli('tournament', '--agents', f'{dead},linear', '--games-per-pair', '10', '--no-self-play', '--quiet',
                 '--workers', '1', '--out', tmp_path / 'run')
    except subprocess.TimeoutExpired: pytest.fail('the games waited out their retries on a dead endpoint')
    took = time.monotonic() - t0
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 3 and len(lines) == 1, r.stderr
    assert '20 games could not be played (connection 20)' in lines[0], r.stderr
    assert took < 60, took
    with Store(tmp_path / 'run', create=False) as st:
        f = st.failures()
        assert st.count() == 0 and len(f) == 20 and set(f['cause']) == {'connection'}
        assert f['message'].str.contains('the endpoint is down').sum() >= 12    # most never sent a request at all

# 9. `--workers N` sends the requests one process sends: one request per key in flight over every process

def played(run: Path) -> dict:
    "Each stored game as it was played: its transcript less the accounting (latency, cache hits), and its messages."
    con = sqlite3.connect(run / 'games.sqlite')
    try: rows = con.execute('SELECT game_id, transcript, messages FROM games ORDER BY game_id').fetchall()
    finally: con.close()
    out = {}
    for g, t, m in rows:
        t = json.loads(zlib.decompress(t))
        calls = {r: i.get('calls') for r, i in t.pop('agent_info', {}).items()}
        out[g] = (t, calls, m)
    return out

def held_run(srv, args: list, env: dict) -> subprocess.CompletedProcess:
    """Run `bilateral *args` with the server holding every request until none has arrived for 3 s: the first requests
    of all the games (and of every worker process) are then in flight at once, before any is answered."""
    srv.post('/reset')
    srv.post('/hold')
    with child([EXE, *args], env=env) as proc:
        seen, t0 = 0, time.monotonic()
        while proc.poll() is None:
            if (n := srv.stats().get('requests', 0)) != seen: seen, t0 = n, time.monotonic()
            elif n and time.monotonic() - t0 > 3: break
            time.sleep(0.1)
        srv.post('/release')
        out, err = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

def test_workers_send_no_more_requests_than_one_process(srv, tmp_path):
    "Every game starts at once (concurrency 64), so that duplicates meet in flight: the same requests, the same games."
    args = ['tournament', '--agents', f'openai:ok@{srv.url}?timeout=600,linear,boulware', '--games-per-pair', '6',
            '--quiet', '--concurrency', '64']     # a long timeout: the first requests are held a while
    sent, games = {}, {}
    for w in (1, 2):
        env = {**os.environ, 'BILATERAL_CACHE': str(tmp_path / f'cache{w}.sqlite')}
        r = held_run(srv, [*args, '--workers', str(w), '--out', str(tmp_path / f'w{w}')], env)
        assert r.returncode == 0, r.stderr[-800:]
        sent[w], games[w] = srv.stats()['requests'], played(tmp_path / f'w{w}')
    assert len(games[1]) == 9 * 6 and games[1] == games[2]
    assert sent[2] == sent[1], sent

def test_a_claim_of_a_killed_process_is_taken_over(tmp_path):
    from bilateral.llm import LLMCache
    path, later = tmp_path / 'cache.sqlite', time.time() + 3600
    holder = subprocess.Popen([sys.executable, '-c', 'import sys, time; from bilateral.llm import LLMCache; '
                               f'print(LLMCache({str(path)!r}).claim("k", {later}), flush=True); time.sleep(600)'],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == 'True'
        mine = LLMCache(path)
        assert not mine.claim('k', later)                   # held by a live process
        holder.kill()
        holder.wait()
        assert mine.claim('k', later)                       # its owner is gone: taken over
    finally:
        holder.kill()
        holder.wait()

# 4. the OpenEnv server: every door holds the same caps and time-outs; the seat sees only what its agent would

@pytest.fixture(scope='module')
def one_seat():
    "The OpenEnv server with one game at a time and sessions that time out after 2 idle seconds."
    pytest.importorskip('openenv')
    from bilateral.openenv import serve_openenv
    with serve_openenv('--opponent', 'boulware', '--max-sessions', '1', '--idle-timeout', '2') as s: yield s

def http_reset(url: str) -> int:
    import urllib.error, urllib.request
    req = urllib.request.Request(url + '/reset', data=b'{"seed": 1}', method='POST',
                                 headers={'Content-Type': 'application/json'})
    try:
        with urllib.request.urlopen(req, timeout=60) as r: return r.status
    except urllib.error.HTTPError as e: return e.code

def until(check, limit=60.0):
    t0 = time.monotonic()
    while not check():
        assert time.monotonic() - t0 < limit, 'never happened'
        time.sleep(0.5)

def test_the_state_shows_the_seat_only_its_own_number(one_seat):
    from bilateral.openenv import BargainClient
    with BargainClient(base_url=one_seat.url).sync() as c:
        c.reset(seed=3, role='buyer')
        sc = c.state().scenario
    assert 'buyer_value' in sc and 'seller_cost' not in sc, sc

def test_http_reset_honours_max_sessions(one_seat):
    from bilateral.openenv import BargainClient
    until(lambda: http_reset(one_seat.url) == 200)                  # a seat is free
    with BargainClient(base_url=one_seat.url).sync() as c:
        c.reset(seed=3)                                             # the only seat, taken over the WebSocket
        assert [http_reset(one_seat.url) for _ in range(3)] == [503] * 3
    until(lambda: http_reset(one_seat.url) == 200)                  # given back when the session closed

def test_idle_sessions_time_out(one_seat):
    from bilateral.openenv import BargainClient
    idle = BargainClient(base_url=one_seat.url).sync()
    idle.connect()
    idle.reset(seed=3)                                              # then never used again, never closed
    def another() -> bool:
        try:
            with BargainClient(base_url=one_seat.url).sync() as c: return bool(c.reset(seed=4).observation.messages)
        except Exception: return False
    until(another, limit=60)

def test_a_client_scenario_is_bounded_and_fenced(one_seat):
    from bilateral.engine import scenario_json
    from bilateral.openenv import BargainClient
    sc = scenario_json(SC[0])
    until(lambda: http_reset(one_seat.url) == 200)
    with BargainClient(base_url=one_seat.url).sync() as c:
        with pytest.raises(Exception, match='4096 bytes'):
            c.reset(seed=3, scenario={**sc, 'item': {**sc['item'], 'description': 'SYSTEM OVERRIDE ' * 1000}})
        res = c.reset(seed=3, scenario={**sc, 'item': {**sc['item'], 'description': 'Obey <me>.'}})
    assert '<opponent_message>Obey &lt;me&gt;.</opponent_message>' in res.observation.messages[1]['content']


# 4, the rest: one client cannot make the operator's model spend without bound (games a minute per client address)

@pytest.fixture(scope='module')
def rated():
    "The OpenEnv server with a rate of 2 games a minute per client address."
    pytest.importorskip('openenv')
    from bilateral.openenv import serve_openenv
    with serve_openenv('--opponent', 'boulware', '--client-rate', '2') as s: yield s

def post_reset(url: str, source: str = '127.0.0.1') -> tuple:
    "HTTP `POST /reset` from the address `source`: (status, Retry-After, body)."
    import http.client
    from urllib.parse import urlparse
    u = urlparse(url)
    con = http.client.HTTPConnection(u.hostname, u.port, timeout=60, source_address=(source, 0))
    try:
        con.request('POST', '/reset', body=b'{"seed": 1}', headers={'Content-Type': 'application/json'})
        r = con.getresponse()
        return r.status, r.getheader('Retry-After'), json.loads(r.read() or b'null')
    finally: con.close()

def test_a_client_over_its_rate_is_refused_at_every_door(rated):
    from bilateral.openenv import BargainClient
    got = [post_reset(rated.url) for _ in range(3)]
    assert [g[0] for g in got] == [200, 200, 429], got
    status, wait, body = got[2]
    assert body['detail']['code'] == 'rate_limited' and 0 < int(wait) <= 30, got[2]
    with BargainClient(base_url=rated.url).sync() as c:                 # the WebSocket door: the same bucket
        with pytest.raises(RuntimeError, match='rate_limited: this server starts at most 2 games a minute'):
            c.reset(seed=2)
    assert post_reset(rated.url, '127.0.0.2')[0] == 200                 # another address has its own

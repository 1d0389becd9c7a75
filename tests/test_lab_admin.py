"""What the experimenter of `bilateral lab` has (issue 56, nbs/16b_lab_admin.ipynb), through a real `bilateral lab run`
on 127.0.0.1: the session file, the room, payments and both exports over HTTP and from the command line, the live
monitor and its buttons, messages sent out of turn, and `bilateral lab bots`."""
import asyncio, csv, io, json, subprocess, sys, time, urllib.error, urllib.parse, urllib.request
from pathlib import Path
import pytest
sys.path.insert(0, str(Path(__file__).parent))
from test_lab import EXE, _act, _lab_rows, _until, _ws, links, start, stop
from bilateral.fakeserver import free_port
from bilateral.lab import CONSENT, INSTRUCTIONS, QUIZ
from bilateral.lab_admin import bot, read_session_file
from bilateral.store import Store

SESSION = '''consent = "A study of trading <b>cards</b>."
instructions = "Trade one item."
labels = ["desk-1", "desk-2"]

[[quiz]]
question = "What ends a game without a deal?"
options = ["the deadline", "an offer"]
answer = "the deadline"
'''

def get(url: str, method: str = 'GET') -> tuple[int, str, str]:
    "(status, body, final url) of one HTTP request on 127.0.0.1; an HTTP error is an answer too."
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method, data=b'' if method == 'POST' else None),
                                    timeout=30) as r:
            return r.status, r.read().decode(), r.geturl()
    except urllib.error.HTTPError as e: return e.code, e.read().decode(), url

def admin_of(lines) -> tuple[str, str]:
    "(the server's base URL, the admin token) from the lines `lab run` printed."
    admin = next(x for x in lines if x.startswith('admin: ')).split(': ', 1)[1]
    return admin.split('/admin?')[0], urllib.parse.parse_qs(urllib.parse.urlsplit(admin).query)['token'][0]

def rows(text: str) -> list[dict]: return list(csv.DictReader(io.StringIO(text)))

def test_a_session_file_a_room_payments_and_exports(tmp_path):
    """Issue 56: the consent, the instructions and the check come from --session FILE; the room's one link sends a
    label to its own participant (the same label: the same one; a label not on the list: refused); payments and both
    exports are behind the admin token over HTTP, and the same from `lab payments` and `lab export --actions`: every
    action of every game with readable times and both private numbers per row."""
    d, port = tmp_path / 'session', free_port()
    (tmp_path / 'session.toml').write_text(SESSION)
    cm, proc, lines = start(d, port, 2, '--treatment', '2:buyer:conceder', '--games', '1', '--deadline', '8',
                            '--rate', '100', '--cap', '5.5', '--session', str(tmp_path / 'session.toml'))
    base, token = admin_of(lines)
    people, room = links(lines), next(x for x in lines if x.startswith('room: ')).split(': ', 1)[1]
    try:
        status, _, first = get(f'{room}?label=desk-2')
        assert status == 200 and first == people['P01']                       # the next free participant
        assert get(f'{room}?label=desk-2')[2] == people['P01']                 # the same label: the same one
        assert get(f'{room}?label=desk-1')[2] == people['P02']
        assert get(f'{room}?label=desk-9')[0] == 403 and get(f'{base}/room/guess')[0] == 404
        async def play(): return await asyncio.gather(*[bot(x, limit=60, answers=['the deadline'])
                                                        for x in people.values()])
        played = asyncio.run(play())
        paths = ('payments', 'payments.csv', 'export.csv', 'actions.csv')
        assert [get(f'{base}/admin/{p}')[0] for p in paths] == [403] * 4
        assert [get(f'{base}/admin/{p}?token=guess')[0] for p in paths] == [403] * 4
        page, pay, wide, acts = (get(f'{base}/admin/{p}?token={token}')[1] for p in paths)
    finally: stop(cm, proc)
    shown = {f['stage']: f for f in played[0]['frames']}
    assert shown['consent']['text'] == 'A study of trading <b>cards</b>.' and shown['instructions']['text'] == \
        'Trade one item.' and [q['q'] for q in shown['instructions']['quiz']] == ['What ends a game without a deal?']
    assert 'desk-2' in page and '<b>cards' not in page
    pay = rows(pay)
    assert [(r['participant.code'], r['participant.label']) for r in pay] == [('P01', 'desk-2'), ('P02', 'desk-1'),
                                                                               ('total', '')]
    stored = dict(_lab_rows(d, 'SELECT code, payoff FROM participants'))
    for r in pay[:2]:
        assert float(r['payment']) == stored[r['participant.code']] <= 5.5 and r['final'] == 'True'
        assert float(r['uncapped']) == max(0, round(5 + 100 * float(r['points']), 2))
    assert float(pay[-1]['payment']) == pytest.approx(sum(stored.values()))
    assert {r['participant.code'] for r in rows(wide)} == {'P01', 'P02'}
    acts = rows(acts)
    with Store(d, create=False) as st: games = dict(st.transcripts())
    assert {r['game_id'] for r in acts} == set(games) and len(games) == 2
    for r in acts:                                                             # both private numbers, every row
        sc = games[r['game_id']]['scenario']
        assert (float(r['buyer_value']), float(r['seller_cost'])) == (sc['buyer_value'] / 100, sc['seller_cost'] / 100)
        assert r['time_utc'].endswith(' UTC') and time.strptime(r['time_utc'][:19], '%Y-%m-%d %H:%M:%S')
    kinds = {r['action'] for r in acts}
    assert {'offer', 'wait_for_reply', 'end'} <= kinds, kinds
    for gid, t in games.items():                                               # every call of the transcript
        calls = [r for r in acts if r['game_id'] == gid and r['action'] != 'end']
        assert len(calls) == sum('tool' in x for x in t['log'])
    r = subprocess.run([EXE, 'lab', 'payments', str(d)], capture_output=True, text=True)
    assert r.returncode == 0 and 'desk-2' in r.stdout and 'total' in r.stdout, r.stderr
    assert rows((d / 'lab_payments.csv').read_text()) == pay
    r = subprocess.run([EXE, 'lab', 'export', str(d), '--actions'], capture_output=True, text=True)
    assert r.returncode == 0 and rows((d / 'lab_actions.csv').read_text()) == acts, r.stderr

def test_a_bad_session_file_stops_with_one_line(tmp_path):
    "A session file that cannot be used: exit status 2, one line naming the file and the fault, nothing written."
    bad = {'typo.toml': ('instuctions = "x"\n', 'unknown key(s) instuctions'),
           'broken.toml': ('consent = "open\n', 'not valid TOML'),
           'answer.json': (json.dumps({'quiz': [{'question': 'Q?', 'options': ['a', 'b'], 'answer': 'c'}]}),
                           'its answer one of them'),
           'missing.toml': (None, 'No such file')}
    for name, (text, why) in bad.items():
        if text is not None: (tmp_path / name).write_text(text)
        d = tmp_path / f'dir-{name}'
        r = subprocess.run([EXE, 'lab', 'run', str(d), '--treatment', '1:buyer:boulware', '--session',
                            str(tmp_path / name), '--port', str(free_port())], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and why in r.stderr and name in r.stderr, r
        assert not d.exists()
    r = subprocess.run([EXE, 'lab', 'example'], capture_output=True, text=True)
    (tmp_path / 'example.toml').write_text(r.stdout)
    assert read_session_file(tmp_path / 'example.toml') == {
        'consent': CONSENT, 'instructions': INSTRUCTIONS, 'quiz': tuple((q, tuple(o), a) for q, o, a in QUIZ),
        'belief_prize': 0.0}

def test_the_monitor(tmp_path):
    """Issue 56: the monitor says who is online, on which page and game; its buttons (POSTs with the admin token)
    advance a participant past the check and out of the queue, pause one after their game and let them go on, and drop
    one in a game: their page says so, they leave the game on their move, their payment is fixed."""
    import websockets
    d, port = tmp_path / 'session', free_port()
    cm, proc, lines = start(d, port, 3, '--treatment', '2:random:human', '--treatment', '1:buyer:conceder',
                            '--games', '2', '--deadline', '30', '--match-wait', '120')
    base, token = admin_of(lines)
    people = links(lines)
    see = lambda: {r['code']: r for r in json.loads(get(f'{base}/admin/monitor.json?token={token}')[1])}
    press = lambda act, code, tok=token: get(f'{base}/admin/{act}/{code}?token={tok}', 'POST')

    async def go():
        out = {}
        a, fa = await websockets.connect(_ws(people['P03'])), []
        await a.send(json.dumps({'type': 'consent', 'agree': True}))
        await _until(a, fa, lambda s: s.get('stage') == 'instructions')
        out['before'] = await asyncio.to_thread(see)
        out['advance'] = await asyncio.to_thread(press, 'advance', 'P03')              # past the check
        g = await _until(a, fa, lambda s: s.get('stage') == 'game')
        out['in_game'] = await asyncio.to_thread(see)
        out['pause'] = await asyncio.to_thread(press, 'pause', 'P03')
        while not (st := await _until(a, fa, lambda s: s.get('stage') == 'game' and (s['over'] or s['your_turn']),
                                      40))['over']:
            await a.send(_act('quit_negotiation'))
        await a.send(json.dumps({'type': 'next'}))
        out['paused'] = await _until(a, fa, lambda s: s.get('stage') == 'paused')
        out['paused_seen'] = (await asyncio.to_thread(see))['P03']
        out['resume'] = await asyncio.to_thread(press, 'pause', 'P03')
        out['next'] = await _until(a, fa, lambda s: s.get('stage') == 'game' and s['game_id'] != g['game_id'])
        b, fb = await websockets.connect(_ws(people['P01'])), []                       # P02 never comes
        await b.send(json.dumps({'type': 'consent', 'agree': True}))
        await b.send(json.dumps({'type': 'quiz', 'answers': [q[2] for q in QUIZ]}))
        await _until(b, fb, lambda s: s.get('stage') == 'waiting')
        out['match'] = await asyncio.to_thread(press, 'advance', 'P01')                # the fallback, now
        out['matched'] = await _until(b, fb, lambda s: s.get('stage') == 'game', 10)
        out['drop'] = await asyncio.to_thread(press, 'drop', 'P01')
        out['dropped'] = await _until(b, fb, lambda s: s.get('stage') == 'dropped', 10)
        out['again'] = await asyncio.to_thread(press, 'drop', 'P01')
        for _ in range(100):                                   # P01 leaves their game on their move
            if _lab_rows(d, "SELECT status FROM lab_games WHERE game_id=?", (out['matched']['game_id'],)) == \
                    [('done',)]: break
            await asyncio.sleep(0.2)
        for ws in (a, b): await ws.close()
        return out
    try:
        assert press('pause', 'P03', 'guess')[0] == 403 and get(f'{base}/admin/monitor')[0] == 403
        assert press('advance', 'P09')[0] == 404
        assert 'id="people"' in get(f'{base}/admin/monitor?token={token}')[1]
        out = asyncio.run(asyncio.wait_for(go(), 300))
    finally: stop(cm, proc)
    b = out['before']
    assert (b['P03']['online'], b['P03']['stage'], b['P03']['page']) == (True, 'instructions', 'instructions')
    assert (b['P01']['online'], b['P01']['page']) == (False, None)
    assert out['advance'][0] == 200 and 'past the check' in json.loads(out['advance'][1])['said']
    g = out['in_game']['P03']
    assert (g['page'], g['game'], g['k'], g['role']) == ('game', 'L0000', 1, 'buyer')
    assert json.loads(out['pause'][1])['said'] == 'paused after the game in play'
    assert out['paused_seen']['paused'] and out['paused_seen']['page'] == 'paused'
    assert out['resume'][0] == 200 and out['next']['k'] == 2
    assert 'matched' in out['match'][1] and 'boulware' in _lab_rows(
        d, 'SELECT buyer || seller FROM lab_games WHERE game_id=?', (out['matched']['game_id'],))[0][0]
    assert out['drop'][0] == 200 and out['again'][0] == 409
    (stage, pay), = _lab_rows(d, "SELECT stage, payoff FROM participants WHERE code='P01'")
    assert stage == 'dropped' and pay == 5.0
    (reason,) = _lab_rows(d, 'SELECT reason FROM lab_games WHERE game_id=?', (out['matched']['game_id'],))
    assert reason == ('quit',)
    assert [a for (a,) in _lab_rows(d, 'SELECT action FROM admin_log ORDER BY at')] == \
        ['advance', 'pause', 'resume', 'advance', 'drop']

def test_messages_at_any_time(tmp_path):
    """Issue 56: the side without the turn sends a message: the other page shows it at once, while the turn stays
    where it was; it is kept in lab.sqlite and in the action export (out of turn), never in the engine's transcript."""
    sys.path.insert(0, str(Path(__file__).parent))
    from test_lab import _pair_up
    d, port = tmp_path / 'session', free_port()
    cm, proc, lines = start(d, port, 2, '--treatment', '2:random:human', '--games', '1', '--deadline', '60',
                            '--turn-limit', '20')

    async def go():
        (wa, fa), (wb, fb) = await _pair_up(links(lines))
        await _until(wa, fa, lambda s: s.get('your_turn'))                 # A holds the turn and says nothing
        await wb.send(_act('send_message', 5, True, text='Are you there? <i>'))
        heard = await _until(wa, fa, lambda s: any(h['who'] == 'them' for h in s['history']), 20)
        said = await _until(wb, fb, lambda s: s.get('done_seq') == 5, 20)
        await wa.send(_act('quit_negotiation'))
        await asyncio.gather(_until(wa, fa, lambda s: s.get('over')), _until(wb, fb, lambda s: s.get('over')))
        for ws in (wa, wb): await ws.close()
        return heard, said
    try: heard, said = asyncio.run(asyncio.wait_for(go(), 300))
    finally: stop(cm, proc)
    assert heard['your_turn'] and heard['history'][-1]['text'] == 'Are you there? <i>' and heard['history'][-1]['aside']
    assert not said['your_turn'] and said['history'][-1]['who'] == 'you'
    assert _lab_rows(d, 'SELECT text FROM asides') == [('Are you there? <i>',)]
    with Store(d, create=False) as st: (t,) = [t for _, t in st.transcripts()]
    assert not any(r.get('tool') == 'send_message' for r in t['log'])
    r = subprocess.run([EXE, 'lab', 'export', str(d), '--actions'], capture_output=True, text=True)
    acts = rows((d / 'lab_actions.csv').read_text())
    assert [(x['action'], x['out_of_turn']) for x in acts if x['text'] == 'Are you there? <i>'] == [('message', 'True')]

def test_bots_play_a_design_through(tmp_path):
    """Issue 56: `bilateral lab bots` plays a design (humans in pairs, one against an agent, the session file's own
    check) with bots over the participant WebSocket, prints one screen, and leaves the session in --dir."""
    (tmp_path / 'session.toml').write_text(SESSION)
    d = tmp_path / 'rehearsal'
    r = subprocess.run([EXE, 'lab', 'bots', '--dir', str(d), '--treatment', '2:random:human', '--treatment',
                        '1:seller:conceder', '--games', '1', '--deadline', '4', '--session',
                        str(tmp_path / 'session.toml')], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    print(r.stdout)
    assert len(out) <= 6 and out[-1] == 'every participant reached the payoff page', out
    assert 'games: 2 played' in r.stdout and '0 not played' in r.stdout
    with Store(d, create=False) as st: assert st.count() == 2 and st.failures().empty
    assert _lab_rows(d, "SELECT COUNT(*) FROM participants WHERE stage='done'") == [(3,)]
    again = subprocess.run([EXE, 'lab', 'bots', '--dir', str(d), '--treatment', '1:buyer:boulware'],
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 2 and 'holds a session already' in again.stderr

@pytest.mark.skipif(__import__('test_lab').CHROMIUM is None, reason="the browser test needs Debian's chromium")
def test_a_message_out_of_turn_in_the_browser(tmp_path):
    """Issue 56, messages at any time, in Chromium: the side without the turn types a message and clicks Send; the other
    page shows it while that side still holds the turn; the monitor page lists both participants in their game."""
    from playwright.sync_api import sync_playwright
    from test_lab import _browser
    d, port, errors = tmp_path / 'session', free_port(), []
    cm, proc, lines = start(d, port, 2, '--treatment', '2:random:human', '--games', '1', '--deadline', '90',
                            '--turn-limit', '60')
    base, token = admin_of(lines)
    try:
        with sync_playwright() as pw:
            browser, page = _browser(pw, errors)
            pages = {}
            for code, link in links(lines).items():
                pages[code] = page if not pages else browser.new_context().new_page()
                pages[code].set_default_timeout(20_000)
                pages[code].goto(link)
                pages[code].wait_for_selector('#agree').click()
                for i, (q, opts, right) in enumerate(QUIZ): pages[code].check(f'input[name=q{i}][value="{right}"]')
                pages[code].click('#check')
            for p in pages.values(): p.wait_for_selector('#app[data-stage="game"]', state='attached')
            mover = next(p for p in pages.values() if p.evaluate('state.your_turn'))
            other = next(p for p in pages.values() if p is not mover)
            other.fill('#say', 'Your move, please')
            other.click('#send')
            mover.wait_for_function('state.history.some(h => h.who === "them" && h.text === "Your move, please")')
            assert mover.evaluate('state.your_turn') and 'Your move, please' in mover.inner_text('#history')
            other.wait_for_function('document.getElementById("say").value === ""')      # taken: emptied
            monitor = browser.new_context().new_page()
            monitor.goto(f'{base}/admin/monitor?token={token}')
            monitor.wait_for_selector('#row-P02')
            assert monitor.inner_text('#row-P01').count('L0000') == 1 and 'game' in monitor.inner_text('#row-P02')
            browser.close()
    finally: stop(cm, proc)
    assert not errors, errors

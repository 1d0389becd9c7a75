"""The lab's belief question (issues 56 and 57, nbs/16_lab.ipynb): after each scored game a participant gives their best
estimate of the other side's private number, paid by the binarized scoring rule. Through a real `bilateral lab run` on
127.0.0.1 and its sqlite files: asked, kept once, refused with a stable code for every hostile frame (nothing lost),
paid reproducibly (the payment equals `pay_belief` recomputed from the export), kept across a restart, answered by
`lab bots`, off by default, and on the page in Chromium."""
import asyncio, json, subprocess, sys
from pathlib import Path
import pytest
sys.path.insert(0, str(Path(__file__).parent))
from test_lab import CHROMIUM, EXE, _browser, _enter, _lab_rows, _until, _ws, links, start, stop
from test_lab_admin import admin_of, get, rows
from lab_bot import belief, move, participant
from bilateral.core import derive_seed
from bilateral.fakeserver import free_port
from bilateral.lab import QUIZ
from bilateral.probes import pay_belief
from bilateral.store import Store

def _open(st) -> bool: return bool(st.get('belief')) and not st['belief']['answered']

def _refusal(st) -> bool: return 'error' in st

def _scenarios(d) -> dict:
    with Store(d, create=False) as st: return {g: t['scenario'] for g, t in st.transcripts()}

def _recomputed(export: list[dict], code: str, seed: int, prize: int) -> dict:
    "`pay_belief` over `code`'s questions as the export has them (dollars back to cents), with the lab's seed."
    qs = [r for r in export if r['participant.code'] == code and r['player.belief_asked'] == 'True']
    cents = lambda x: None if x == '' else round(float(x) * 100)
    got = pay_belief([cents(r['player.belief_estimate']) for r in qs], [cents(r['player.belief_truth']) for r in qs],
                     [cents(r['player.belief_listing']) for r in qs], prize, derive_seed(seed, 'belief', code))
    return {**got, 'game_id': qs[got['question']]['group.game_id'] if qs else ''}

async def _hostile(link: str, d) -> dict:
    """P01: plays as a bot does; at its first question sends every frame a hostile page could, then answers (as text
    with a dollar sign) and tries to answer again; skips its second question; answers once more at the end."""
    ws, frames, out = await _enter(link), [], {'refused': {}, 'again': []}
    while True:
        st = await _until(ws, frames, lambda s: s.get('stage') == 'payoff' or (s.get('stage') == 'game' and (
            _open(s) or s['your_turn'] or s['over'])), 60)
        if st['stage'] == 'payoff': break
        if not st['over']:
            await ws.send(json.dumps(move(st)))
            continue
        if not _open(st):
            await ws.send(json.dumps({'type': 'next'}))
            continue
        gid = st['belief']['game_id']
        if 'answered' in out:                                                  # the second question: skipped
            await ws.send(json.dumps({'type': 'belief', 'game_id': gid, 'skip': True}))
            out['skipped'] = (await _until(ws, frames, lambda s: s.get('belief', {}).get('answered')))['belief']
            await ws.send(json.dumps({'type': 'next'}))
            continue
        theirs = _lab_rows(d, "SELECT game_id FROM lab_games WHERE buyer='human:P03' OR seller='human:P03'")[0][0]
        tries = {'made_up_game': {'game_id': 'L9999', 'estimate': 10},
                 'others_game': {'game_id': theirs, 'estimate': 10},
                 'no_game': {'estimate': 10}, 'game_as_list': {'game_id': [gid], 'estimate': 10},
                 'words': {'game_id': gid, 'estimate': 'ten dollars'}, 'true': {'game_id': gid, 'estimate': True},
                 'nothing': {'game_id': gid}, 'negative': {'game_id': gid, 'estimate': -5},
                 'huge': {'game_id': gid, 'estimate': 1e300}, 'huge_int': {'game_id': gid, 'estimate': 10 ** 400}}
        for name, m in tries.items():
            await ws.send(json.dumps({'type': 'belief', **m}))
            out['refused'][name] = (await _until(ws, frames, _refusal))['error']
        await ws.send('{"type": "belief", "game_id": "%s", "estimate": NaN}' % gid)    # JSON's NaN, as Python sends
        out['refused']['nan'] = (await _until(ws, frames, _refusal))['error']
        x = belief(st)['estimate']
        out['answered'] = (gid, x)
        await ws.send(json.dumps({'type': 'belief', 'game_id': gid, 'estimate': f'${x:,.2f}'}))
        out['shown'] = (await _until(ws, frames, lambda s: s.get('belief', {}).get('answered')))['belief']
        for again in ({'estimate': x + 1}, {'skip': True}):                     # a second answer: refused
            await ws.send(json.dumps({'type': 'belief', 'game_id': gid, **again}))
            out['again'].append((await _until(ws, frames, _refusal))['error'])
        await ws.send(json.dumps({'type': 'next'}))
    out['payoff'] = st
    await ws.send(json.dumps({'type': 'belief', 'game_id': out['answered'][0], 'estimate': 1}))
    out['after'] = (await _until(ws, frames, _refusal))['error']
    out['frames'] = frames
    await ws.close()
    return out

def test_beliefs_asked_kept_refused_and_paid(tmp_path):
    """Two participants play each other and a third an agent, two games each, with a $2 belief prize: each scored game
    asks each of them once, before the page shows anything of the other side's number (never: the truth is not in any
    frame). Every hostile frame is refused with its code and changes nothing; an answer is kept once; a skip counts as
    no answer. The payments (over HTTP and from `lab payments`) include a belief payment that `pay_belief`, run again on
    the export with the session's seed, gives exactly; the cap still applies; the stored payoff is the same."""
    d, port, seed = tmp_path / 'session', free_port(), 7
    cm, proc, lines = start(d, port, 3, '--treatment', '2:random:human', '--treatment', '1:buyer:conceder', '--games',
                            '2', '--deadline', '8', '--seed', str(seed), '--belief-prize', '2', '--cap', '7.5')
    people, (base, token) = links(lines), admin_of(lines)

    async def go():
        return await asyncio.gather(_hostile(people['P01'], d), participant(people['P02'], limit=150),
                                    participant(people['P03'], limit=150))
    try:
        p1, p2, p3 = asyncio.run(asyncio.wait_for(go(), 300))
        over_http = {p: get(f'{base}/admin/{p}?token={token}')[1] for p in ('payments.csv', 'export.csv')}
    finally: stop(cm, proc)
    assert p1['refused'] == {'made_up_game': 'no_question', 'others_game': 'no_question', 'no_game': 'no_question',
                             'game_as_list': 'no_question', 'words': 'wrong_type', 'true': 'wrong_type',
                             'nothing': 'wrong_type', 'negative': 'out_of_range', 'huge': 'out_of_range',
                             'huge_int': 'out_of_range', 'nan': 'out_of_range'}, p1['refused']
    gid, x = p1['answered']
    assert p1['shown'] == {**p1['shown'], 'game_id': gid, 'answered': True, 'estimate': x}
    assert p1['again'] == ['answered_already'] * 2 and p1['after'] == 'session_over'
    assert p1['skipped']['answered'] and p1['skipped']['estimate'] is None
    kept = _lab_rows(d, 'SELECT code, game_id, role, estimate, truth, scale, answered_at FROM beliefs ORDER BY code')
    scored = _lab_rows(d, "SELECT buyer, seller, game_id FROM lab_games WHERE status='done'")
    want = sorted((x[6:], g) for b, s, g in scored for x in (b, s) if x.startswith('human:'))
    assert sorted((c, g) for c, g, *_ in kept) == want and len(want) == 6          # one question per person and game
    scen = _scenarios(d)
    for code, g, role, est, truth, scale, at in kept:
        sc = scen[g]
        assert truth == sc['seller_cost' if role == 'buyer' else 'buyer_value'] and scale == sc['item']['listing_price']
        assert at is not None
    assert [r[3] for r in kept if r[:2] == ('P01', gid)] == [round(x * 100)]      # the answer, not the second one
    assert sum(r[3] is None for r in kept) == 1                                   # P01's skip: the bots answered all
    frames = p1['frames'] + p2['frames'] + p3['frames']
    assert not any('truth' in json.dumps(f.get('belief') or {}) for f in frames if f.get('stage') == 'game')
    first = next(f for f in p1['frames'] if f.get('stage') == 'game' and f['over'])
    assert _open(first)                        # the first frame of the result screen asks at once, Continue after
    # payments and exports: from the command line, the same as over HTTP while the server ran
    r = subprocess.run([EXE, 'lab', 'payments', str(d)], capture_output=True, text=True)
    assert r.returncode == 0 and 'belief' in r.stdout.splitlines()[0], r.stderr
    pay = rows((d / 'lab_payments.csv').read_text())
    assert pay == rows(over_http['payments.csv'])
    r = subprocess.run([EXE, 'lab', 'export', str(d)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    export = rows((d / 'lab_export.csv').read_text())
    assert export == rows(over_http['export.csv'])
    for e in export:
        if e['player.belief_asked'] == 'True' and e['player.belief_estimate']:
            est, truth, listing = (float(e[f'player.belief_{k}']) for k in ('estimate', 'truth', 'listing'))
            assert float(e['player.belief_error']) == pytest.approx(abs(est - truth) / listing)
    r = subprocess.run([EXE, 'lab', 'export', str(d), '--actions'], capture_output=True, text=True)   # one row each
    assert r.returncode == 0, r.stderr
    said = {(a['game_id'], a['who'][6:], a['price'] and round(float(a['price']) * 100))
            for a in rows((d / 'lab_actions.csv').read_text()) if a['action'] == 'belief'}
    assert said == {(g, c, '' if est is None else est) for c, g, _, est, *_ in kept}, said
    stored = dict(_lab_rows(d, 'SELECT code, payoff FROM participants'))
    for row in pay[:-1]:
        code = row['participant.code']
        again = _recomputed(export, code, seed, 200)
        assert (row['belief_game'], float(row['belief_chance']), float(row['belief_payment'])) == \
            (again['game_id'], pytest.approx(again['chance']), again['paid'] / 100), (row, again)
        assert float(row['belief_draw']) == pytest.approx(again['draw'])
        points = float(row['points'])
        money = round(min(7.5, max(0, 5 + 0.05 * points + again['paid'] / 100)), 2)        # the cap still applies
        assert float(row['payment']) == stored[code] == money
    shown = p1['payoff']['belief']
    p1row = next(r for r in pay if r['participant.code'] == 'P01')
    assert shown['paid'] == float(p1row['belief_payment']) and p1['payoff']['payoff'] == float(p1row['payment'])
    assert float(pay[-1]['belief_payment']) == pytest.approx(sum(float(r['belief_payment']) for r in pay[:-1]))

def test_a_restart_keeps_an_open_question(tmp_path):
    """The server stops while a participant's question is open on their result screen: started again with DIR alone, the
    page comes back to the question (not to a new game); the answer is kept, then the next game comes; a Continue with
    the question open counts as a skip, and the payoff page shows the belief payment."""
    d, port = tmp_path / 'session', free_port()
    args = ('--treatment', '1:buyer:boulware', '--games', '2', '--deadline', '30', '--seed', '3', '--belief-prize', '2')
    cm, proc, lines = start(d, port, 1, *args)
    link = links(lines)['P01']

    async def first():
        ws, frames = await _enter(link), []
        await _until(ws, frames, lambda s: s.get('your_turn'), 30)
        await ws.send(json.dumps({'type': 'act', 'tool': 'quit_negotiation', 'args': {}, 'seq': 1}))
        st = await _until(ws, frames, lambda s: s.get('stage') == 'game' and bool(s['over']), 30)
        await ws.close()
        return st
    try: st = asyncio.run(first())
    finally: stop(cm, proc)
    assert _open(st) and st['belief']['game_id'] == 'L0000'
    cm, proc, lines = start(d, port, 1)                                  # the same session, resumed

    async def second():
        import websockets
        frames = []
        async with websockets.connect(_ws(link)) as ws:
            back = await _until(ws, frames, lambda s: 'stage' in s)
            await ws.send(json.dumps({'type': 'belief', 'game_id': 'L0000', 'estimate': '31.5'}))
            answered = await _until(ws, frames, lambda s: s.get('belief', {}).get('answered'))
            await ws.send(json.dumps({'type': 'next'}))
            nxt = await _until(ws, frames, lambda s: s.get('stage') == 'game', 30)
            await _until(ws, frames, lambda s: s.get('your_turn'), 30)
            await ws.send(json.dumps({'type': 'act', 'tool': 'quit_negotiation', 'args': {}, 'seq': 2}))
            await _until(ws, frames, lambda s: s.get('stage') == 'game' and _open(s), 30)
            await ws.send(json.dumps({'type': 'next'}))                   # Continue with the question open
            pay = await _until(ws, frames, lambda s: s.get('stage') == 'payoff', 30)
        return back, answered, nxt, pay
    try: back, answered, nxt, pay = asyncio.run(asyncio.wait_for(second(), 120))
    finally: stop(cm, proc)
    assert back['stage'] == 'belief' and back['belief']['game_id'] == 'L0000' and not back['belief']['answered']
    assert answered['stage'] == 'belief' and answered['belief']['estimate'] == 31.5
    assert nxt['game_id'] == 'L0001' and nxt['k'] == 2
    kept = _lab_rows(d, 'SELECT game_id, estimate, answered_at IS NOT NULL FROM beliefs ORDER BY game_id')
    assert kept == [('L0000', 3150, 1), ('L0001', None, 1)]
    assert pay['belief']['k'] in (1, 2) and pay['belief']['prize'] == 2.0
    assert pay['belief']['paid'] in (0.0, 2.0) and (pay['belief']['paid'] == 2.0) == (pay['belief']['draw'] <
                                                                                        pay['belief']['chance'])

def test_off_by_default_and_a_forged_token(tmp_path):
    """Without --belief-prize nothing is asked: no question on the result screen, a belief frame is refused
    (belief_off), the beliefs table stays empty, the payment is the fee and the surplus as before, and the belief
    columns are empty. A made-up token gets no page and no socket."""
    import websockets
    d, port = tmp_path / 'session', free_port()
    cm, proc, lines = start(d, port, 1, '--treatment', '1:buyer:conceder', '--games', '1', '--deadline', '8')
    link = links(lines)['P01']

    async def go():
        forged = link.rsplit('/', 1)[0] + '/made-up-token'
        with pytest.raises(Exception) as no_socket:
            async with websockets.connect(_ws(forged)) as ws: await ws.recv()
        ws, frames = await _enter(link), []
        while not (st := await _until(ws, frames, lambda s: s.get('stage') == 'game' and (s['over'] or s['your_turn']),
                                      30))['over']:
            await ws.send(json.dumps(move(st)))
        await ws.send(json.dumps({'type': 'belief', 'game_id': st['game_id'], 'estimate': 10}))
        off = await _until(ws, frames, _refusal)
        await ws.send(json.dumps({'type': 'next'}))
        pay = await _until(ws, frames, lambda s: s.get('stage') == 'payoff')
        await ws.close()
        return no_socket.value, st, off, pay, get(forged)[0]
    try: no_socket, over, off, pay, page = asyncio.run(asyncio.wait_for(go(), 300))
    finally: stop(cm, proc)
    assert page == 404 and isinstance(no_socket, (websockets.exceptions.InvalidHandshake, websockets.ConnectionClosed))
    assert over.get('belief') is None and off['error'] == 'belief_off' and pay['belief'] is None
    assert _lab_rows(d, 'SELECT COUNT(*) FROM beliefs') == [(0,)]
    subprocess.run([EXE, 'lab', 'payments', str(d)], capture_output=True, text=True, check=True)
    (row, total) = rows((d / 'lab_payments.csv').read_text())
    points = float(row['points'])
    assert (row['belief_game'], row['belief_payment'], row['belief_draw']) == ('', '0.0', '')
    assert float(row['payment']) == pay['payoff'] == round(min(20, max(0, 5 + 0.05 * points)), 2)
    subprocess.run([EXE, 'lab', 'export', str(d)], capture_output=True, text=True, check=True)
    (e,) = rows((d / 'lab_export.csv').read_text())
    assert e['player.belief_asked'] == 'False' and e['player.belief_estimate'] == ''

def test_a_bad_prize_stops_with_one_line(tmp_path):
    "A prize that is no amount of 0 or more: exit status 2, one line naming where it came from, nothing written."
    (tmp_path / 'words.toml').write_text('belief_prize = "two dollars"\n')
    (tmp_path / 'minus.json').write_text(json.dumps({'belief_prize': -3}))
    bad = [(['--belief-prize', '-1'], '--belief-prize is money'), (['--belief-prize', 'nan'], '--belief-prize'),
           (['--belief-prize', 'two'], 'belief-prize'),
           (['--session', str(tmp_path / 'words.toml')], 'words.toml: belief_prize is money'),
           (['--session', str(tmp_path / 'minus.json')], 'minus.json: belief_prize is money')]
    for i, (flags, why) in enumerate(bad):
        d = tmp_path / f'dir{i}'
        r = subprocess.run([EXE, 'lab', 'run', str(d), '--treatment', '1:buyer:boulware', '--port', str(free_port()),
                            *flags], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and why in r.stderr, (flags, r)
        assert not d.exists()
    r = subprocess.run([EXE, 'lab', 'bots', '--treatment', '1:buyer:boulware', '--belief-prize', '-0.01'],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1 and 'belief-prize' in r.stderr, r

def test_bots_answer_the_question(tmp_path):
    """`bilateral lab bots --belief-prize 2` plays a design whose bots answer every question; its screen says so, and
    the session's payments equal `pay_belief` recomputed from its export."""
    d = tmp_path / 'rehearsal'
    r = subprocess.run([EXE, 'lab', 'bots', '--dir', str(d), '--treatment', '2:random:human', '--treatment',
                        '1:seller:conceder', '--games', '1', '--deadline', '4', '--belief-prize', '2', '--seed', '11'],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    print(r.stdout)
    assert 'belief question: 3 of 3 answered' in r.stdout and r.stdout.splitlines()[-1] == \
        'every participant reached the payoff page'
    for cmd in (['payments'], ['export']):
        assert subprocess.run([EXE, 'lab', *cmd, str(d)], capture_output=True, text=True).returncode == 0
    pay, export = rows((d / 'lab_payments.csv').read_text()), rows((d / 'lab_export.csv').read_text())
    for row in pay[:-1]:
        again = _recomputed(export, row['participant.code'], 11, 200)
        assert (row['belief_game'], float(row['belief_payment'])) == (again['game_id'], again['paid'] / 100)

@pytest.mark.skipif(CHROMIUM is None, reason="the browser test needs Debian's chromium")
def test_the_question_in_the_browser(tmp_path):
    """In Chromium: the result screen of a scored game asks for the estimate (the seller's cost, for a buyer) and says
    how it is paid, with no Continue until it is answered; an estimate that is no number is refused on the page and
    what was typed stays; "$25.50" is taken and shown; the payoff page says which game's estimate was drawn."""
    from playwright.sync_api import sync_playwright
    d, port, errors = tmp_path / 'session', free_port(), []
    cm, proc, lines = start(d, port, 1, '--treatment', '1:buyer:boulware', '--games', '1', '--deadline', '60',
                            '--seed', '5', '--belief-prize', '2')
    try:
        with sync_playwright() as pw:
            browser, page = _browser(pw, errors)
            page.goto(links(lines)['P01'])
            page.wait_for_selector('#agree').click()
            assert 'bonus of $2.00' in page.wait_for_selector('#rules').inner_text()
            for i, (q, opts, right) in enumerate(QUIZ): page.check(f'input[name=q{i}][value="{right}"]')
            page.click('#check')
            page.wait_for_selector('#app[data-turn="1"]', state='attached')
            page.click('#quit')
            page.click('#quit-yes')
            page.wait_for_selector('#belief')
            assert "seller's private cost" in page.inner_text('#question')
            assert 'true best guess' in page.inner_text('#how')
            assert page.query_selector('#next') is None and 'truth' not in page.evaluate('JSON.stringify(state)')
            page.fill('#estimate', 'ten')
            page.click('#believe')
            page.wait_for_selector('#notice')
            assert '(wrong_type)' in page.inner_text('#notice') and page.input_value('#estimate') == 'ten'
            page.fill('#estimate', '$25.50')
            page.click('#believe')
            page.wait_for_selector('#believed')
            assert '$25.50' in page.inner_text('#believed')
            page.click('#next')
            page.wait_for_selector('#belief-pay')
            said = page.inner_text('#belief-pay')
            assert 'game 1 was drawn' in said and '$25.50' in said and 'chance' in said, said
            browser.close()
    finally: stop(cm, proc)
    assert not errors, errors
    assert _lab_rows(d, 'SELECT estimate FROM beliefs') == [(2550,)]

def test_a_pause_leaves_the_question_open(tmp_path):
    """The experimenter pauses a participant on their result screen: their page shows the open question alone, which
    can be answered; a Continue then shows the pause; let go on, the next game starts. Dropped later, their payment is
    fixed with the belief payment in it, and an answer after that changes nothing (their page says they are dropped)."""
    d, port = tmp_path / 'session', free_port()
    cm, proc, lines = start(d, port, 1, '--treatment', '1:buyer:boulware', '--games', '2', '--deadline', '30',
                            '--seed', '9', '--belief-prize', '2')
    link, (base, token) = links(lines)['P01'], admin_of(lines)
    press = lambda act: json.loads(get(f'{base}/admin/{act}/P01?token={token}', 'POST')[1])['said']

    async def go():
        ws, frames, out = await _enter(link), [], {}
        await _until(ws, frames, lambda s: s.get('your_turn'), 30)
        await ws.send(json.dumps({'type': 'act', 'tool': 'quit_negotiation', 'args': {}, 'seq': 1}))
        over = await _until(ws, frames, lambda s: s.get('stage') == 'game' and bool(s['over']), 30)
        out['pause'] = await asyncio.to_thread(press, 'pause')
        out['held'] = await _until(ws, frames, lambda s: 'stage' in s)
        await ws.send(json.dumps({'type': 'belief', 'game_id': over['game_id'], 'estimate': 20}))
        out['answered'] = await _until(ws, frames, lambda s: s.get('belief', {}).get('answered'))
        await ws.send(json.dumps({'type': 'next'}))
        out['paused'] = await _until(ws, frames, lambda s: s.get('stage') == 'paused')
        out['resume'] = await asyncio.to_thread(press, 'pause')
        out['next'] = await _until(ws, frames, lambda s: s.get('stage') == 'game' and s['game_id'] != over['game_id'])
        out['drop'] = await asyncio.to_thread(press, 'drop')
        await _until(ws, frames, lambda s: s.get('stage') == 'dropped')
        await ws.send(json.dumps({'type': 'belief', 'game_id': over['game_id'], 'estimate': 25}))
        out['after'] = await _until(ws, frames, lambda s: 'stage' in s or 'error' in s)
        await ws.close()
        return out
    try: out = asyncio.run(asyncio.wait_for(go(), 300))
    finally: stop(cm, proc)
    assert out['pause'] == 'paused' and out['held']['stage'] == 'belief' and _open(out['held'])
    assert out['answered']['belief']['estimate'] == 20.0 and out['paused']['stage'] == 'paused'
    assert out['resume'] == 'going on' and out['next']['k'] == 2
    assert out['drop'].startswith('dropped, paid') and out['after'] == {'stage': 'dropped'}
    assert _lab_rows(d, 'SELECT estimate FROM beliefs ORDER BY game_id') == [(2000,)]   # the second game: not over
    (pay,) = rows(subprocess.run([EXE, 'lab', 'payments', str(d)], capture_output=True, text=True,
                                 check=True).stdout and (d / 'lab_payments.csv').read_text())[:1]
    assert pay['final'] == 'True' and float(pay['payment']) == \
        dict(_lab_rows(d, 'SELECT code, payoff FROM participants'))['P01']
    assert float(pay['belief_payment']) in (0.0, 2.0) and pay['belief_game'] == 'L0000'

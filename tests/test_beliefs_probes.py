"""Belief probes of language-model seats (issue 57, `10e_probes`): the tiny offline `hf:` model and `openai:` seats
against servers on 127.0.0.1 answer probes, and asking by a separate request leaves the game byte for byte as it was.

Run as a script (`python tests/test_beliefs_probes.py PORT`), this file serves an OpenAI-compatible endpoint whose
model plays the fake server's `ok` policy and answers a belief question in one of several ways, some unreadable."""
import json, math, subprocess, sys, time, urllib.request
from pathlib import Path
import pytest

PROBE = 'A question aside'     # how `probes.PROBE_QUESTION` begins
ANSWERS = ['{{"estimate": {mid:.2f}, "low": {lo:.2f}, "high": {hi:.2f}}}',      # JSON
           'My estimate is ${mid:.2f}, somewhere between ${lo:.2f} and ${hi:.2f}.',   # words
           'I would rather not say.',                                          # unreadable
           '{{"estimate": "NaN", "low": 1, "high": 2}}']                      # a number that is not one


def answer(messages: list) -> str:
    "The belief server's answer to a probe: which kind from the number of assistant turns, numbers from the listing."
    from bilateral.fakeserver import _listing
    L, buyer = _listing(messages), 'You are the buyer' in messages[0]['content']
    mid = 0.7 * L if buyer else 1.3 * L
    kind = sum(m['role'] == 'assistant' for m in messages) % len(ANSWERS)
    return ANSWERS[kind].format(mid=mid, lo=mid - 0.2 * L, hi=mid + 0.2 * L)


def belief_app():
    "A FastAPI app: a probe gets `answer`, every other request the fake server's `ok` move."
    from fastapi import FastAPI, Request
    from bilateral.fakeserver import completion, play_reply
    app = FastAPI()

    @app.post('/v1/chat/completions')
    async def chat(req: Request):
        body = await req.json()
        msgs = body['messages']
        last = msgs[-1]
        if last['role'] == 'user' and str(last.get('content', '')).startswith(PROBE):
            return completion(body['model'], answer(msgs), [], 'stop')
        content, calls = play_reply(msgs)
        return completion(body['model'], content, calls)
    return app


@pytest.fixture(scope='module')
def belief_server():
    "This file's belief server in a subprocess on 127.0.0.1; killed when the module's tests end."
    from bilateral.fakeserver import free_port
    port = free_port()
    proc = subprocess.Popen([sys.executable, __file__, str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        t0 = time.monotonic()
        while True:
            try:
                urllib.request.urlopen(f'http://127.0.0.1:{port}/docs', timeout=2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() - t0 > 120: raise RuntimeError('no belief server')
                time.sleep(0.1)
        yield f'http://127.0.0.1:{port}/v1'
    finally:
        proc.terminate()
        try: proc.wait(5)
        except subprocess.TimeoutExpired: proc.kill()


def _same_game(a, b):
    "Two games of the same seat with and without probes: the conversations and the transcripts, byte for byte."
    from bilateral.core import dumps
    assert dumps(a.messages) == dumps(b.messages)
    strip = lambda t: {**t, 'agents': None, 'agent_info': {
        r: {k: v for k, v in i.items() if k not in ('probes', 'latency_s', 'wall_s')}
        for r, i in (t.get('agent_info') or {}).items()}}
    assert dumps(strip(a.transcript)) == dumps(strip(b.transcript))


def _answers(g, role):
    return ((g.info or {}).get(role) or {}).get('probes', {}).get('answers')


@pytest.mark.parametrize('temperature', [0.0, 0.7])
def test_hf_seat_probed_by_request_plays_byte_for_byte(tiny_model, temperature):
    """The tiny model in both roles, greedy and sampled: probes by a separate request are answered (each stored, read or
    missing) and leave every game's conversation and transcript as without probes."""
    from bilateral.play import play
    from bilateral.scenarios import sample_scenarios
    import bilateral.probes  # noqa: F401  (the `probe` option)
    d, _ = tiny_model
    seat = f'hf:{d}?window=4&max_turns=12&temperature={temperature}'
    asked = 0
    for k, sc in enumerate(sample_scenarios(2, 'symmetric', seed=5)):
        for role, other in (('buyer', 'seller'), ('seller', 'buyer')):
            games = [play(sc, **{role: s, other: 'linear'}, seed=k) for s in (seat, seat + '&probe=request')]
            _same_game(*games)
            answers = _answers(games[1], role)
            assert answers is not None and _answers(games[0], role) is None
            for a in answers:
                assert a['why'] == 'offer' and a['answer'] is not None
                assert a['estimate'] is None or (isinstance(a['estimate'], int) and a['estimate'] >= 0)
            theirs = sum(e.role.value == other and e.kind == 'offer' for e in games[1].events)
            assert len(answers) <= theirs and (theirs == 0 or answers)
            asked += len(answers)
    assert asked >= 4


def test_hf_probes_in_a_batched_tournament_change_no_game(tiny_model, tmp_path):
    """18 games at once on one local model (its requests batched together), with and without probes: the probes join
    the batches, and every stored game and conversation is the same, byte for byte."""
    from bilateral.tournament import TournamentSpec, run_tournament
    from bilateral.store import Store
    from bilateral.core import dumps
    import bilateral.probes  # noqa: F401
    d, _ = tiny_model
    out = {}
    for name, extra in (('plain', ''), ('probed', '&probe=request')):
        spec = TournamentSpec((f'hf:{d}?window=4&max_turns=12' + extra, 'linear', 'boulware'), games_per_pair=3,
                              seed=1, self_play=False)
        run_tournament(spec, tmp_path / name, concurrency=8, progress=False, workers=1)
        with Store(tmp_path / name, create=False) as st:
            index = dict(zip(*st.rows()[['game_id', 'scenario_index']].T.values))
            games = {}
            for g, t in st.transcripts():
                key = (t['agents']['buyer'].split('?')[0], t['agents']['seller'].split('?')[0], int(index[g]))
                info = {r: {k: v for k, v in i.items() if k not in ('probes', 'latency_s', 'wall_s')}
                        for r, i in (t.get('agent_info') or {}).items()}
                games[key] = (dumps({**t, 'agents': None, 'agent_info': info}), dumps(st.messages(g)))
            out[name] = games
    assert len(out['plain']) == 18 and out['plain'].keys() == out['probed'].keys()
    assert all(out['plain'][k] == out['probed'][k] for k in out['plain'])
    from bilateral.probes import probe_traces
    assert len(probe_traces(tmp_path / 'probed')) > 0 and probe_traces(tmp_path / 'plain').empty


def test_hf_seat_tool_variant(tiny_model):
    """`probe=tool`: `report_belief` is among the tools the model reads, the question is in its conversation at each
    probe, and every probe is stored (the tiny model, never taught the tool, leaves them missing)."""
    from bilateral.play import play
    from bilateral.scenarios import sample_scenarios
    import bilateral.probes  # noqa: F401
    d, _ = tiny_model
    sc = sample_scenarios(1, 'symmetric', seed=5)[0]
    g = play(sc, f'hf:{d}?window=4&max_turns=12&probe=tool', 'linear', seed=0)
    answers = _answers(g, 'buyer')
    asks = [m for m in g.messages['buyer'] if m['role'] == 'user' and m['content'].startswith('Before your next move')]
    assert answers and len(asks) == sum(a['why'] != 'volunteered' for a in answers)
    assert g.info['buyer']['probes']['mode'] == 'tool'
    assert not any(e.kind == 'report_belief' for e in g.events)


def test_openai_seat_against_the_fake_server(srv, tmp_path):
    """An `openai:` seat against the fault-injecting server, with and without probes, in a stored tournament: the games
    are the same byte for byte, and every probe, answered with a move, is stored as missing (never as a number)."""
    from bilateral.tournament import TournamentSpec, run_tournament
    from bilateral.store import Store
    from bilateral.probes import probe_traces, probe_table
    base = f'openai:ok@{srv.url}?cache=off'
    runs = {}
    for name, spec in (('plain', base), ('probed', base + '&probe=request&probe_every=2')):
        run_tournament(TournamentSpec((spec, 'linear'), games_per_pair=3, seed=2, self_play=False), tmp_path / name,
                       progress=False, workers=1)
        with Store(tmp_path / name, create=False) as st:
            runs[name] = {t['scenario']['item']['id'] + t['agents']['buyer'][:6]: t for _, t in st.transcripts()}
    assert runs['plain'].keys() == runs['probed'].keys() and len(runs['plain']) == 6
    from bilateral.core import dumps
    strip = lambda t: dumps({**t, 'agents': None, 'agent_info': {
        r: {k: v for k, v in i.items() if k not in ('probes', 'latency_s', 'wall_s')}
        for r, i in t['agent_info'].items()}})
    for k, t in runs['plain'].items(): assert strip(t) == strip(runs['probed'][k])
    tr = probe_traces(tmp_path / 'probed')
    assert len(tr) >= 6 and set(tr.why) == {'every'} and tr.estimate.isna().all() and tr.error.isna().all()
    assert (tr.t.diff().dropna().abs() > 0).any()
    assert probe_traces(tmp_path / 'plain').empty
    pt = probe_table(tmp_path / 'probed', n_boot=50)
    assert (pt.answered == 0).all() and (pt.answered_scenarios == 0).all() and pt.error.isna().all()


def test_openai_seat_answers_are_read_and_scored(belief_server, tmp_path):
    """A server that answers probes in JSON, in words, unreadably, or with NaN: the first two are read into numbers,
    the others stored as missing with their text; the store's probe table scores them against the truth beside the
    reference at the same probes, with intervals over scenarios."""
    from bilateral.tournament import TournamentSpec, run_tournament
    from bilateral.probes import probe_traces, probe_table, belief_report
    spec = TournamentSpec((f'openai:believer@{belief_server}?cache=off&probe=request', 'linear', 'boulware'),
                          games_per_pair=4, seed=3, self_play=False)
    run_tournament(spec, tmp_path, progress=False, workers=1)
    tr = probe_traces(tmp_path)
    read, missing = tr[tr.estimate.notna()], tr[tr.estimate.isna()]
    assert len(read) and len(missing)
    assert set(missing.answer.str[:5]) <= {'I wou', '{"est'}
    ratio = read.estimate / read.listing
    assert ((ratio.sub(0.7).abs() < 0.01) | (ratio.sub(1.3).abs() < 0.01)).all()
    assert (read.lo < read.estimate).all() and (read.estimate < read.hi).all()
    assert ((read.error - (read.estimate - read.truth).abs() / read.listing).abs() < 1e-12).all()
    pt = probe_table(tmp_path, n_boot=100)
    assert set(pt.role) == {'buyer', 'seller'} and set(pt.unit) == {'scenario'}
    assert ((pt.answered > 0) & (pt.answered < 1)).all()
    assert (pt.error_lo <= pt.error).all() and (pt.error <= pt.error_hi).all() and pt.ref_error.notna().all()
    md = belief_report(tmp_path, n_boot=50)['markdown']
    assert 'Probed seats' in md and 'agents that infer better earn more' in md
    from bilateral.report import write_report
    import pandas as pd
    rep = write_report(tmp_path, n_boot=20, figures=False)            # the run stored probes: beliefs are written
    assert {'tables/beliefs.csv', 'tables/probes.csv'} <= set(rep['summary']['tables'])
    stored = pd.read_csv(tmp_path / 'tables' / 'probes.csv')
    assert len(stored) == 2 and (stored.unit == 'scenario').all()
    assert (tmp_path / 'beliefs.md').read_text() == rep['beliefs']['markdown']


if __name__ == '__main__':
    import uvicorn
    uvicorn.run(belief_app(), host='127.0.0.1', port=int(sys.argv[1]), log_level='warning')


def test_probe_options_in_a_fresh_process():
    """A process that never imported `bilateral.probes` reads `?probe=` (the plug-in's entry point), and still refuses a
    made-up option in one line."""
    code = ("from bilateral.agents import parse_spec, ConfigError\n"
            "print(parse_spec('hf:some/dir?probe=request&probe_every=20').options)\n"
            "try: parse_spec('hf:some/dir?probe_often=1')\n"
            "except ConfigError as e: print('refused', str(e).splitlines()[0][:40])\n")
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "{'probe': 'request', 'probe_every': 20.0}", lines
    assert lines[1].startswith("refused unknown option 'probe_often'"), lines

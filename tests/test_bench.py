"The benchmark harnesses against NegMAS and a local endpoint: what they play and report, never their timings."
import subprocess, sys
from pathlib import Path
import pytest
from bilateral.play import play
from bilateral.scenarios import sample_scenarios

EXE = str(Path(sys.executable).parent / 'bilateral')

def run(*args, code=None):
    cmd = [sys.executable, '-c', code, *args] if code else [EXE, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)

@pytest.mark.parametrize('seed', [0, 3, 7])
def test_negmas_opens_at_our_anchors(seed):
    "NegMAS's outcome space runs from our buyer's anchor to our seller's: both sides open where ours do."
    pytest.importorskip('negmas')
    from bilateral.bench import _negmas_game
    for sc in sample_scenarios(4, 'list-high', seed):
        m = _negmas_game(sc, 'boulware', 'boulware')
        ours = [e.price for e in play(sc, 'boulware', 'boulware').events if e.kind == 'offer'][:2]
        assert [o[0] for _, _, o in m.extended_trace[:2]] == ours
        assert m.extended_trace[0][1].startswith('buyer')

def test_negmas_and_engine_games_agree_roughly():
    "Same scenarios on both sides: both make deals mostly, at prices of the same kind."
    pytest.importorskip('negmas')
    from bilateral.bench import PAIRINGS, bench_negmas
    rows = bench_negmas(n=8, batches=2)
    assert [r['pairing'] for r in rows] == [f'{b} vs {s}' for b, s in PAIRINGS]
    for r in rows:
        assert r['games'] == 16 and r['engine_deal_rate'] >= 0.75 and r['negmas_deal_rate'] >= 0.75, r
        assert 0.4 < r['engine_price_over_L'] < 1.2 and 0.4 < r['negmas_price_over_L'] < 1.2, r
        assert abs(r['engine_price_over_L'] - r['negmas_price_over_L']) < 0.15, r
        assert 20 < r['engine_moves_per_game'] < 100 and 20 < r['negmas_moves_per_game'] <= 61, r

def test_cli_vs_negmas_prints_the_ratio_table():
    pytest.importorskip('negmas')
    r = run('bench', '--vs', 'negmas', '--games', '8')
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith('engine vs NegMAS, 8 games per pairing') and 'x negot.' in lines[1]
    assert [' '.join(x.split()[:3]) for x in lines[2:]] == ['boulware vs conceder', 'conceder vs boulware',
                                                          'boulware vs boulware', 'linear vs linear']

def test_cli_vs_negmas_without_negmas_names_the_extra():
    code = "import sys; sys.modules['negmas'] = None; from bilateral.cli import main; sys.exit(main(sys.argv[1:]))"
    r = run('bench', '--vs', 'negmas', '--games', '4', code=code)
    assert r.returncode == 2 and r.stdout == ''
    assert r.stderr.strip() == "bilateral: error: --vs negmas: NegMAS is not installed: pip install 'bilateral[bench]'"

def test_cli_llm_reports_cpu_per_call_at_each_latency():
    r = run('bench', '--llm', '2,4', '--latency', '20,50', '--per-slot', '1')
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    want = [f'{ms} s, K=   {k}, {h:>7}' for ms in ('0.02', '0.05') for k in (2, 4) for h in ('aiohttp', 'httpx')]
    assert [l.split(':')[0] for l in lines] == want     # each K with each transport, aiohttp where installed
    assert all('CPU/call: client' in l and '(0 games ended abnormally)' in l for l in lines)

def test_bench_llm_pins_the_endpoint_and_counts_its_cpu():
    "The endpoint runs in its own process, on its own core where there are two; its CPU is counted apart."
    import os
    from bilateral.bench import _cores, bench_llm
    server, client = _cores()
    if hasattr(os, 'sched_getaffinity') and len(os.sched_getaffinity(0)) > 1:
        assert server and client and not server & client and server | client == os.sched_getaffinity(0)
    before = os.sched_getaffinity(0) if hasattr(os, 'sched_getaffinity') else None
    row = bench_llm((3,), (20,), per_slot=2)[0]
    assert (row['k'], row['games'], row['errors']) == (3, 6, 0) and row['calls'] >= 12
    assert row['client_cpu_ms_per_call'] > 0 and not row['endpoint_cpu_ms_per_call'] < 0
    if before is not None: assert os.sched_getaffinity(0) == before

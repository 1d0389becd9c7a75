"""`bilateral train dagger` (09d_dagger): a round on the tiny model through the real command line, and bad input
refused in one line with exit 2 before any game is played or any file written."""
import json, subprocess, sys
from pathlib import Path
from datasets import load_from_disk

EXE = str(Path(sys.executable).parent / 'bilateral')


def run(*argv):
    return subprocess.run([EXE, *argv], capture_output=True, text=True, timeout=600)


def test_a_round_trains_the_teachers_replies(tiny_model, tmp_path):
    model, _ = tiny_model
    out = tmp_path / 'round'
    r = run('train', 'dagger', str(model), '--out', str(out), '--scenarios', '1', '--max-steps', '2',
            '--opponents', 'conceder', '--agents', 'linear')
    assert r.returncode == 0, r.stderr[-2000:]
    rep = json.loads(r.stdout)
    assert rep['data']['games'] == 2 and rep['data']['settings']['teachers'] == ['linear']
    assert rep['sft']['steps'] == 2 and rep['sft']['samples'] == rep['data']['labels'] > 0
    assert (out / 'model' / 'config.json').exists() and json.loads((out / 'dagger.json').read_text()) == rep
    train = load_from_disk(str(out / 'data' / 'dataset'))['train']
    games = [json.loads(x) for x in (out / 'data' / 'games.jsonl').read_text().splitlines()]
    assert len(train) == sum(len(g['agree']) for g in games) and {g['role'] for g in games} == {'buyer', 'seller'}
    for m in train['messages']:               # every sample ends with the teacher's reply: no text, money JSON prices
        last = json.loads(m)[-1]
        assert last['role'] == 'assistant' and last['content'] == '' and last['tool_calls']


def test_bad_input_is_one_line_and_writes_nothing(tiny_model, tmp_path):
    model, _ = tiny_model
    for extra, said in ((['--agents', 'narrated:linear'], 'not a scripted agent'),
                        (['--config', 'nope'], "unknown SFT config 'nope'"),
                        (['--agents', 'no-such-agent'], 'no-such-agent')):
        r = run('train', 'dagger', str(model), '--out', str(tmp_path / 'round'), *extra)
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1 and said in lines[0], r.stderr
        assert not (tmp_path / 'round').exists()
    r = run('train', 'dagger', str(tmp_path / 'no-model'), '--out', str(tmp_path / 'round'))
    assert r.returncode == 2 and 'no model folder' in r.stderr


def test_rounds_pool_every_label_with_the_teachers_data(tiny_model, tmp_path):
    "Two rounds through the command line: each round's SFT data is the teacher's plus every label so far, packed."
    from bilateral.sft import sft_data
    model, _ = tiny_model
    r = run('tournament', '--agents', 'narrated:linear,conceder', '--games-per-pair', '1', '--preset', 'dollars',
            '--out', str(tmp_path / 'run'))
    assert r.returncode == 0, r.stderr[-2000:]
    sft_data(tmp_path / 'run', tmp_path / 'teacher', test_size=0.0, agents=['narrated:linear'])
    teacher = len(load_from_disk(str(tmp_path / 'teacher' / 'dataset'))['train'])
    out = tmp_path / 'dagger'
    r = run('train', 'dagger', str(model), '--out', str(out), '--rounds', '2', '--data', str(tmp_path / 'teacher'),
            '--config', 'smollm2-mixed', '--scenarios', '1', '--max-steps', '1', '--threads', '1',
            '--opponents', 'conceder', '--agents', 'linear')
    assert r.returncode == 0, r.stderr[-2000:]
    r1, r2 = json.loads(r.stdout)['rounds']
    assert teacher > 0 and r1['data']['games'] == r2['data']['games'] == 2
    assert r1['data']['pool']['rows']['train'] == teacher + r1['data']['labels']
    assert r2['data']['pool']['rows']['train'] == teacher + r1['data']['labels'] + r2['data']['labels']
    assert r2['data']['student'].startswith(f"hf:{out / 'round-1' / 'model'}?") and 'window=4' in r2['data']['student']
    assert r2['sft']['samples'] == teacher + 2 + 2       # a pack a teacher conversation, a pack a student game


def test_rounds_need_packed_decisions(tiny_model, tmp_path):
    model, _ = tiny_model
    r = run('train', 'dagger', str(model), '--out', str(tmp_path / 'round'), '--rounds', '2')
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and 'pooled DAgger trains packed decisions' in lines[0], r.stderr
    assert not (tmp_path / 'round').exists()

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

"""`bilateral reproduce` shows the work inside a running notebook: the games stored out of a stage's games, and the tiny
model's training steps, read while papermill runs the notebook; a quiet run shows neither."""
import json, math, re, subprocess, sys, threading
from pathlib import Path
from bilateral import report

EXE = str(Path(sys.executable).parent / 'bilateral')

def readings(text: str, label: str) -> list:
    "The (done, total) states of the tqdm bar `label` in captured stderr, in order."
    bar = re.compile(rf'^{re.escape(label)}:\s+\d+%\|[^|]*\|\s*(\d+)/(\d+)\b')
    return [(int(m[1]), int(m[2])) for part in re.split(r'[\r\n]', text) if (m := bar.match(part.strip()))]

def test_readings_parser():
    text = '\rmain stage:   0%|          | 0/9 [00:00<?, ?game/s]\rmain stage:  44%|####4     | 4/9 [00:01<00:01]\n'
    assert readings(text, 'main stage') == [(0, 9), (4, 9)] and readings(text, 'tiny stage') == []

def test_reproduce_shows_the_games_of_a_stage(tmp_path):
    "The smoke profile with 300 scenarios per pair (2,700 games, a few seconds): the bar counts the stored games up."
    r = subprocess.run([EXE, 'reproduce', '--profile', 'smoke', '--out', str(tmp_path), '--games-per-pair', '300'],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    seen = readings(r.stderr, 'main stage')
    done = [d for d, _ in seen]
    assert seen and seen[-1] == (2700, 2700) and {t for _, t in seen} == {2700}, r.stderr[-3000:]
    assert done == sorted(done) and len(set(done)) >= 2, seen           # counted up while the notebook ran
    assert 'Executing' in r.stderr                                     # papermill's cell bar for the report notebook

def test_reproduce_shows_training_steps(tmp_path, monkeypatch, capsys):
    "A profile that only builds a small tiny model: the bar follows its training steps to the last; no thread is left."
    monkeypatch.setitem(report.PROFILES, 'tiny-only', {'concurrency': 2, 'n_boot': 50, 'stages': [],
                                                        'tiny': {'n_games': 10, 'eval_games': 2, 'seed': 0}})
    run_dir = report.reproduce('tiny-only', tmp_path / 'run', progress=True)
    rep = json.loads((run_dir / 'tiny-model' / 'bilateral_tiny.json').read_text())
    steps = math.ceil(rep['samples'] / 4) * int(rep['epochs'])         # the epochs of batches of 4
    seen = readings(capsys.readouterr().err, 'tiny model training')
    done = [d for d, _ in seen]
    assert seen and seen[-1] == (steps, steps) and done == sorted(done) and len(set(done)) >= 2, seen
    assert not [t for t in threading.enumerate() if t.name == 'bilateral-progress']
    assert not list(run_dir.rglob('*steps.json*'))                   # the progress file lived in a temporary folder

"""GRPO across processes: `torchrun` with two processes (gloo on CPU) and the tiny model stores exactly the rollouts
every process played, each once under an id of its own, each replaying; one model, one report."""
import json, os, signal, subprocess, sys, time
from collections import Counter
from pathlib import Path
import pytest
from conftest import default_sigint
from bilateral.engine import replay
from bilateral.grpo import GRPO_CONFIGS
from bilateral.store import Store

trl = pytest.importorskip('trl')
ROOT = Path(__file__).resolve().parents[1]
EXE = str(Path(sys.executable).parent / 'bilateral')   # the console script
RANKS, STEPS, SCENARIOS = 2, 1, 4


def _children() -> dict[int, list[int]]:
    "Every process's children, read from /proc."
    kids = {}
    for p in Path('/proc').iterdir():
        if not p.name.isdigit(): continue
        try: ppid = int((p / 'stat').read_text().rpartition(')')[2].split()[1])
        except (OSError, IndexError, ValueError): continue
        kids.setdefault(ppid, []).append(int(p.name))
    return kids


def _tree(pid: int) -> list[int]:
    "`pid` and its descendants (torchrun starts each worker in a session of its own, so a group kill misses them)."
    kids, out, todo = _children(), [], [pid]
    while todo:
        out.append(p := todo.pop())
        todo += kids.get(p, [])
    return out


def _stop(proc: subprocess.Popen):
    "End torchrun and its workers: SIGTERM (torchrun passes it on to them), then SIGKILL to whatever is left."
    pids = _tree(proc.pid)
    proc.send_signal(signal.SIGTERM)
    try: proc.wait(30)
    except subprocess.TimeoutExpired: pass
    for p in pids:
        try: os.kill(p, signal.SIGKILL)
        except ProcessLookupError: pass
    proc.wait()


@pytest.mark.slow          # about a minute on two shared cores with the tiny model
def test_two_processes_store_every_rollout_once(tiny_model, tmp_path):
    path, _ = tiny_model
    out = tmp_path / 'grpo'
    cmd = [sys.executable, '-m', 'torch.distributed.run', '--standalone', '--nproc_per_node', str(RANKS), EXE,
           'train', 'grpo', str(path), '--out', str(out), '--max-steps', str(STEPS), '--scenarios', str(SCENARIOS),
           '--opponent', 'boulware', '--deadline', '60']
    env = {**os.environ, 'OMP_NUM_THREADS': '1', 'HF_HUB_OFFLINE': '1',
           'PYTHONPATH': os.pathsep.join([str(ROOT), *filter(None, [os.environ.get('PYTHONPATH')])])}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=default_sigint, start_new_session=True)
    try: stdout, stderr = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None: _stop(proc)
    assert proc.returncode == 0, stderr[-3000:]
    per_rank = STEPS * GRPO_CONFIGS['tiny']['batch']            # each process plays `batch` rollouts a step
    rep = json.loads(stdout)                                    # printed once, by the main process
    assert rep == json.loads((out / 'grpo_report.json').read_text())
    assert (rep['processes'], rep['steps'], rep['run']) == (RANKS, STEPS, 0)
    assert rep['rollouts_per_process'] == [per_rank] * RANKS and rep['rollouts'] == RANKS * per_rank
    with Store(out / 'rollouts', create=False) as st:
        assert st.count() == RANKS * per_rank
        assert st.done_ids() == {f'run000-rank{r:03d}-{i:07d}' for r in range(RANKS) for i in range(per_rank)}
        seeds = Counter()
        for gid, t in st.transcripts():
            replay(t)                                           # raises at the first difference
            assert st.messages(gid)['buyer'][0]['role'] == 'system'
            seeds[t['seed']] += 1
        assert [(r['run'], r['processes']) for r in st.get_meta('grpo_runs')] == [(0, RANKS)]
    # each step every scenario is played by one group, on one of the processes: they played different games
    assert seeds == dict.fromkeys(range(SCENARIOS), RANKS * per_rank // SCENARIOS)
    assert (out / 'model' / 'config.json').exists()
    print(f'torchrun, {RANKS} processes: {time.perf_counter() - t0:.1f} s')

"""The GPU path, as far as a CPU machine can check it: constraints-gpu.txt and the `gpu` extra agree with each other and
with the bounds Unsloth 2026.10.9 sets (issue 9), `gpu` and `train` cannot share an environment, and the prepared GPU
check (tools/gpu_check.py) runs its orchestration, and its phases with TRL once the training API is there."""
import json, os, subprocess, sys, tomllib
from pathlib import Path
import pytest
from packaging.requirements import Requirement
from packaging.version import Version
import gpu_check

ROOT = Path(__file__).resolve().parents[1]
# Unsloth 2026.10.9 and unsloth_zoo 2026.10.9 (their wheels' Requires-Dist): the highest versions they admit.
BOUNDS = {'trl': ('<=', '1.15.0'), 'transformers': ('<=', '5.17.0'), 'datasets': ('<', '5'), 'torch': ('<', '2.15')}

def norm(name: str) -> str: return name.lower().replace('_', '-')

def constraints() -> dict:
    "constraints-gpu.txt as {name: Requirement}."
    lines = (l.split('#')[0].strip() for l in (ROOT / 'constraints-gpu.txt').read_text().splitlines())
    reqs = [Requirement(l) for l in lines if l]
    assert len({norm(r.name) for r in reqs}) == len(reqs), 'a package is constrained twice'
    return {norm(r.name): r for r in reqs}

def extra(name: str) -> dict:
    "An extra of pyproject.toml as {name: Requirement}."
    reqs = tomllib.loads((ROOT / 'pyproject.toml').read_text())['project']['optional-dependencies'][name]
    return {norm(r.name): r for r in map(Requirement, reqs)}

def above(op: str, v: str) -> list[Version]:
    "Versions a bound `op v` excludes: `v` itself for '<', the next patch and minor releases for both."
    x = Version(v)
    nxt = [Version(f'{x.major}.{x.minor}.{x.micro + 1}'), Version(f'{x.major}.{x.minor + 1}.0')]
    return ([x] if op == '<' else []) + nxt

def test_gpu_extra_is_constrained():
    "Every package of the `gpu` extra is pinned or bounded in constraints-gpu.txt, and each pin satisfies the extra."
    cons, gpu = constraints(), extra('gpu')
    assert {'unsloth', 'unsloth-zoo', 'trl', 'transformers', 'datasets', 'torch', 'peft', 'bitsandbytes', 'xformers',
            'triton'} <= gpu.keys()
    for name, req in gpu.items():
        assert name in cons, f'{name} is in the gpu extra but not in constraints-gpu.txt'
        pins = [s.version for s in cons[name].specifier if s.operator == '==']
        for v in pins: assert req.specifier.contains(v, prereleases=True), f'{name}=={v} breaks the extra: {req}'
        if not pins: assert str(cons[name].specifier), f'{name} is neither pinned nor bounded'

@pytest.mark.parametrize('name', sorted(BOUNDS))
def test_unsloth_bounds(name):
    "Neither the constraints nor the extra admit a version above Unsloth's bound; a pin sits at or below it."
    op, v = BOUNDS[name]
    for spec in (constraints()[name].specifier, extra('gpu')[name].specifier):
        bad = [str(x) for x in above(op, v) if spec.contains(x, prereleases=True)]
        assert not bad, f'{name} {spec} admits {bad}, above Unsloth\'s {op}{v}'

def test_gpu_and_train_conflict():
    "The `train` extra's pins fall outside the `gpu` extra's ranges, which is why the GPU path has its own environment."
    gpu, train = extra('gpu'), extra('train')
    clash = [n for n, r in train.items() if n in gpu for s in r.specifier if s.operator == '=='
             if not gpu[n].specifier.contains(s.version, prereleases=True)]
    assert {'transformers', 'trl', 'datasets'} <= set(clash)
    assert 'cannot be combined with `train`' in (ROOT / 'pyproject.toml').read_text()

def test_wheel_script_reads_the_pins():
    "tools/gpu_wheels.sh is valid bash, and its dry listing names constraints-gpu.txt's pins (no download: DRY=2)."
    script = ROOT / 'tools' / 'gpu_wheels.sh'
    subprocess.run(['bash', '-n', str(script)], check=True)
    r = subprocess.run(['bash', str(script)], env={**os.environ, 'DRY': '2'}, capture_output=True, text=True,
                       cwd=ROOT, timeout=60)
    assert r.returncode == 0, r.stderr
    named = dict(p.split('==') for p in r.stderr.split(': ', 1)[1].split())
    for n, req in constraints().items():
        pins = [s.version for s in req.specifier if s.operator == '==']
        if pins and n in map(norm, named): assert {norm(k): v for k, v in named.items()}[n] == pins[0]
    assert {'unsloth', 'unsloth_zoo', 'trl', 'datasets', 'bitsandbytes'} <= set(named)

def test_check_help():
    "The GPU check's help runs without Unsloth, torch or a GPU."
    r = subprocess.run([sys.executable, str(ROOT / 'tools' / 'gpu_check.py'), '--help'], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert '--backend' in r.stdout and '--budget' in r.stdout

def test_check_budget_spent(tmp_path):
    "With no time left the check plays no phase, yet writes its JSON naming every skipped phase, and exits 1."
    out = tmp_path / 'out'
    r = subprocess.run([sys.executable, str(ROOT / 'tools' / 'gpu_check.py'), '--budget', '0', '--out', str(out),
                        '--work', str(tmp_path / 'work'), '--inputs', str(tmp_path / 'none')], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1, r.stderr
    res = json.loads((out / 'gpu_check.json').read_text())
    assert list(res['phases']) == ['env', 'data', 'sft-unsloth', 'grpo-unsloth', 'sft-trl', 'grpo-trl']
    assert all('budget' in p['error'] for p in res['phases'].values())

def test_compare_ratios():
    "The backend comparison divides TRL's median step time and peak memory by Unsloth's, only where both ran."
    ph = {'sft-unsloth': {'ok': True, 'median_step_seconds': 0.5, 'peak_gpu_allocated_bytes': 100},
          'sft-trl': {'ok': True, 'median_step_seconds': 1.5, 'peak_gpu_allocated_bytes': 300},
          'grpo-unsloth': {'ok': False}, 'grpo-trl': {'ok': True, 'median_step_seconds': 2.0}}
    assert gpu_check.compare(ph) == {'sft': {'trl_over_unsloth_step_time': 3.0, 'trl_over_unsloth_peak_gpu': 3.0}}

def test_grpo_figures():
    "Rewards and game figures per step come from the GRPO report's log; tokens/s from mean lengths, batch, step times."
    rep = {'config': {'batch': 8}, 'log': [
        {'completions/mean_length': 80.0, 'reward': -1.0, 'rewards/share/mean': -1.0, 'deal_rate': 1.0, 'loss': 0.1,
         'step_time': 4.0},
        {'completions/mean_length': 40.0, 'reward': 0.5, 'rewards/share/mean': 0.5, 'deal_rate': 0.5,
         'step_time': 2.0}]}
    got = gpu_check.grpo_figures(rep)
    assert got['completion_tokens_per_s'] == 160.0 and got['tokens_per_s'] == 160.0
    assert [s['reward'] for s in got['steps']] == [-1.0, 0.5] and 'loss' not in got['steps'][0]
    assert gpu_check.grpo_figures({}) == {'steps': [], 'tokens_per_s': None}

def test_step_times():
    "Step times come from the readings of the trainer's progress file; the median leaves out the first step."
    got = gpu_check.step_times([(0, 0.0), (1, 5.0), (2, 5.5), (3, 6.5), (3, 7.0)])
    assert got == {'step_seconds': [5.0, 0.5, 1.0], 'median_step_seconds': 0.75}

def test_step_watcher(tmp_path):
    "The watcher reads a progress file written the way bilateral's trainers write it, step by step."
    f = tmp_path / 'p.json'
    w = gpu_check.StepWatcher(f, every=0.001)
    w.start()
    for step in range(4):
        f.write_text(json.dumps({'step': step, 'total': 3}))
        for _ in range(500):                      # until the watcher has seen this step (at most ~5 s)
            if w.times and w.times[-1][0] == step: break
            gpu_check.time.sleep(0.01)
    got = w.stop()
    assert [s for s, _ in w.times] == [0, 1, 2, 3]
    assert len(got['step_seconds']) == 3 and all(x > 0 for x in got['step_seconds'])

def test_cpu_plumbing(tmp_path, tiny_model):
    "One SFT step and one GRPO step through the check with TRL on CPU: the same calls the GPU run makes."
    import bilateral.sft
    try: import bilateral.grpo as grpo
    except ImportError: grpo = None
    if not hasattr(bilateral.sft, 'train_lora_sft') or not hasattr(grpo, 'train_grpo'):
        pytest.skip('bilateral.sft.train_lora_sft or bilateral.grpo.train_grpo is not written yet')
    env = {**os.environ, 'PYTHONPATH': str(ROOT), 'OMP_NUM_THREADS': '1'}
    r = subprocess.run([sys.executable, str(ROOT / 'tools' / 'gpu_check.py'), '--backend', 'trl', '--steps', '1',
                        '--grpo-steps', '1', '--model', str(tiny_model[0]), '--inputs', str(tmp_path / 'none'),
                        '--games', '2', '--out', str(tmp_path / 'out'), '--work', str(tmp_path / 'work'),
                        '--budget', '1800', '--phase-cap', '900'], env=env, capture_output=True, text=True,
                       timeout=2000)             # liveness bounds: 4 test workers share 2 cores under make test
    res = json.loads((tmp_path / 'out' / 'gpu_check.json').read_text())
    assert r.returncode == 0, json.dumps(res, indent=1)[-3000:]
    assert list(res['phases']) == ['env', 'data', 'sft-trl', 'grpo-trl']
    assert res['phases']['env']['versions']['trl'] and res['phases']['env']['auto_backend'] in ('trl', 'unsloth')
    assert res['phases']['sft-trl']['model_dir'] and res['phases']['grpo-trl']['seconds'] > 0

def test_grpo_vllm_args_reach_trl(tmp_path):
    "Each Qwen3 GRPO configuration's vLLM settings reach TRL's GRPOConfig (built here, vLLM not started); tiny: off."
    from bilateral.grpo import GRPO_CONFIGS, _grpo_args
    got = {k: _grpo_args(c, tmp_path, [1.0], 0, False) for k, c in GRPO_CONFIGS.items()}
    assert not got['tiny'].use_vllm and got['tiny'].generation_kwargs == {'max_new_tokens': 96}
    for name in ('qwen3-8b', 'qwen3-14b'):
        a = got[name]
        assert (a.use_vllm, a.vllm_mode, a.vllm_gpu_memory_utilization, a.vllm_tensor_parallel_size,
                a.vllm_max_model_length) == (True, 'colocate', 0.3, 1, 12288), name
    s = got['qwen3-8b-server']
    assert (s.use_vllm, s.vllm_mode, s.vllm_server_host, s.vllm_server_port) == (True, 'server', '127.0.0.1', 8000)
    cfg = {**GRPO_CONFIGS['qwen3-8b'], 'vllm_gpu_memory_utilization': 0.5, 'vllm_tensor_parallel_size': 2,
           'max_reply_tokens': 64}
    o = _grpo_args(cfg, tmp_path, [1.0], 0, False)      # an override arrives too; a reply cap is vLLM's max_tokens
    assert (o.vllm_gpu_memory_utilization, o.vllm_tensor_parallel_size, o.generation_kwargs) == (0.5, 2,
                                                                                               {'max_tokens': 64})

def test_unsloth_fast_inference():
    "With Unsloth, GRPO generating with vLLM in-process loads the model with fast_inference; SFT and server mode not."
    from bilateral.grpo import GRPO_CONFIGS
    from bilateral.sft import SFT_CONFIGS, fast_inference
    assert fast_inference(GRPO_CONFIGS['qwen3-8b']) == {'fast_inference': True, 'max_lora_rank': 16,
                                                        'gpu_memory_utilization': 0.3}
    assert fast_inference(GRPO_CONFIGS['qwen3-8b-server']) == {} == fast_inference(GRPO_CONFIGS['tiny'])
    assert fast_inference(SFT_CONFIGS['qwen3-8b']) == {}

def test_vllm_missing_is_refused_before_loading(tmp_path):
    "Asking for vLLM where it is not installed fails at once with the fix, before any model is loaded."
    import importlib.util
    from bilateral.core import ConfigError
    from bilateral.grpo import train_grpo
    if importlib.util.find_spec('vllm') is not None: pytest.skip('vllm is installed here')
    with pytest.raises(ConfigError, match='pip install vllm'):
        train_grpo(tmp_path / 'no-model', tmp_path / 'out', use_vllm=True)
    assert not (tmp_path / 'out').exists()

def test_plan_with_vllm(tmp_path):
    "--vllm adds one GRPO-with-vLLM phase after the first backend's GRPO, none for the comparison backend."
    a = gpu_check.parse(['--vllm', '--data', str(tmp_path)])
    assert gpu_check.plan(a) == [('env', 'unsloth'), ('data', 'unsloth'), ('sft', 'unsloth'), ('grpo', 'unsloth'),
                                 ('vllm', 'unsloth'), ('sft', 'trl'), ('grpo', 'trl')]
    assert ('vllm', 'trl') in gpu_check.plan(gpu_check.parse(['--vllm', '--backend', 'trl', '--data', str(tmp_path)]))
    assert '--vllm' in (ROOT / 'tools' / 'gpu_wheels.sh').read_text() and '--vllm' in (ROOT / 'Makefile').read_text()

def _no_cuda():
    import torch
    if torch.cuda.is_available(): pytest.skip('this machine has a CUDA GPU')

def test_paper_train_refused_without_cuda(tmp_path):
    "The paper's training chain refuses to start without CUDA, at once, and leaves nothing behind."
    import time
    from bilateral.core import ConfigError
    from bilateral.report import reproduce
    _no_cuda()
    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match="profile 'paper-train' trains Qwen/Qwen3-8B and needs a CUDA GPU"):
        reproduce('paper-train', tmp_path / 'run', progress=False)
    assert time.perf_counter() - t0 < 10 and not (tmp_path / 'run').exists()

def test_paper_train_cli_one_line(tmp_path):
    "`bilateral reproduce --profile paper-train` on a CPU machine: one line, exit 2, within seconds."
    import time
    _no_cuda()
    t0 = time.perf_counter()
    exe = str(Path(sys.executable).parent / 'bilateral')
    r = subprocess.run([exe, 'reproduce', '--profile', 'paper-train', '--out', str(tmp_path / 'run'), '--quiet'],
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, 'PYTHONPATH': str(ROOT)}, cwd=tmp_path)
    assert (r.returncode, r.stderr.count('\n')) == (2, 1), r.stderr
    assert 'needs a CUDA GPU' in r.stderr and time.perf_counter() - t0 < 60
    assert not (tmp_path / 'run').exists()

def test_paper_train_needs_its_store(tmp_path, monkeypatch):
    "With CUDA (faked here), a missing teacher store is refused before anything runs, naming the store and the fix."
    import torch
    from bilateral.core import ConfigError
    from bilateral.report import PAPER_TRAIN, _gpu_ready
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: True)
    tr = {**PAPER_TRAIN, 'teacher_run': str(tmp_path / 'none'), 'strong_from': str(tmp_path / 'none')}
    with pytest.raises(ConfigError, match=r'learns from the store in .*none \(teacher_run\).*--profile paper'):
        _gpu_ready('paper-train', tr)

def test_chain_from_a_given_base(tmp_path, tiny_model, monkeypatch):
    """The paper chain's path on CPU at the tiny scale: `train_sft` starting from a given model folder (linked as the
    base), SFT on another store's strongest agents without the tiny checks, GRPO and both evaluations, via papermill."""
    import json
    from bilateral import report
    from bilateral.strategies import LADDER
    from bilateral.tournament import TournamentSpec, run_tournament
    store = tmp_path / 'teacher-store'
    run_tournament(TournamentSpec(tuple(f'narrated:{a}' for a in LADDER), games_per_pair=3, preset='dollars'),
                   store, progress=False)
    tr = {**report.PAPER_TRAIN, 'teacher_run': str(store), 'strong_from': str(store), 'preset': 'dollars',
          'sft': {'base_model': str(tiny_model[0]), 'config': 'tiny', 'teacher_prefix': '', 'checks': False,
                  'max_steps': 2},
          'grpo': {'config': 'tiny'}, 'grpo_steps': 1, 'scenarios': 2, 'threads': 1, 'unseen': ['linear'],
          'eval_games': 1, 'transfer_games': 1, 'deadline': 60.0}
    monkeypatch.setitem(report.PROFILES, 'given-base', {'concurrency': 2, 'n_boot': 20, 'stages': [], 'train': tr})
    run = report.reproduce('given-base', tmp_path / 'run', progress=False)
    d = run / 'training'
    assert (d / 'base').is_symlink() and (d / 'base').resolve() == Path(tiny_model[0]).resolve()
    check = json.loads((d / 'sft_check.json').read_text())
    assert check['checks'] is False and check['loss'] == {} and check['base']['model'] == str(tiny_model[0])
    assert all(k.startswith('narrated:') for k in check['strong']) and check['teacher_data']
    assert json.loads((d / 'sft' / 'bilateral_sft.json').read_text())['steps'] == 2
    assert json.loads((d / 'grpo' / 'grpo_report.json').read_text())['config']['use_vllm'] is False
    assert (d / 'evaluation.ipynb').exists() and (d / 'transfer.ipynb').exists()

def test_paper_train_cli_error_path(tmp_path, monkeypatch, capsys):
    "Through the CLI's own error handling (its --profile choices widened to every profile): one line, exit 2, no run."
    from bilateral import cli
    from bilateral.report import PROFILES
    _no_cuda()
    made = cli.parser
    def widened():
        p = made()
        rr = next(a for a in p._subparsers._group_actions[0].choices.values() if a.prog.endswith('reproduce'))
        next(a for a in rr._actions if a.dest == 'profile').choices = list(PROFILES)
        return p
    monkeypatch.setattr(cli, 'parser', widened)
    code = cli.main(['reproduce', '--profile', 'paper-train', '--out', str(tmp_path / 'run'), '--quiet'])
    err = capsys.readouterr().err
    assert (code, err.count('\n')) == (2, 1) and err.startswith("bilateral: error: profile 'paper-train' trains"), err
    assert not (tmp_path / 'run').exists()

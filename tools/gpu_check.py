"""The prepared GPU check of the training path (issue 9, point 8): a few LoRA SFT steps and a few GRPO steps with
Unsloth on the tiny model, on one GPU, with the figures written as JSON (versions, seconds per step, peak GPU memory,
tokens/s, rewards).

Three uses:
  python tools/gpu_check.py --prepare --inputs .gpu             # here: the tiny model and SFT data it trains on
  python3 tools/gpu_check.py --inputs .gpu --out "$OUT" --vllm   # there, on the device machine (no network)
  python tools/gpu_check.py --backend trl --steps 1 --grpo-steps 1 --model /work/tiny-model --out /tmp/gpu-check
                                                                 # a CPU plumbing check of the same code path

tools/gpu_wheels.sh prepares .gpu/ (inputs and the Python packages the device image lacks) and prints the one device
command line. Each phase runs in its own process (importing Unsloth patches transformers and TRL for the whole
process), under its share of a total budget (--budget seconds, inside the device's 10 minutes per command); the JSON
is rewritten after every phase, so a run cut short still reports what it measured. With --backend unsloth the same
phases run again with TRL + PEFT on the same GPU when time is left, so the two backends are compared in one run.
With --vllm a GRPO step that generates with vLLM in the trainer's process follows the first backend's GRPO; the GRPO
phase always records the vLLM fields that TRL's GRPOConfig, as installed, holds for each GRPO configuration."""
import argparse, importlib, json, os, platform, resource, shutil, statistics, subprocess, sys, tempfile, threading, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ('torch', 'triton', 'transformers', 'trl', 'peft', 'datasets', 'accelerate', 'unsloth', 'unsloth_zoo',
            'bitsandbytes', 'xformers', 'torchao', 'tokenizers', 'huggingface_hub', 'vllm')
CAPS = {'env': 150, 'data': 120, 'sft': 200, 'grpo': 300, 'vllm': 200}   # seconds at most per phase, in the budget
LOG_TAIL = 4000                                   # characters of a failed phase's log kept in the JSON

def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument('--out', default=os.environ.get('OUT') or 'gpu-check-out', help='folder for gpu_check.json and logs')
    p.add_argument('--inputs', default=str(ROOT / '.gpu'), help='prepared inputs: tiny-model/ and sft-data/')
    p.add_argument('--model', help='the model folder (default: INPUTS/tiny-model)')
    p.add_argument('--data', help='the SFT data folder written by bilateral.sft.sft_data (default: INPUTS/sft-data; '
                   'when missing, the check plays a small narrated tournament and makes it in a first phase)')
    p.add_argument('--backend', default='unsloth', choices=['unsloth', 'trl', 'auto'])
    p.add_argument('--no-compare', action='store_true', help='with --backend unsloth, skip the TRL comparison')
    p.add_argument('--vllm', action='store_true', help='after GRPO, a GRPO step that generates with vLLM in the '
                   "trainer's process (colocate; with Unsloth, its fast_inference)")
    p.add_argument('--steps', type=int, default=10, help='SFT steps')
    p.add_argument('--grpo-steps', type=int, default=3, help='GRPO steps')
    p.add_argument('--opponent', default='boulware')
    p.add_argument('--role', default='buyer', choices=['buyer', 'seller'])
    p.add_argument('--config', default='tiny', help='the SFT and GRPO configuration name')
    p.add_argument('--budget', type=float, default=480, help='seconds for all phases together')
    p.add_argument('--phase-cap', type=float, default=None,
                   help='seconds at most for any one phase, instead of CAPS (a CPU run on a busy machine)')
    p.add_argument('--work', default=None, help='scratch folder (default: TMPDIR/bilateral-gpu-check)')
    p.add_argument('--prepare', action='store_true', help='build INPUTS (tiny model, SFT data) here, then stop')
    p.add_argument('--games', type=int, default=4, help='scenarios per pairing when the SFT data is made here')
    p.add_argument('--no-data', action='store_true', help='--prepare: the model only (the check makes its data)')
    p.add_argument('--phase', help=argparse.SUPPRESS)
    p.add_argument('--phase-out', help=argparse.SUPPRESS)
    return p.parse_args(argv)

def jsonable(x):
    "`x` with what JSON cannot hold turned into text."
    if isinstance(x, dict): return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)): return [jsonable(v) for v in x]
    if isinstance(x, float) and x != x: return None
    if x is None or isinstance(x, (bool, int, float, str)): return x
    if hasattr(x, 'item'):
        try: return jsonable(x.item())
        except Exception: pass
    return str(x)

def versions() -> dict:
    "Versions of the stack as installed, without importing the packages."
    from importlib.metadata import PackageNotFoundError, version
    out = {'python': platform.python_version()}
    for name in PACKAGES:
        try: out[name] = version(name)
        except PackageNotFoundError: out[name] = None
    return out

def register_kinds():
    "Import the modules that register agent kinds (a checkout that is not pip-installed has no entry points)."
    for m in ('strategies', 'chat', 'llm', 'local'):
        try: importlib.import_module(f'bilateral.{m}')
        except ImportError: pass

class StepWatcher(threading.Thread):
    "Reads the trainer's progress file (`{'step': n, 'total': m}`) every few milliseconds and times each step."
    def __init__(self, path: Path, every: float = 0.01):
        super().__init__(daemon=True)
        self.path, self.every, self.times, self.done = path, every, [], threading.Event()
    def run(self):
        last = None
        while not self.done.is_set():
            try: step = json.loads(self.path.read_text())['step']
            except Exception: step = None
            if step is not None and step != last:
                self.times.append((step, time.perf_counter()))
                last = step
            time.sleep(self.every)
    def stop(self) -> dict:
        self.done.set()
        self.join(1)
        return step_times(self.times)

def step_times(times: list) -> dict:
    "Seconds of each step from (step, time) readings, and their median after the first (compilation, warm-up)."
    d = [round(t1 - t0, 4) for (s0, t0), (s1, t1) in zip(times, times[1:]) if s1 > s0]
    return {'step_seconds': d, 'median_step_seconds': statistics.median(d[1:] or d) if d else None}

def pick(report: dict, *names):
    "The first of `names` that the report holds."
    return next((report[n] for n in names if n in report), None)

def measured(fn, progress: Path) -> dict:
    "Run `fn()` and return its report with wall time, step times, peak GPU memory and peak resident memory."
    import torch
    cuda = torch.cuda.is_available()
    if cuda: torch.cuda.reset_peak_memory_stats()
    watch = StepWatcher(progress)
    watch.start()
    t0 = time.perf_counter()
    try: rep = fn()
    finally: steps = watch.stop()
    out = {'seconds': round(time.perf_counter() - t0, 2), **steps, 'report': jsonable(rep)}
    if cuda:
        torch.cuda.synchronize()
        out['peak_gpu_allocated_bytes'] = torch.cuda.max_memory_allocated()
        out['peak_gpu_reserved_bytes'] = torch.cuda.max_memory_reserved()
    out['peak_rss_bytes'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return out

def phase_env(a) -> dict:
    "Versions, the device, and how long `import unsloth` takes here (or why it fails)."
    import torch
    out = {'versions': versions(), 'cuda': torch.cuda.is_available(), 'torch_cuda': torch.version.cuda}
    if out['cuda']:
        pr = torch.cuda.get_device_properties(0)
        out['device'] = {'name': pr.name, 'memory_bytes': pr.total_memory, 'capability': f'{pr.major}.{pr.minor}'}
    t0 = time.perf_counter()
    try:
        importlib.import_module('unsloth')
        out['unsloth_import'] = {'ok': True, 'seconds': round(time.perf_counter() - t0, 2)}
    except Exception as e:
        out['unsloth_import'] = {'ok': False, 'error': f'{type(e).__name__}: {e}'[:2000]}
    try: out['auto_backend'] = importlib.import_module('bilateral.sft').pick_backend('auto')
    except Exception as e: out['auto_backend'] = f'{type(e).__name__}: {e}'
    return out

def phase_sft(a, work: Path) -> dict:
    "A few LoRA SFT steps with `bilateral.sft.train_lora_sft`; the merged model goes to WORK/sft-BACKEND."
    from bilateral.sft import train_lora_sft
    out_dir, progress = work / f'sft-{a.backend}', work / f'sft-{a.backend}.progress.json'
    shutil.rmtree(out_dir, ignore_errors=True)
    run = lambda: train_lora_sft(a.model, a.data, str(out_dir), config=a.config, backend=a.backend, merge=True,
                                 max_steps=a.steps, progress_file=str(progress))
    out = measured(run, progress)
    rep = out['report'] if isinstance(out['report'], dict) else {}
    out['tokens_per_s'] = pick(rep, 'tokens_per_s', 'tokens/s', 'train_tokens_per_s')
    out['final_loss'] = pick(rep, 'final_loss', 'loss', 'train_loss')
    out['model_dir'] = str(out_dir) if (out_dir / 'config.json').exists() else None
    return out

VLLM_KEYS = ('use_vllm', 'vllm_mode', 'vllm_gpu_memory_utilization', 'vllm_tensor_parallel_size',
             'vllm_max_model_length', 'vllm_server_host', 'vllm_server_port')

def vllm_args(work: Path) -> dict:
    "The vLLM fields of TRL's GRPOConfig, as installed here, built from each GRPO configuration (vLLM is not started)."
    from bilateral.grpo import GRPO_CONFIGS, _grpo_args
    got = {k: {f: getattr(_grpo_args(c, work, [1.0], 0, False), f) for f in VLLM_KEYS} for k, c in GRPO_CONFIGS.items()}
    print('vLLM arguments in GRPOConfig:', json.dumps(got), flush=True)
    return got

def phase_grpo(a, work: Path) -> dict:
    "A few GRPO steps with `bilateral.grpo.train_grpo`, from this backend's SFT model when that phase made one."
    from bilateral.grpo import train_grpo
    reached = vllm_args(work / 'vllm-args')
    sft = work / f'sft-{a.backend}'
    start = str(sft) if (sft / 'config.json').exists() else a.model
    out_dir, progress = work / f'grpo-{a.backend}', work / f'grpo-{a.backend}.progress.json'
    shutil.rmtree(out_dir, ignore_errors=True)
    run = lambda: train_grpo(start, str(out_dir), opponent=a.opponent, role=a.role, config=a.config,
                             backend=a.backend, max_steps=a.grpo_steps, progress_file=str(progress))
    out = measured(run, progress)
    rep = out['report'] if isinstance(out['report'], dict) else {}
    out['start_model'], out['vllm_args'] = start, reached
    out.update(grpo_figures(rep))
    return out

def phase_vllm(a, work: Path) -> dict:
    """One GRPO step of the configuration with `use_vllm=True`, colocated (TRL starts vLLM in this process; Unsloth
    loads the model with `fast_inference=True`), from this backend's SFT model when there is one."""
    from bilateral.grpo import train_grpo
    sft = work / f'sft-{a.backend}'
    start = str(sft) if (sft / 'config.json').exists() else a.model
    out_dir, progress = work / f'vllm-{a.backend}', work / f'vllm-{a.backend}.progress.json'
    shutil.rmtree(out_dir, ignore_errors=True)
    run = lambda: train_grpo(start, str(out_dir), opponent=a.opponent, role=a.role, config=a.config,
                             backend=a.backend, max_steps=1, progress_file=str(progress), use_vllm=True,
                             vllm_mode='colocate')
    out = measured(run, progress)
    out.update(grpo_figures(out['report'] if isinstance(out['report'], dict) else {}))
    return out

def grpo_figures(rep: dict) -> dict:
    "Per-step rewards and game figures from the trainer's log, and completion tokens per second of step time."
    log = [e for e in rep.get('log') or [] if isinstance(e, dict)]
    keep = ('deal_rate', 'finished', 'invalid_calls', 'completions/mean_length', 'step_time')
    steps = [{k: v for k, v in e.items() if 'reward' in k or k in keep} for e in log]
    batch, out = (rep.get('config') or {}).get('batch'), {'steps': steps}
    lengths, times = [e.get('completions/mean_length') for e in log], [e.get('step_time') for e in log]
    if batch and log and all(lengths) and all(times):
        out['completion_tokens_per_s'] = round(sum(lengths) * batch / sum(times), 1)
    out['tokens_per_s'] = pick(rep, 'tokens_per_s', 'tokens/s') or out.get('completion_tokens_per_s')
    return out

def phase_data(a, work: Path) -> dict:
    "The SFT data, made where the check runs (so the datasets version that reads it also wrote it)."
    t0 = time.perf_counter()
    rep = make_data(work / 'tournament', Path(a.data), a.games)
    return {'seconds': round(time.perf_counter() - t0, 2), 'data': a.data, 'report': jsonable(rep)}

def run_phase(a):
    "Child process: one phase, its result written to --phase-out."
    register_kinds()
    work = Path(a.work)
    try:
        res = {'env': lambda: phase_env(a), 'data': lambda: phase_data(a, work), 'sft': lambda: phase_sft(a, work),
               'grpo': lambda: phase_grpo(a, work), 'vllm': lambda: phase_vllm(a, work)}
        out = {'ok': True, **res[a.phase]()}
    except BaseException as e:
        import traceback
        out = {'ok': False, 'error': f'{type(e).__name__}: {e}'[:2000], 'traceback': traceback.format_exc()[-3000:]}
    Path(a.phase_out).write_text(json.dumps(jsonable(out), indent=1))

def make_data(run_dir: Path, data: Path, games: int) -> dict:
    "SFT data from a small tournament of narrated ladder agents (every pairing, `games` scenarios each)."
    register_kinds()
    from bilateral.sft import sft_data
    from bilateral.strategies import LADDER
    from bilateral.tournament import TournamentSpec, run_tournament
    spec = TournamentSpec(tuple(f'narrated:{k}' for k in LADDER), games_per_pair=games)
    run_tournament(spec, run_dir, progress=False)
    shutil.rmtree(data, ignore_errors=True)
    return sft_data(run_dir, data)

def prepare(a):
    "Here, with the project's environment: the tiny model (and, unless --no-data, SFT data) under --inputs."
    from bilateral.sft import build_tiny_model
    inputs = Path(a.inputs)
    model, out = inputs / 'tiny-model', {}
    inputs.mkdir(parents=True, exist_ok=True)
    src = a.model or os.environ.get('BILATERAL_TEST_TINY_MODEL')
    if (model / 'config.json').exists(): pass
    elif src: shutil.copytree(src, model)
    else: out['built'] = build_tiny_model(model)
    if not a.no_data: out['sft_data'] = make_data(inputs / 'tournament', inputs / 'sft-data', a.games)
    print(json.dumps(jsonable({'model': str(model), **out}), indent=1))

def child(a, phase: str, backend: str, work: Path, timeout: float) -> dict:
    "Run one phase in a fresh process; its result, or why there is none (with the end of its log)."
    res, log = work / f'{phase}-{backend}.json', Path(a.out) / f'{phase}-{backend}.log'
    args = [sys.executable, __file__, '--phase', phase, '--phase-out', str(res), '--backend', backend,
            '--work', str(work), '--model', a.model, '--data', a.data, '--steps', str(a.steps),
            '--grpo-steps', str(a.grpo_steps), '--opponent', a.opponent, '--role', a.role, '--config', a.config,
            '--games', str(a.games)]
    path = [str(ROOT)] + [str(Path(p).resolve()) for p in os.environ.get('PYTHONPATH', '').split(os.pathsep) if p]
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join(path), 'PYTHONUNBUFFERED': '1'}    # children run in WORK
    t0 = time.perf_counter()
    with open(log, 'w') as f:
        try: code = subprocess.run(args, cwd=work, env=env, stdout=f, stderr=subprocess.STDOUT,
                                   timeout=timeout).returncode
        except subprocess.TimeoutExpired: code = 'timeout'
    wall = round(time.perf_counter() - t0, 2)
    out = json.loads(res.read_text()) if res.exists() else {'ok': False, 'error': f'no result (exit {code})'}
    if not out.get('ok'): out['log_tail'] = log.read_text(errors='replace')[-LOG_TAIL:]
    return {**out, 'process_seconds': wall, 'timeout_seconds': round(timeout), 'exit': code}

def plan(a) -> list[tuple[str, str]]:
    """The phases in order: versions and the Unsloth import, the SFT data if missing, then SFT and GRPO per backend
    (and, with --vllm, GRPO with vLLM after the first backend's GRPO)."""
    backends = [a.backend] + (['trl'] if a.backend == 'unsloth' and not a.no_compare else [])
    data = [] if (Path(a.data) / 'dataset').exists() else [('data', a.backend)]
    vllm = lambda b: ('vllm',) if a.vllm and b == a.backend else ()
    return [('env', a.backend)] + data + [(p, b) for b in backends for p in ('sft', 'grpo', *vllm(b))]

def compare(phases: dict) -> dict:
    "Unsloth against TRL + PEFT on the same GPU, where both ran: ratios of median step times and of peak memory."
    out = {}
    for p in ('sft', 'grpo'):
        u, t = phases.get(f'{p}-unsloth') or {}, phases.get(f'{p}-trl') or {}
        if u.get('ok') and t.get('ok'):
            ratio = lambda k: round(t[k] / u[k], 3) if u.get(k) and t.get(k) else None
            out[p] = {'trl_over_unsloth_step_time': ratio('median_step_seconds'),
                      'trl_over_unsloth_peak_gpu': ratio('peak_gpu_allocated_bytes')}
    return out

def main(argv=None):
    a = parse(argv)
    if a.phase: return run_phase(a)
    if a.prepare: return prepare(a)
    a.model = str(Path(a.model or Path(a.inputs) / 'tiny-model').resolve())
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(a.work or Path(tempfile.gettempdir()) / 'bilateral-gpu-check').resolve()
    work.mkdir(parents=True, exist_ok=True)
    given = Path(a.data or Path(a.inputs) / 'sft-data')
    a.data = str((given if (given / 'dataset').exists() else work / 'sft-data').resolve())
    a.out = str(out.resolve())
    t_end = time.monotonic() + a.budget
    result = {'what': 'bilateral GPU check (issue 9, point 8)', 'started': time.strftime('%Y-%m-%dT%H:%M:%S%z'),
              'host': platform.node(), 'argv': sys.argv[1:], 'settings': {k: v for k, v in vars(a).items()
                                                                         if k not in ('phase', 'phase_out')},
              'phases': {}}
    for phase, backend in plan(a):
        left = t_end - time.monotonic()
        key = phase if phase in ('env', 'data') else f'{phase}-{backend}'
        if left < 20: result['phases'][key] = {'ok': False, 'error': 'skipped: the time budget is spent'}
        else: result['phases'][key] = child(a, phase, backend, work, min(a.phase_cap or CAPS[phase], left))
        result['comparison'] = compare(result['phases'])
        result['seconds'] = round(a.budget - (t_end - time.monotonic()), 1)
        (out / 'gpu_check.json').write_text(json.dumps(jsonable(result), indent=1))
        print(key, 'ok' if result['phases'][key].get('ok') else result['phases'][key].get('error'), flush=True)
    print(json.dumps(summary(result), indent=1))
    return 0 if all(v.get('ok') for v in result['phases'].values()) else 1

def summary(result: dict) -> dict:
    "The figures that matter, one line each."
    keep = ('ok', 'seconds', 'median_step_seconds', 'peak_gpu_allocated_bytes', 'tokens_per_s', 'final_loss',
            'steps', 'error')
    env = result['phases'].get('env', {})
    return {'versions': env.get('versions'), 'device': env.get('device'), 'unsloth_import': env.get('unsloth_import'),
            **{k: {f: v.get(f) for f in keep if f in v} for k, v in result['phases'].items() if k != 'env'},
            'comparison': result.get('comparison')}

if __name__ == '__main__':
    sys.exit(main())

"""The README's commands on a fresh clone: what they write is ignored by git, and every one that needs no network, GPU
or person runs in the order written, in an empty folder: the training commands from what the earlier ones made."""
import os, re, shlex, shutil, subprocess, sys, time
from pathlib import Path
import pytest

def commands(root) -> list[tuple[str, str]]:
    "(section, command) of every line of the README's `sh` blocks, a line continued by `\\` joined to the next."
    out, section = [], ''
    for part in re.split(r'^(## .*)$', (root / 'README.md').read_text(), flags=re.M):
        if part.startswith('## '):
            section = part[3:].strip()
            continue
        for block in re.findall(r'```sh\n(.*?)```', part, flags=re.S):
            for line in block.replace('\\\n', ' ').splitlines():
                if (cmd := line.split('  #')[0].strip()): out.append((section, ' '.join(cmd.split())))
    return out

def written(cmd: str) -> list[str]:
    "The folders a README command writes into."
    a = shlex.split(cmd)
    out = [a[i + 1] for i, x in enumerate(a) if x == '--out']
    if a[:3] in (['bilateral', 'tiny-model', 'build'], ['bilateral', 'lab', 'run']): out.append(a[3])
    if a[:2] == ['bilateral', 'merge']: out.append(a[2])
    if a[:2] in (['bilateral', 'reproduce'], ['bilateral', 'walkaway']) and '--out' not in a:
        out.append(f"data/runs/{a[a.index('--profile') + 1]}")
    if a[:2] == ['make', 'reproduce']: out.append('data/runs/offline')
    if a[:2] == ['inspect', 'eval'] and '--log-dir' not in a: out.append('logs')    # inspect's default log folder
    return out

def test_the_readme_has_the_commands_these_tests_read(root):
    cmds = commands(root)
    assert ('Train', 'bilateral train grpo data/runs/sft/model --opponent conceder --role buyer --reward '
            'share-invalid-failed --preset dollars --deadline 60 --max-steps 2 --out data/runs/grpo') in cmds
    assert len(cmds) > 25 and all(not c.endswith('\\') for _, c in cmds)

def test_every_folder_a_readme_command_writes_is_ignored_by_git(root):
    if subprocess.run(['git', 'rev-parse'], cwd=root, capture_output=True).returncode:
        pytest.skip('not a git checkout')
    folders = sorted({f for _, c in commands(root) for f in written(c)})
    assert {'data/runs/tiny', 'data/runs/sft', 'data/runs/lab', 'logs', 'data/runs/offline'} <= set(folders), folders
    probes = [f'{f}/games.sqlite' for f in folders]
    r = subprocess.run(['git', 'check-ignore', '--no-index', *probes], cwd=root, capture_output=True, text=True)
    assert sorted(r.stdout.split()) == sorted(probes), set(probes) - set(r.stdout.split())

NEEDS = {'make ': 'the set-up itself, which these tests run in', 'pip ': 'the set-up itself, which these tests run in',
         'export OPENAI_API_KEY': 'a key', 'inspect eval': "a model's API", 'vllm ': 'a GPU',
         'bilateral-inspect-store': "the log of `inspect eval` (its bad input: test_sockets_inspect)",
         'bilateral-openenv': 'nothing, but it serves until Ctrl-C (test_sockets_openenv)',
         'bilateral play': 'a person', 'bilateral lab': 'a person', 'bilateral merge': 'the shards of hosts with GPUs'}

def needs(section: str, cmd: str) -> str | None:
    "What a README command needs that a test on one machine without network lacks: None when it can run here."
    if 'openai:' in cmd: return 'a model behind an OpenAI-compatible endpoint'
    if section.startswith('People'): return 'a person'      # the lab's store, for `bilateral report`
    return next((why for start, why in NEEDS.items() if cmd.startswith(start)), None)

@pytest.mark.slow
def test_the_readme_commands_run_in_order_on_a_fresh_folder(root, tiny_model, tmp_path):
    """Every `bilateral` command of the README that needs no network, GPU or person, in the order written, through a
    shell in an empty folder: the training commands start from what the earlier ones wrote. `bilateral tiny-model build
    DIR` with no options builds the model the `tiny_model` fixture builds with the same defaults (once for the whole
    test session): that model is copied to DIR instead."""
    cmds = [c for s, c in commands(root) if not needs(s, c)]
    build = shlex.split(next(c for c in cmds if c.startswith('bilateral tiny-model build')))
    assert len(build) == 4, build                # no options: build_tiny_model's defaults
    shutil.copytree(tiny_model[0], tmp_path / build[3])
    cmds = [c for c in cmds if not c.startswith('bilateral tiny-model build')]
    train = [c.split()[1] for c in cmds if c.split()[1] in ('train', 'evaluate')]
    assert len(cmds) >= 12 and train == ['train', 'train', 'evaluate'], cmds
    env = {**os.environ, 'PATH': f'{Path(sys.executable).parent}{os.pathsep}{os.environ["PATH"]}',
           'HF_HUB_OFFLINE': '1', 'OMP_NUM_THREADS': '1', 'BILATERAL_CACHE': str(tmp_path / 'cache.sqlite')}
    took = {}
    for n, c in enumerate(cmds):
        t0 = time.monotonic()
        r = subprocess.run(c, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, (c, r.stderr[-3000:])
        took[f"{n} {' '.join(c.split()[1:3])}"] = round(time.monotonic() - t0, 1)
    runs = tmp_path / 'data' / 'runs'
    assert all((runs / m / 'model.safetensors').exists() for m in ('sft/model', 'grpo/model'))
    evaluation = (runs / 'eval' / 'evaluation.md').read_text()
    assert '| sft |' in evaluation and '| grpo |' in evaluation
    assert (runs / 'mine' / 'report.html').exists() and (tmp_path / 'runs' / 'cpu' / 'games.sqlite').exists()
    print(took)

import os, sqlite3, subprocess, sys, tempfile
from contextlib import contextmanager
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
if os.environ.get('PYTEST_XDIST_WORKER'):       # `make pytest`'s workers share the cores: one torch thread each, and
    for v in ('OMP_NUM_THREADS', 'MKL_NUM_THREADS'): os.environ.setdefault(v, '1')    # in the processes they start
sys.path.insert(0, str(ROOT / 'tools'))
# never the user's cache
os.environ.setdefault('BILATERAL_CACHE', str(Path(tempfile.mkdtemp(prefix='bilateral-test-cache-')) / 'llm.sqlite'))
import bilateral.strategies  # registers the ladder
from bilateral.protocol import ToolCall

def drive(eng, script):
    """Play `script` on the engine `eng`: (role, calls) batches, each call a tuple of `ToolCall` arguments, checking
    that the engine gives each turn to the scripted role; then ask for the next turn once more, so that a game the
    script finished records its outcome. Returns `eng`. Tests import it with `from conftest import drive`."""
    for role, calls in script:
        assert eng.next_turn() is role
        eng.take(role)
        eng.submit(role, [ToolCall(*c) for c in calls])
    eng.next_turn()
    return eng

def pytest_configure(config):
    "The marker `slow`: a test of a minute or more, still run by `make test` (`pytest -m 'not slow'` leaves it out)."
    config.addinivalue_line('markers', 'slow: a test of a minute or more')

@pytest.fixture
def root(): return ROOT

def shared_tiny_model(d: Path) -> dict:
    "Build the tiny model with the defaults into `d` once for every process that asks (a file lock); its report."
    import json
    from filelock import FileLock
    from bilateral.sft import build_tiny_model
    with FileLock(str(d) + '.lock'):
        if not (d / 'bilateral_tiny.json').exists(): build_tiny_model(d)
    return json.loads((d / 'bilateral_tiny.json').read_text())

def _needs_tiny_model(config) -> bool:
    "Whether the files this run was asked for use the `tiny_model` fixture (their text names it)."
    paths = [Path(a.split('::')[0]) for a in config.args] or [Path(config.rootpath) / 'tests']
    files = [f for p in paths for f in ([p] if p.is_file() else p.rglob('test_*.py') if p.is_dir() else [])]
    return any('tiny_model' in f.read_text() for f in files)

_builder = None

def pytest_sessionstart(session):
    """Under pytest-xdist, the controller starts building the tiny model in a process of its own at once (one torch
    thread), so that the workers play the files that do not need it meanwhile instead of waiting on the lock."""
    global _builder
    cfg = session.config
    if os.environ.get('PYTEST_XDIST_WORKER') or os.environ.get('BILATERAL_TEST_TINY_MODEL'): return
    if not getattr(cfg.option, 'numprocesses', None) or not _needs_tiny_model(cfg): return
    d = cfg._tmp_path_factory.getbasetemp() / 'tiny-model'   # the workers' temporary folders are inside this one
    code = f'import sys; sys.path.insert(0, {str(ROOT / "tests")!r}); import conftest; conftest.shared_tiny_model(' \
           f'conftest.Path({str(d)!r}))'
    _builder = subprocess.Popen([sys.executable, '-c', code], env={**os.environ, 'OMP_NUM_THREADS': '1'},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

def pytest_sessionfinish(session):
    "The build the controller started does not outlive the run."
    if _builder is not None and _builder.poll() is None:
        _builder.kill()
        _builder.wait()

# the longest test files, longest first (their time under `make test` on 2 idle cores): started first, they do not end
# the run alone
LONG = ('test_training_determinism.py', 'test_readme_commands.py', 'test_gpu_path.py', 'test_grpo.py', 'test_cli.py',
        'test_models.py', 'test_reproduce_progress.py', 'test_sft_data.py', 'test_workers.py', 'test_hardening.py',
        'test_lab.py', 'test_tournament.py', 'test_ladder.py')

def pytest_collection_modifyitems(config, items):
    """The files that use the tiny model run after the others, longest first within each group (`LONG`): with
    `--dist loadfile --no-loadscope-reorder` (`make pytest`) pytest-xdist hands files to the workers in this order, so
    the model's build overlaps the rest (its own order puts the files with the most tests first)."""
    uses = {i.path for i in items if 'tiny_model' in getattr(i, 'fixturenames', ())}
    rank = lambda i: (i.path in uses, LONG.index(i.path.name) if i.path.name in LONG else len(LONG))
    items[:] = sorted(items, key=rank)          # a stable sort: the order inside a file stays

@pytest.fixture(scope='session')
def tiny_model(tmp_path_factory):
    "The tiny offline model, built once per test session with the default settings."
    import json
    from bilateral.sft import build_tiny_model
    pre = os.environ.get('BILATERAL_TEST_TINY_MODEL')   # a model built earlier with the defaults, to iterate faster
    report = Path(pre) / 'bilateral_tiny.json' if pre else None
    if report and report.exists(): return Path(pre), json.loads(report.read_text())
    if not os.environ.get('PYTEST_XDIST_WORKER'):
        d = tmp_path_factory.mktemp('tiny-model')
        return d, build_tiny_model(d)
    # under pytest-xdist the workers share one build (the controller's, started at the session's start; or the first
    # worker's to take the lock when that one failed): the others read it
    d = tmp_path_factory.getbasetemp().parent / 'tiny-model'
    return d, shared_tiny_model(d)

@pytest.fixture(scope='module')
def srv():
    "The project's fault-injecting OpenAI-compatible endpoint on 127.0.0.1, one per test module."
    from bilateral.fakeserver import serve
    with serve() as s: yield s

@pytest.fixture
def llm_cache(tmp_path, monkeypatch):
    "A fresh, empty reply cache for one test."
    monkeypatch.setenv('BILATERAL_CACHE', str(tmp_path / 'llm-cache.sqlite'))


def stored(out) -> int:
    "Games stored in the run directory `out`, seen from another process (a read-only connection); 0 before any."
    p = Path(out) / 'games.sqlite'
    if not p.exists(): return 0
    con = sqlite3.connect(f'file:{p}?mode=ro', uri=True, timeout=30)
    try: return con.execute('SELECT COUNT(*) FROM games').fetchone()[0]
    except sqlite3.OperationalError: return 0
    finally: con.close()


def default_sigint():
    """`preexec_fn` of a child that a test signals: SIGINT at its default, so that Python in the child turns Ctrl-C into
    KeyboardInterrupt even when the tests themselves run with SIGINT ignored (`make test &` in a shell without job
    control)."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_DFL)

@contextmanager
def child(cmd, **kwargs):
    "A process for a test to signal: default SIGINT handling, pipes for its output, killed if it outlives the test."
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint,
                            **kwargs)
    try: yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def fault_agent(srv, kind, **opts) -> str:
    "The spec of an `openai:` agent on the fault server `srv` whose replies are of `kind` (the reply cache off)."
    q = '&'.join(f'{k}={v}' for k, v in {'cache': 'off', **opts}.items())
    return f'openai:{kind}@{srv.url}?{q}'

def fault_game(srv, kind, limit=120, **opts):
    "One game of that agent (buyer) against `linear`, bounded so that a hang fails the test instead of blocking it."
    import asyncio
    from bilateral.play import play_game, run_sync
    from bilateral.scenarios import sample_scenarios
    sc = sample_scenarios(2, seed=11)[0]
    spec = fault_agent(srv, kind, **opts)
    async def go(): return await asyncio.wait_for(play_game(sc, spec, 'linear', seed=1), limit)
    return run_sync(go())

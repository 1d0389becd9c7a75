import os, sys, tempfile
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'tools'))
os.environ.setdefault('BILATERAL_CACHE', str(Path(tempfile.mkdtemp(prefix='bilateral-test-cache-')) / 'llm.sqlite'))   # never the user's cache
import bilateral.strategies  # registers the ladder

@pytest.fixture
def root(): return ROOT

@pytest.fixture(scope='session')
def tiny_model(tmp_path_factory):
    "The tiny offline model, built once per test session with the default settings."
    import json
    from bilateral.tiny import build_tiny_model
    pre = os.environ.get('BILATERAL_TEST_TINY_MODEL')          # a model built earlier with the defaults, to iterate faster
    if pre and (Path(pre) / 'bilateral_tiny.json').exists(): return Path(pre), json.loads((Path(pre) / 'bilateral_tiny.json').read_text())
    d = tmp_path_factory.mktemp('tiny-model')
    return d, build_tiny_model(d)

@pytest.fixture(scope='module')
def srv():
    "The project's fault-injecting OpenAI-compatible endpoint on 127.0.0.1, one per test module."
    from bilateral.fakeserver import serve
    with serve() as s: yield s

@pytest.fixture
def llm_cache(tmp_path, monkeypatch):
    "A fresh, empty reply cache for one test."
    monkeypatch.setenv('BILATERAL_CACHE', str(tmp_path / 'llm-cache.sqlite'))

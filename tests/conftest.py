import sys
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'tools'))
import bilateral.strategies  # registers the ladder

@pytest.fixture
def root(): return ROOT

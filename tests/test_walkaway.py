"""`bilateral walkaway` (12d_walkaway): the experiment refuses, in one line and exit 2, a profile without a finished
chain, before anything runs; the walk-away reward credits exactly the games where walking away was right."""
import json, subprocess, sys
from pathlib import Path
from bilateral.engine import scenario_from_json
from bilateral.grpo import REWARDS, grpo_rows

EXE = str(Path(sys.executable).parent / 'bilateral')


def run(*argv):
    return subprocess.run([EXE, *argv], capture_output=True, text=True, timeout=300)


def test_no_chain_is_one_line_and_writes_nothing(tmp_path):
    r = run('walkaway', '--profile', 'offline', '--out', str(tmp_path / 'run'), '--seeds', '0-1')
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and 'bilateral reproduce --profile offline' in lines[0], r.stderr
    assert not (tmp_path / 'run').exists()


def test_bad_share_is_refused_by_the_parser(tmp_path):
    r = run('walkaway', '--no-zopa', '1.5', '--out', str(tmp_path))
    assert r.returncode == 2 and '--no-zopa' in r.stderr and list(tmp_path.iterdir()) == []


def test_the_two_rewards_differ_only_by_the_credit():
    paper, credit = REWARDS['share-invalid-failed'], REWARDS['share-invalid-failed+walkaway']
    assert {k: v for k, v in credit.items() if k != 'walkaway'} == paper and credit['walkaway'] > 0


def test_a_quarter_of_each_roles_games_have_no_zopa():
    rows = grpo_rows(16, 'both', 'dollars', seed=3, no_zopa=0.25)
    gap = [r['role'] for r in rows if not scenario_from_json(json.loads(r['scenario'])).has_zopa]
    assert sorted(gap) == ['buyer', 'buyer', 'seller', 'seller']

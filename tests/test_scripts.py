"""Every console script of pyproject's [project.scripts], run as a user runs it (a real subprocess, in an empty folder,
no input), answers bad input in one line that names the script and says `error:`, with exit status 2 and no
traceback: each of `bilateral`'s subcommands, `bilateral-openenv` and `bilateral-inspect-store`. A script added to
pyproject without a case here fails `test_every_console_script_has_a_case`."""
import os, subprocess, sys, tomllib
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

CASES = [      # (console script, arguments, a word its one line names)
    ('bilateral', ['nosuch'], 'invalid choice'),
    ('bilateral', ['agents', '--bogus'], '--bogus'),
    ('bilateral', ['run', '--buyer', 'nosuch', '--seller', 'boulware'], 'nosuch'),
    ('bilateral', ['tournament', '--agents', 'boulware,conceder', '--games-per-pair', '0', '--out', 't'], 'games'),
    ('bilateral', ['merge', 'm', 'missing-shard'], 'missing-shard'),
    ('bilateral', ['report', 'missing-run'], 'missing-run'),
    ('bilateral', ['view', 'empty'], 'empty'),
    ('bilateral', ['reproduce', '--profile', 'offline', '--games-per-pair', 'many'], 'many'),
    ('bilateral', ['play', '--opponent', 'nosuch'], 'nosuch'),
    ('bilateral', ['tiny-model', 'eval', 'missing-model'], 'missing-model'),
    ('bilateral', ['bench', '--tournament', 'a,b'], 'tournament'),
    ('bilateral', ['train', 'sft', 'empty', '--out', 'tr'], 'data'),
    ('bilateral', ['evaluate', '--model', 'x=nosuch', '--seen', 'boulware', '--out', 'ev'], 'nosuch'),
    ('bilateral', ['models', 'get', 'nosuch', 'm'], 'nosuch'),
    ('bilateral', ['walkaway', '--seeds', 'abc'], 'abc'),
    ('bilateral', ['lab', 'export', 'missing-lab'], 'missing-lab'),
    ('bilateral-openenv', ['--port', '70000'], '70000'),
    ('bilateral-inspect-store', ['missing.eval', '--out', 'st'], 'missing.eval'),
    ('bilateral-inspect-store', ['junk.eval', '--out', 'st'], 'junk.eval'),
]

def test_every_console_script_has_a_case():
    scripts = tomllib.loads((ROOT / 'pyproject.toml').read_text())['project']['scripts']
    assert set(scripts) == {s for s, _, _ in CASES}
    sub = subprocess.run([BIN / 'bilateral', '--help'], capture_output=True, text=True, timeout=120).stdout
    choices = sub.split('{', 1)[1].split('}', 1)[0].split(',')
    assert set(choices) <= {a[0] for s, a, _ in CASES if s == 'bilateral'}, 'a subcommand without a case'

@pytest.mark.parametrize('script,args,word', CASES, ids=[' '.join([s, *a]) for s, a, _ in CASES])
def test_bad_input_is_one_line_and_exit_2(tmp_path, script, args, word):
    (tmp_path / 'empty').mkdir()
    (tmp_path / 'junk.eval').write_text('not an eval log\n')
    r = subprocess.run([BIN / script, *args], cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=300, env={**os.environ, 'HF_HUB_OFFLINE': '1'})
    said = (r.stdout + r.stderr).strip().splitlines()
    assert r.returncode == 2, (r.returncode, said[-5:])
    assert len(said) == 1 and 'Traceback' not in r.stderr, said[-5:]
    assert said[0].startswith(f'{script}: error: ') and word in said[0], said[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ['empty', 'junk.eval'], 'it wrote something'

def test_a_missing_extra_is_one_line_naming_the_extra(tmp_path):
    "A command whose optional dependency is not installed (torch, hidden from the import system) says what to install."
    code = ("import sys; sys.modules['torch'] = None\n"
            "from bilateral.cli import main\nsys.exit(main(['tiny-model', 'eval', 'model']))")
    (tmp_path / 'model').mkdir()
    r = subprocess.run([sys.executable, '-c', code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    said = (r.stdout + r.stderr).strip().splitlines()
    assert r.returncode == 2 and len(said) == 1 and 'Traceback' not in r.stderr, said[-5:]
    assert said[0].startswith('bilateral: error: this command needs torch') and 'bilateral[local]' in said[0], said[0]

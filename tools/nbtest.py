"""Run nbdev-test over the library notebooks; fail when none was eligible (nbdev-test would exit 0)."""
import subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
nbs = sorted(p for p in (ROOT/'nbs').glob('*.ipynb') if not p.name.startswith('_'))
if not nbs: sys.exit('nbtest: no notebook found in nbs/')
res = subprocess.run([str(Path(sys.executable).parent/'nbdev-test'), '--n-workers', '2', *sys.argv[1:]],
                     cwd=ROOT, capture_output=True, text=True)
print(res.stdout + res.stderr)
if res.returncode or 'Success' not in res.stdout + res.stderr:
    sys.exit(f'nbtest: nbdev-test failed (exit {res.returncode})')
print(f'nbtest: {len(nbs)} notebooks passed: {len(nbs)} passed, 0 failed')

"""Fail if `nbdev-export`, `nbdev-clean` or the README render would change any file.

nbdev-export writes pyproject.toml again even when nothing in it changes; its time of change is put back then, or
`make`, whose environment depends on pyproject.toml, would reinstall the package at every `make test`."""
import hashlib, os, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

def snapshot():
    files = [*sorted((ROOT/'bilateral').rglob('*.py')), *sorted((ROOT/'nbs').rglob('*.ipynb')), ROOT/'README.md',
             ROOT/'pyproject.toml']
    return {str(f.relative_to(ROOT)): hashlib.sha256(f.read_bytes()).hexdigest() if f.exists() else None for f in files}

before, made = snapshot(), (ROOT/'pyproject.toml').stat()
for cmd in ([BIN/'nbdev-export'], [BIN/'nbdev-clean'], [sys.executable, ROOT/'tools'/'readme.py']):
    subprocess.run([str(c) for c in cmd], cwd=ROOT, check=True)
after = snapshot()
if after['pyproject.toml'] == before['pyproject.toml']:
    os.utime(ROOT/'pyproject.toml', ns=(made.st_atime_ns, made.st_mtime_ns))
changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
if changed:
    print('nbdev-export / nbdev-clean / README render changed:', *changed, sep='\n  ')
    print('Run them locally and commit the result.')
    sys.exit(1)
print(f'sync-check: {len(after)} files unchanged by nbdev-export, nbdev-clean and the README render')

"""Run nbdev-test over the library notebooks, each in a process of its own, two at a time; fail when any fails or when
none was eligible (nbdev-test would exit 0).

One process a notebook, as a reader runs it (a fresh kernel): a notebook's exported cells register its own classes
under the package's agent names (`05_strategies` registers its `TimeDependent` as `boulware`), and nbdev-test's shared
workers would carry them into the next notebook the worker runs, where `make_agent('boulware')` then returns a class
the package's patches never reached. Extra arguments go to every nbdev-test call (e.g. `--flags slow`)."""
import subprocess, sys, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from nbdev.doclinks import nbglob
from nbdev.test import _keep_file

ROOT = Path(__file__).resolve().parents[1]
NBDEV_TEST = str(Path(sys.executable).parent / 'nbdev-test')


def notebooks() -> list[Path]:
    "The notebooks nbdev-test would run over `nbs/` (its own globbing and skip rules)."
    return [f for f in sorted(nbglob(ROOT / 'nbs', as_path=True)) if _keep_file(f, '.notest')]


def run(nb: Path) -> tuple[Path, bool, str, float]:
    "One notebook through nbdev-test in its own process: (notebook, passed, output, seconds)."
    t = time.monotonic()
    res = subprocess.run([NBDEV_TEST, str(nb), '--n-workers', '0', *sys.argv[1:]], cwd=ROOT, capture_output=True,
                         text=True)
    out = '\n'.join(l for l in (res.stdout + res.stderr).splitlines() if 'Kernel is running over TCP' not in l)
    return nb, res.returncode == 0 and 'Success' in out, out, time.monotonic() - t


if __name__ == '__main__':
    nbs = notebooks()
    if not nbs: sys.exit('nbtest: no notebook found in nbs/')
    with ThreadPoolExecutor(2) as ex: results = list(ex.map(run, sorted(nbs, key=lambda p: -p.stat().st_size)))
    failed = [r for r in results if not r[1]]
    for nb, _, out, _ in failed: print(f'== {nb.relative_to(ROOT)}\n{out}')
    slow = sorted(results, key=lambda r: -r[3])[:5]
    print('nbtest: slowest ' + ', '.join(f'{r[0].stem} {r[3]:.0f} s' for r in slow))
    if failed: sys.exit(f'nbtest: {len(failed)} of {len(nbs)} notebooks failed: '
                        + ', '.join(r[0].name for r in failed))
    print(f'nbtest: {len(nbs)} notebooks passed, each in its own process')

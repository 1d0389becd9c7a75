"The wheel works without a checkout; the README is the rendered index notebook."
import json, os, subprocess, sys, zipfile

def test_wheel_runs_without_checkout(root, tmp_path):
    "Build the wheel, install it (no deps) into a fresh folder and play a game from outside the checkout."
    subprocess.run([sys.executable, '-m', 'build', '--wheel', '--outdir', str(tmp_path / 'dist'), str(root)],
                   check=True, capture_output=True, timeout=300)
    wheel = next((tmp_path / 'dist').glob('bilateral-*.whl'))
    assert any(n.endswith('.dist-info/licenses/LICENSE') for n in zipfile.ZipFile(wheel).namelist())   # Apache-2.0
    target = tmp_path / 'site'
    subprocess.run([sys.executable, '-m', 'pip', 'install', '--no-deps', '--no-index', '--target', str(target),
                    str(wheel)], check=True, capture_output=True, timeout=300)
    for f in ('items.csv', 'seeds_offline.csv'):       # package data, copied from the links to data/
        assert (target / 'bilateral' / f).is_file() and not (target / 'bilateral' / f).is_symlink()
    env = {**os.environ, 'PYTHONPATH': str(target)}
    code = ("import bilateral, sys; from bilateral.cli import main; print(bilateral.__file__, file=sys.stderr); "
            "sys.exit(main(['run', '--buyer', 'boulware', '--seller', 'split', '--json']))")
    r = subprocess.run([sys.executable, '-c', code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert str(target) in r.stderr                   # the installed copy, not the checkout
    assert json.loads(r.stdout)['end_reason']
    assert all((target / 'bilateral' / 'experiments' / f'{n}.ipynb').is_file() for n in ('tournament', 'report'))
    code = ("from bilateral.cli import main; import sys; "
            "sys.exit(main(['reproduce', '--profile', 'smoke', '--out', 'run', '--quiet']))")
    r = subprocess.run([sys.executable, '-c', code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and 'profile smoke' in r.stdout, r.stderr[-2000:]
    assert (tmp_path / 'run' / 'figures' / 'leaderboard.png').exists()
    assert all((target / 'bilateral' / f).is_file() for f in ('view.js', 'view-game.css', 'view-page.css', 'lab.js',
                                                               'lab.css', 'lab_session.toml', 'lab_monitor.js'))
    # the page, with the shipped script
    assert 'window.__bilateralChunk' in (tmp_path / 'run' / 'report.html').read_text()
    cells = json.loads((tmp_path / 'run' / 'report.ipynb').read_text())['cells']
    assert not any(o.get('output_type') == 'error' for c in cells for o in c.get('outputs', []))

def test_readme_is_the_rendered_index(root):
    import readme
    assert (root / 'README.md').read_text() == readme.render()

def test_index_outputs_are_current(root):
    "Re-running the index notebook gives the outputs stored in it (and so in the README)."
    code = (f"import sys, json; sys.path.insert(0, {str(root / 'tools')!r}); import readme; "
            "print(json.dumps(readme.execute(save=False)))")
    # a fresh process: no test's agents
    r = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=300, cwd=root)
    assert r.returncode == 0, r.stderr[-2000:]
    fresh = json.loads(r.stdout.strip().splitlines()[-1])
    stored = json.loads((root / 'nbs' / 'index.ipynb').read_text())
    outs = lambda cells: [[o.get('text') or o.get('data', {}).get('text/plain') for o in c.get('outputs', [])]
                          for c in cells if c['cell_type'] == 'code']
    norm = lambda xs: [[''.join(t) if isinstance(t, list) else t for t in c] for c in xs]
    assert norm(outs(fresh['cells'])) == norm(outs(stored['cells']))

"""The run page in a real browser: headless Chromium (Debian's `chromium`) opens report.html from file:// with no
network, driven by Playwright for Python; no browser is downloaded. Skipped, saying why, where no Chromium is installed
(`.ci/run` installs it)."""
import shutil, subprocess, sys
from pathlib import Path
import pytest
from bilateral.protocol import ERROR_CODES
from bilateral.store import Store
from bilateral.tournament import TournamentSpec, run_tournament

CHROMIUM = shutil.which('chromium') or ('/usr/bin/chromium' if Path('/usr/bin/chromium').exists() else None)
NO_CHROMIUM = ("the browser test needs Debian's chromium (apt-get install chromium); "
               '.ci/run installs it before make test')
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
EXE = str(Path(sys.executable).parent / 'bilateral')
AGENTS = ('boulware', 'conceder', 'hardliner', 'random:0.5')
# Chromium as the machine's probe starts it: no sandbox as root, nothing fetched in the background.
FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync']

@pytest.fixture(scope='module')
def page_file(tmp_path_factory):
    d = tmp_path_factory.mktemp('run')
    run_tournament(TournamentSpec(AGENTS, 5, preset='mixed', seed=3), d, progress=False)
    r = subprocess.run([EXE, 'view', str(d)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and 'report.html' in r.stdout, r.stderr
    return d / 'report.html'

def test_page_opens_offline_filters_and_shows_a_game(page_file, tmp_path):
    from playwright.sync_api import sync_playwright
    with Store(page_file.parent, create=False) as st: rows = st.rows().set_index('game_id')
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={'width': 1400, 'height': 1000})
        errors, requests = [], []
        page.on('console', lambda m: errors.append(m.text) if m.type == 'error' else None)
        page.on('pageerror', lambda e: errors.append(str(e)))
        page.on('request', lambda r: requests.append(r.url))
        page.goto(page_file.as_uri())
        page.wait_for_selector('body[data-ready="1"]', state='attached', timeout=30_000)
        page.wait_for_selector('#chart-pairs svg', timeout=30_000)
        page.wait_for_selector('#chart-leaderboard svg', timeout=30_000)
        assert page.locator('#leaderboard tr').count() == 1 + 3 * len(AGENTS)  # header; buyer, seller, both rows
        assert page.locator('#games tr.game').count() == 80                   # 16 pairs x 5 games, one page
        page.select_option('select[data-f="buyer"]', 'hardliner')
        page.select_option('select[data-f="deal"]', 'true')
        shown = page.locator('#games tr.game')
        ids = [shown.nth(i).get_attribute('data-id') for i in range(shown.count())]
        expected = rows[(rows['buyer'] == 'hardliner') & rows['deal']]
        assert sorted(ids) == sorted(expected.index) and ids
        page.click('#clear')                                             # the pair map filters the table too
        page.locator('#chart-pairs g.mark-rect path').nth(5).click()
        page.wait_for_function("document.querySelector('#count').textContent.includes('pair')")
        pairs = {(r.locator('td').nth(0).inner_text(), r.locator('td').nth(1).inner_text())
                 for r in page.locator('#games tr.game').all()}
        assert len(pairs) == 1 and page.locator('#games tr.game').count() == 5, pairs
        page.click('#clear')
        page.select_option('select[data-f="buyer"]', 'hardliner')
        page.select_option('select[data-f="deal"]', 'true')
        shown.first.click()
        page.wait_for_selector('#game svg.path')
        gid = page.locator('#game').get_attribute('data-id')
        text = page.locator('#game .outcome').inner_text()
        row = rows.loc[gid]
        assert f"{row['end_reason']} at ${row['price']:,.2f}" in text, (text, row['end_reason'], row['price'])
        assert page.locator('#game table.calls tr').count() > 3
        page.screenshot(path=str(tmp_path / 'report.png'), full_page=True)
        browser.close()
    assert (tmp_path / 'report.png').stat().st_size > 10_000
    assert not errors, errors
    outside = [u for u in requests if not u.startswith('file')][:5]
    assert all(u.startswith(('file://', 'data:', 'blob:')) for u in requests), outside

def test_invalid_calls_are_highlighted_with_their_code(page_file):
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page()
        page.goto(page_file.as_uri())
        page.wait_for_selector('body[data-ready="1"]', state='attached')
        page.select_option('select[data-f="buyer"]', 'random:0.5')
        page.locator('#games tr.game').first.click()
        page.wait_for_selector('#game table.calls')
        bad = page.locator('#game tr.bad b')
        assert bad.count() > 0 and bad.first.inner_text() in ERROR_CODES
        browser.close()

def test_large_runs_keep_game_views_next_to_the_page(page_file, tmp_path, monkeypatch):
    "Past INLINE_MB the views go to report_files/ beside the page, loaded as scripts when a game opens (file:// too)."
    import bilateral.view as view
    from playwright.sync_api import sync_playwright
    monkeypatch.setattr(view, 'INLINE_MB', 0)
    p = view.write_view(page_file.parent, tmp_path / 'big.html')
    files = sorted((tmp_path / 'big_files').glob('chunk-*.js'))
    assert files and p.stat().st_size < page_file.stat().st_size
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page()
        errors = []
        page.on('console', lambda m: errors.append(m.text) if m.type == 'error' else None)
        page.goto(p.as_uri())
        page.wait_for_selector('body[data-ready="1"]', state='attached')
        page.locator('#games tr.game').nth(7).click()
        page.wait_for_selector('#game svg.path')
        assert page.locator('#game table.calls tr').count() > 3
        browser.close()
    assert not errors, errors

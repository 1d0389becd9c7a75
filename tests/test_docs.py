"""The documentation site (`make docs`: Sphinx, myst-nb and sphinx-book-theme, configured in docs/). Every public name
of `bilateral/_modidx.py` gets an API entry on its lesson's page (checked from the notebooks, without a build); a few
pages built here (the index, the details page, a lesson with API entries and one with charts), which is what every
page's build goes through (`make docs` builds them all and fails on a missing entry), opened from file:// in headless
Chromium (Debian's `chromium`) in a narrow window: search finds a public name's entry, charts are drawn, no request
leaves the site. The browser test is skipped, saying why, where no Chromium is installed; the built-site tests where
the `docs` extra is not installed."""
import html.parser, json, os, re, shutil, subprocess, sys
from pathlib import Path
from urllib.parse import unquote, urlsplit
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / 'docs'))
import nbdocs

CHROMIUM = shutil.which('chromium') or ('/usr/bin/chromium' if Path('/usr/bin/chromium').exists() else None)
FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync']
SOME = 'details,04_agents,11_plots'            # and the index, always

def test_every_public_name_has_an_entry_on_a_page(monkeypatch):
    "What fails the build (`make docs`) when a page would lack its API entries, checked from the notebooks."
    monkeypatch.delenv('BILATERAL_DOCS_PAGES', raising=False)
    entries, shown = {}, set()          # the entries' directives: full name -> notebook; every name an entry shows
    for p in nbdocs.notebooks():
        for md in nbdocs.api_cells(json.loads(p.read_text())).values():
            for name in re.findall(r'^\.\. auto\w+:: (\S+)', md, flags=re.M):
                assert name not in entries, f'{name}: an entry on {entries[name]} and on {p.name}'
                entries[name] = p.name
            # a class's methods are shown by its directive (`:members:`)
            shown |= {f'{c}.{m.strip()}' for c, ms in re.findall(r'autoclass:: (\S+)\n   :members: ([^\n]*)', md)
                      for m in ms.split(',')}
    shown |= set(entries)
    public = {n for n in nbdocs.modidx() if nbdocs.public(n)}
    assert len(public) > 600 and not public - shown, sorted(public - shown)[:20]
    for name in entries: nbdocs.resolve(name)                 # autodoc can import every one of them
    # each lesson's entries are on its own page: the module it exports
    for name, nb in entries.items():
        mod = name.split('.')[1]
        cells = json.loads((ROOT / 'nbs' / nb).read_text())['cells']
        assert any(f'default_exp {mod}' in ''.join(c['source']) for c in cells), (name, nb)

def test_a_page_without_its_entries_is_found(tmp_path):
    "The build's check names the public names that no page of a site has an entry for."
    (tmp_path / 'a.html').write_text('<dt class="sig sig-object py" id="bilateral.agents.make_agent">')
    missing = nbdocs.missing_entries(tmp_path, [ROOT / 'nbs' / '04_agents.ipynb'])
    assert 'bilateral.agents.Agent' in missing and 'bilateral.agents.make_agent' not in missing
    assert all(n.startswith('bilateral.agents.') for n in missing)

def test_doc_links_and_directives():
    assert nbdocs.doc_links('a `make_agent` and `x = 1`\n```\n`make_agent`\n```') == \
        'a {py:obj}`make_agent <bilateral.agents.make_agent>` and `x = 1`\n```\n`make_agent`\n```'
    assert nbdocs.readme_links('[d](nbs/details.ipynb) [g](docs/GPU.md) [w](https://x.org/a.md)') == \
        '[d](details.ipynb) [g](../docs/GPU.md) [w](https://x.org/a.md)'
    assert nbdocs.directives('#| export\n#| echo: false\nx = 1') == ({'export': '', 'echo': 'false'}, 'x = 1')
    assert nbdocs.rst_text("the `Agent`s, tables/*.csv") == "the `Agent`\\ s, tables/\\*.csv"

@pytest.fixture(scope='module')
def site(tmp_path_factory):
    pytest.importorskip('sphinx', reason='the `docs` extra (Sphinx, myst-nb) is not installed')
    out = tmp_path_factory.mktemp('site') / 'html'       # myst-nb writes the outputs' pictures beside it
    env = dict(os.environ, BILATERAL_DOCS_PAGES=SOME)
    r = subprocess.run([sys.executable, '-m', 'sphinx', '-q', '-j', '2', '-c', 'docs', '.', str(out)], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    assert not re.search(r'WARNING|ERROR', r.stderr), r.stderr[-3000:]
    return out

def bilateral_agents_doc() -> str:
    import bilateral.agents
    return bilateral.agents.__doc__.rsplit('Docs: ', 1)[1].strip()

class Refs(html.parser.HTMLParser):
    "Every href of a page, and every id it defines."
    def __init__(self):
        super().__init__()
        self.hrefs, self.ids = [], set()
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == 'a' and a.get('href'): self.hrefs.append(a['href'])
        if a.get('id'): self.ids.add(a['id'])

def refs(p: Path) -> Refs:
    r = Refs()
    r.feed(p.read_text())
    return r

def test_the_pages_and_their_entries(site, monkeypatch):
    monkeypatch.setenv('BILATERAL_DOCS_PAGES', SOME)
    pages = {p.relative_to(site).as_posix() for p in site.rglob('*.html')}
    assert {'index.html', 'nbs/index.html', 'nbs/details.html', 'nbs/04_agents.html', 'nbs/11_plots.html',
            'search.html', 'docs/GPU.html'} <= pages
    assert (site / 'searchindex.js').exists() and (site / '_static' / nbdocs.BUNDLE).exists()
    agents = (site / 'nbs' / '04_agents.html').read_text()
    ids = set(re.findall(r'<dt class="sig sig-object py" id="([^"]+)"', agents))
    assert {n for n in nbdocs.modidx() if n.startswith('bilateral.agents.') and nbdocs.public(n)} <= ids
    assert '#| export' not in agents and 'Report an issue' in agents
    assert 'github.com/bilateral-dev/bilateral/blob/main/bilateral/agents.py#L' in agents      # an entry's source
    assert nbdocs.missing_entries(site, nbdocs.notebooks()) == []
    # nbdev's links (`_modidx`, as other nbdev projects follow them) lead to the entries
    table = json.loads(re.search(r'var m = (\{.*?\});', (site / 'agents.html').read_text())[1])
    assert table['agent.act'] == 'nbs/04_agents.html#bilateral.agents.Agent.act' and table[''] == 'nbs/04_agents.html'
    assert all(t.split('#')[1] in ids for k, t in table.items() if k)
    md = (site / 'agents.html.md').read_text()                  # where the module's docstring points
    assert bilateral_agents_doc().endswith('/agents.html.md') and 'def make_agent(' in md and '#| hide' not in md

def test_no_internal_link_is_broken(site):
    found = {p: refs(p) for p in site.rglob('*.html')}
    broken, checked = [], 0
    for p, r in found.items():
        for h in r.hrefs:
            u = urlsplit(h)
            if u.scheme or u.netloc: continue                   # outside the site
            target = (p.parent / unquote(u.path)).resolve() if u.path else p
            if u.path and not target.is_relative_to(site.resolve()): broken.append((p.name, h, 'outside the site'))
            elif not target.exists(): broken.append((p.name, h, 'no such page'))
            elif u.fragment and target.suffix == '.html' and u.fragment not in (found.get(target) or refs(target)).ids:
                broken.append((p.name, h, 'no such anchor'))
            checked += 1
    assert checked > 100 and not broken, broken[:20]
    index = found[site / 'nbs' / 'index.html']
    assert 'details.html' in index.hrefs and '../docs/GPU.html' in index.hrefs

@pytest.mark.skipif(CHROMIUM is None, reason="the browser test needs Debian's chromium (apt-get install chromium)")
def test_search_a_narrow_window_and_a_chart_offline(site, tmp_path):
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={'width': 420, 'height': 860})
        errors, requests = [], []
        page.on('console', lambda m: errors.append(m.text) if m.type == 'error' else None)
        page.on('pageerror', lambda e: errors.append(str(e)))
        page.on('request', lambda r: requests.append(r.url))
        page.goto((site / 'index.html').as_uri())              # the site's root leads to the index
        page.wait_for_url('**/nbs/index.html')
        assert page.locator('main h1').first.inner_text().strip().rstrip('#') == 'bilateral'
        # a narrow screen: the sidebar folds away, the text takes the width, nothing runs off to the side
        assert not page.locator('.bd-sidebar-primary').is_visible()
        assert page.locator('article').bounding_box()['width'] > 340
        assert page.evaluate('document.documentElement.scrollWidth') <= 421
        page.locator('.primary-toggle:visible').first.click()      # the sidebar, as a drawer, leads to a lesson
        page.locator('.bd-sidebar-primary a:has-text("Agents")').click()
        page.wait_for_url('**/nbs/04_agents.html')
        # search, from the page's search button, for a public name: its entry on its lesson's page
        page.locator('.search-button__button:visible').first.click()
        page.keyboard.type('make_agent')
        page.keyboard.press('Enter')
        page.wait_for_url('**/search.html?q=make_agent*')
        hit = page.locator('#search-results a:has-text("make_agent")').first
        hit.wait_for(timeout=20_000)
        hit.click()
        page.wait_for_url('**/nbs/04_agents.html#bilateral.agents.make_agent')
        assert page.locator('[id="bilateral.agents.make_agent"]').is_visible()
        page.screenshot(path=str(tmp_path / 'agents.png'))
        page.goto((site / 'agents.html').as_uri() + '#make_agent')      # nbdev's link to the name, from `_modidx`
        page.wait_for_url('**/nbs/04_agents.html#bilateral.agents.make_agent')
        # the previous/next links and the report link under the page
        assert page.locator('.prev-next-area a').count() == 2
        assert page.locator('a:has-text("Report an issue")').count() == 1
        # charts drawn by Vega-Embed from the site's own copy, in dark mode too
        page.emulate_media(color_scheme='dark')
        page.goto((site / 'nbs' / '11_plots.html').as_uri())
        charts = page.locator('div.vega-chart')
        assert charts.count() >= 9
        page.wait_for_function("[...document.querySelectorAll('div.vega-chart')].every(d => d.querySelector('svg'))",
                               timeout=30_000)
        assert page.evaluate('document.documentElement.dataset.theme') == 'dark'
        box = charts.first.locator('svg').first.bounding_box()
        assert box and box['width'] > 100 and box['height'] > 50
        assert charts.first.locator('svg path, svg text').count() > 20
        page.screenshot(path=str(tmp_path / 'plots.png'))
        browser.close()
    assert (tmp_path / 'plots.png').stat().st_size > 10_000
    assert not errors, errors
    assert all(u.startswith(('file://', 'data:', 'blob:')) for u in requests), \
        [u for u in requests if not u.startswith('file:')][:5]

def test_an_experiment_page_shows_its_last_run(tmp_path):
    src = json.loads((ROOT / 'nbs' / 'experiments' / 'report.ipynb').read_text())
    page = nbdocs.experiment(src, 'report', tmp_path)
    assert 'code only' in page['cells'][1]['source'] and not any(c.get('outputs') for c in page['cells'])
    run = json.loads(json.dumps(src))
    run['cells'][2]['outputs'] = [{'output_type': 'stream', 'name': 'stdout', 'text': 'leaderboard written\n'}]
    (tmp_path / 'old' / 'offline').mkdir(parents=True)
    (tmp_path / 'old' / 'offline' / 'report.ipynb').write_text(json.dumps(src))        # a copy never run: passed over
    (tmp_path / 'offline').mkdir()
    (tmp_path / 'offline' / 'report.ipynb').write_text(json.dumps(run))
    page = nbdocs.experiment(src, 'report', tmp_path)
    assert 'last run' in page['cells'][1]['source']
    assert page['cells'][3]['outputs'][0]['text'] == 'leaderboard written\n'
    shown = nbdocs.page(page, False)['cells']
    assert any(c.get('outputs') for c in shown) and '{note}' in shown[1]['source']

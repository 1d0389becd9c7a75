"""The documentation site (`make docs`, tools/docs.py) in a real browser: headless Chromium (Debian's `chromium`)
opens the built pages from file:// with no network. `make test` builds a few pages (the index, the details page and
two lessons, one of them with charts), which every page's build goes through; `make docs` builds them all.
Skipped, saying why, where no Chromium is installed."""
import html.parser, posixpath, re, shutil, sys
from pathlib import Path
from urllib.parse import unquote, urlsplit
import pytest

CHROMIUM = shutil.which('chromium') or ('/usr/bin/chromium' if Path('/usr/bin/chromium').exists() else None)
FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync']
SOME = ['index.ipynb', 'details.ipynb', '04_agents.ipynb', '11_plots.ipynb']

@pytest.fixture(scope='module')
def site(tmp_path_factory):
    import docs                         # tools/, on the path from conftest
    out = tmp_path_factory.mktemp('site')
    written = docs.build(out, SOME)
    assert {p.name for p in written} == {'index.html', 'details.html', 'agents.html', 'plots.html'}
    return out

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

def test_no_internal_link_is_broken(site):
    pages = sorted(site.rglob('*.html'))
    found = {p: refs(p) for p in pages}
    broken, checked = [], 0
    for p, r in found.items():
        for h in r.hrefs:
            u = urlsplit(h)
            if u.scheme or u.netloc: continue                   # outside the site
            target = (p.parent / unquote(u.path)).resolve() if u.path else p
            if u.path and not target.is_relative_to(site.resolve()): broken.append((p.name, h, 'outside the site'))
            elif not target.exists(): broken.append((p.name, h, 'no such page'))
            elif u.fragment and target.suffix == '.html' and u.fragment not in found.get(target, refs(target)).ids:
                broken.append((p.name, h, 'no such anchor'))
            checked += 1
    assert checked > 50 and not broken, broken[:20]
    index = found[site / 'index.html']
    assert 'details.html' in index.hrefs and 'LICENSE.txt' in index.hrefs and 'GPU.html' in index.hrefs
    # nbdev's doc links between pages point into the site, not to the docs host
    assert not any('bilateral-dev/bilateral/agents.html' in h for r in found.values() for h in r.hrefs)

def test_every_page_has_the_sidebar_and_its_title(site):
    for p in ('index.html', 'details.html', 'agents.html', 'plots.html'):
        text = (site / p).read_text()
        assert text.count('<nav>') == 1 and 'class=here' in text and '<h1>' in text, p
    agents = (site / 'agents.html').read_text()
    assert '<h1>Agents</h1>' in agents and 'target="_blank"' not in agents     # Quarto's attributes left out
    assert 'show_doc' not in agents                                       # nbdev's directives rendered, not shown
    assert re.search(r'<h[1-4][^>]*>(<span[^>]*></span>)?\s*make_agent', agents)   # a show_doc entry

@pytest.mark.skipif(CHROMIUM is None, reason="the browser test needs Debian's chromium (apt-get install chromium)")
def test_the_index_and_a_lesson_with_charts_render_offline(site, tmp_path):
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={'width': 1300, 'height': 900})
        errors, requests = [], []
        page.on('console', lambda m: errors.append(m.text) if m.type == 'error' else None)
        page.on('pageerror', lambda e: errors.append(str(e)))
        page.on('request', lambda r: requests.append(r.url))
        page.goto((site / 'index.html').as_uri())
        assert page.locator('main h1').inner_text() == 'bilateral'
        assert 'deal at $43.17' in page.locator('main').inner_text()          # the played game's output
        page.click('nav a:has-text("Figures")')                               # to a lesson through the sidebar
        page.wait_for_load_state()
        assert page.url.endswith('/plots.html')
        charts = page.locator('main svg.marks, main img')
        assert charts.count() >= 9                                            # every Vega-Lite chart, drawn
        box = charts.first.bounding_box()
        assert box and box['width'] > 100 and box['height'] > 50
        page.screenshot(path=str(tmp_path / 'plots.png'), full_page=False)
        browser.close()
    assert (tmp_path / 'plots.png').stat().st_size > 10_000
    assert not errors, errors
    assert all(u.startswith(('file://', 'data:')) for u in requests), [u for u in requests if 'file:' not in u][:5]

"""The README's picture of the lab's game page: `python tools/lab_screenshot.py [OUT.png]` serves a one-person session
(a buyer against `boulware`) on 127.0.0.1, plays a few moves in headless Chromium (Debian's `chromium`, driven by
Playwright) and saves the page mid-game (default: nbs/assets/lab-game.png); with `--instructions`, the instructions
page too (OUT-instructions.png)."""
import shutil, signal, socket, subprocess, sys, tempfile, time, urllib.error, urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync']

def free_port() -> int:
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]

def serve(d: Path, port: int) -> tuple[subprocess.Popen, str]:
    "The session's server and the participant's link, once it answers."
    exe = str(Path(sys.executable).parent / 'bilateral')
    proc = subprocess.Popen([exe, 'lab', 'run', str(d), '--treatment', '1:buyer:boulware', '--deadline', '180',
                             '--seed', '7', '--port', str(port)], stdout=subprocess.PIPE, text=True)
    link = None
    while link is None:
        line = proc.stdout.readline()
        if not line: sys.exit('the lab server did not start')
        if line.startswith('P01: '): link = line.split(': ', 1)[1].strip()
    for _ in range(300):
        try: urllib.request.urlopen(f'http://127.0.0.1:{port}/admin', timeout=2)
        except urllib.error.HTTPError: return proc, link
        except OSError: time.sleep(0.1)
    sys.exit('the lab server did not answer')

def shoot(link: str, out: Path, rules: Path | None = None):
    from playwright.sync_api import sync_playwright
    chromium = shutil.which('chromium') or '/usr/bin/chromium'
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=FLAGS)
        page = browser.new_page(viewport={'width': 900, 'height': 860}, device_scale_factor=1)
        page.goto(link)
        page.click('#agree')
        if rules:                                    # the instructions, with the rules that can end a game
            page.wait_for_selector('#rules')
            page.screenshot(path=str(rules), full_page=True)
        for i, right in enumerate(['yes', '$20', 'no deal: surplus 0 for both']):
            page.check(f'input[name=q{i}][value="{right}"]')
        page.click('#check')
        page.wait_for_selector('#app[data-turn="1"]', state='attached')
        value = page.evaluate('state.private.amount')
        page.fill('#price', f'{value * 0.7:.2f}')
        page.fill('#note', 'I have seen this one cheaper elsewhere.')
        page.click('#offer')
        page.wait_for_function('state.their_offer !== null && state.your_turn', timeout=60_000)
        page.fill('#say', 'Can you do better than that?')
        page.click('#send')
        page.wait_for_function('state.your_turn && state.history.length >= 4', timeout=60_000)
        page.fill('#price', f'{value * 0.8:.2f}')
        page.screenshot(path=str(out), full_page=True)
        browser.close()

if __name__ == '__main__':
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    out = Path(args[0]) if args else ROOT / 'nbs' / 'assets' / 'lab-game.png'
    proc, link = serve(Path(tempfile.mkdtemp()) / 'session', free_port())
    try: shoot(link, out, out.with_name(out.stem + '-instructions.png') if '--instructions' in sys.argv else None)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(30)
    print(f'wrote {out}')

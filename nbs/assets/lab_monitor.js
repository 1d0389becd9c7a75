// The experimenter's live monitor of `bilateral lab` (nbs/16b_lab_admin.ipynb): the rows come from monitor.json each
// second, the buttons post with the admin token; every text is set as text (textContent), never as HTML.
'use strict';
const token = new URLSearchParams(location.search).get('token');
const cols = ['code', 'label', 'stage', 'online', 'away', 'page', 'game', 'k', 'role', 'your_turn', 'paused',
              'games', 'payoff'];
async function act(action, code) {
  if (action === 'drop' && !confirm(`Drop ${code} for good?`)) return;
  const r = await fetch(`${action}/${code}?token=${encodeURIComponent(token)}`, {method: 'POST'});
  document.getElementById('said').textContent = `${code}: ${(await r.json()).said}`;
  draw();
}
async function draw() {
  const rows = await (await fetch(`monitor.json?token=${encodeURIComponent(token)}`)).json();
  const t = document.getElementById('people');
  t.replaceChildren(t.rows[0]);
  for (const r of rows) {
    const tr = t.insertRow();
    tr.id = `row-${r.code}`;
    for (const c of cols) tr.insertCell().textContent = r[c] === null ? '' : String(r[c]);
    for (const a of ['advance', r.paused ? 'resume' : 'pause', 'drop']) {
      const b = document.createElement('button');
      b.textContent = a;
      b.className = a;
      b.onclick = () => act(a === 'resume' ? 'pause' : a, r.code);
      tr.insertCell().append(b);
    }
  }
}
draw();
setInterval(draw, 1000);

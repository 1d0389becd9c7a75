(() => {
  // one scope: the Vega bundle has globals of its own
  const D = JSON.parse(document.getElementById('data').textContent);
  const CH = JSON.parse(document.getElementById('chunks').textContent);
  const $ = (s) => document.querySelector(s),
    esc = (s) =>
      String(s ?? '').replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
  const fmt = (v) =>
    v === null || v === undefined ? '' : typeof v === 'number' && !Number.isInteger(v) ? v.toFixed(3) : String(v);
  function sortable(el, cols, rows, onRow) {
    let key = null,
      dir = 1;
    const draw = () => {
      const rs = key === null ? rows : [...rows].sort((a, b) => (a[key] > b[key] ? 1 : a[key] < b[key] ? -1 : 0) * dir);
      el.innerHTML =
        '<tr>' +
        cols.map((c, i) => `<th data-i="${i}">${esc(c)}${key === i ? (dir > 0 ? ' ▲' : ' ▼') : ''}</th>`).join('') +
        '</tr>' +
        rs.map((r) => `<tr>${r.map((v) => `<td>${esc(fmt(v))}</td>`).join('')}</tr>`).join('');
      el.querySelectorAll('th').forEach(
        (th) =>
          (th.onclick = () => {
            const i = +th.dataset.i;
            dir = key === i ? -dir : 1;
            key = i;
            draw();
          }),
      );
    };
    draw();
  }
  function header() {
    const s = D.run.spec || {},
      p = D.run;
    const pill = (k, v, cls = '') => `<span class="pill ${cls}">${esc(k)}${v === undefined ? '' : ' ' + v}</span>`;
    const pills = (o, cls) =>
      Object.entries(o)
        .map(([k, v]) => pill(k, v, cls))
        .join('') || '<span class="muted">none</span>';
    const missing = p.stored < p.planned ? ` (${p.planned - p.stored} missing)` : '';
    const design =
      `${esc(s.games_per_pair)} games per pair, preset ${esc(s.preset)}, seed ${esc(s.seed)}, ` +
      `self-play ${esc(s.self_play)}, first mover ${esc(s.first_mover || (s.rules || {}).first_mover)}`;
    // the tournament's first mover overrides the rules' default (an 'alternate' run switches between scenarios)
    const rules = Object.assign({}, s.rules || {}, s.first_mover ? { first_mover: s.first_mover } : {});
    const rows = [
      ['agents', (s.agents || []).map((a) => pill(a)).join('')],
      ['design', design],
      ['rules', esc(JSON.stringify(rules))],
      ['prompt', p.prompt_hashes.map(esc).join(', ') || 'no language model'],
      ['progress', `<b id="progress">${p.stored} of ${p.planned} games</b> finished${missing}`],
      ['endings', pills(p.end_reasons)],
      ['not played', pills(p.failures, 'warn')],
      ['package', `bilateral ${esc(p.version)}, page written ${esc(p.written)}`],
    ];
    $('#run').innerHTML = '<div class="kv">' + rows.map(([k, v]) => `<b>${k}</b><span>${v}</span>`).join('') + '</div>';
  }
  const state = { filters: {}, pair: null, id: '', page: 0, key: 0, dir: 1, open: null };
  const FILTERS = ['buyer', 'seller', 'tier', 'zopa_width', 'end_reason', 'deal'];
  function filters() {
    const cols = D.games.cols;
    $('#filters').innerHTML =
      FILTERS.map((f) => {
        const i = cols.indexOf(f),
          vals = [...new Set(D.games.rows.map((r) => String(r[i])))].sort();
        const options = vals.map((v) => `<option>${esc(v)}</option>`).join('');
        return `<label>${f} <select data-f="${f}"><option value="">all</option>${options}</select></label>`;
      }).join('') +
      ' <label>game id <input id="gid" size="16" placeholder="part of an id"></label>' +
      ' <button id="clear">clear</button> <span id="count" class="muted"></span>';
    $('#gid').oninput = (e) => {
      state.id = e.target.value.trim();
      state.page = 0;
      games();
    };
    document.querySelectorAll('#filters select').forEach(
      (s) =>
        (s.onchange = () => {
          state.filters[s.dataset.f] = s.value;
          state.page = 0;
          games();
        }),
    );
    $('#clear').onclick = () => {
      state.filters = {};
      state.pair = null;
      state.id = '';
      $('#gid').value = '';
      document.querySelectorAll('#filters select').forEach((s) => (s.value = ''));
      games();
    };
  }
  function selected() {
    const cols = D.games.cols;
    return D.games.rows.filter(
      (r) =>
        FILTERS.every((f) => !state.filters[f] || String(r[cols.indexOf(f)]) === state.filters[f]) &&
        (!state.pair || (r[1] === state.pair[0] && r[2] === state.pair[1])) &&
        (!state.id || String(r[0]).includes(state.id)),
    );
  }
  function games() {
    const cols = D.games.cols,
      shown = cols.slice(1, cols.length - 1),
      rs = selected();
    rs.sort((a, b) => (a[state.key] > b[state.key] ? 1 : a[state.key] < b[state.key] ? -1 : 0) * state.dir);
    const n = rs.length,
      pages = Math.max(1, Math.ceil(n / 100));
    state.page = Math.min(state.page, pages - 1);
    const page = rs.slice(state.page * 100, state.page * 100 + 100);
    $('#count').textContent =
      `${n} of ${D.games.rows.length} games` + (state.pair ? ` (pair ${state.pair[0]} / ${state.pair[1]})` : '');
    $('#games').innerHTML =
      '<tr>' +
      shown
        .map((c, i) => `<th data-i="${i + 1}">${c}${state.key === i + 1 ? (state.dir > 0 ? ' ▲' : ' ▼') : ''}</th>`)
        .join('') +
      '</tr>' +
      page
        .map(
          (r) =>
            `<tr class="game${r[0] === state.open ? ' sel' : ''}" data-id="${r[0]}">${r
              .slice(1, r.length - 1)
              .map((v) => `<td>${esc(fmt(v))}</td>`)
              .join('')}</tr>`,
        )
        .join('');
    $('#games')
      .querySelectorAll('th')
      .forEach(
        (th) =>
          (th.onclick = () => {
            const i = +th.dataset.i;
            state.dir = state.key === i ? -state.dir : 1;
            state.key = i;
            games();
          }),
      );
    $('#games')
      .querySelectorAll('tr.game')
      .forEach((tr) => (tr.onclick = () => openGame(tr.dataset.id)));
    $('#pager').innerHTML =
      `<button id="prev">&lsaquo; prev</button> page ${state.page + 1} of ${pages} ` +
      '<button id="next">next &rsaquo;</button>';
    $('#prev').onclick = () => {
      state.page = Math.max(0, state.page - 1);
      games();
    };
    $('#next').onclick = () => {
      state.page = Math.min(pages - 1, state.page + 1);
      games();
    };
  }
  const unpacked = {},
    waiting = {};
  window.__bilateralChunk = (i, b64) => {
    CH.chunks[i] = b64;
    (waiting[i] || []).forEach((f) => f());
  };
  function fetchChunk(i) {
    // a chunk kept next to the page: loaded as a script, which works from file:// too
    return new Promise((ok, fail) => {
      (waiting[i] = waiting[i] || []).push(ok);
      const s = document.createElement('script');
      s.src = CH.dir + '/chunk-' + i + '.js';
      s.onerror = () => fail(new Error('missing ' + s.src));
      document.body.appendChild(s);
    });
  }
  async function chunk(i) {
    if (!unpacked[i]) {
      if (!CH.chunks[i]) await fetchChunk(i);
      const bin = Uint8Array.from(atob(CH.chunks[i]), (c) => c.charCodeAt(0));
      const text = await new Response(new Blob([bin]).stream().pipeThrough(new DecompressionStream('gzip'))).text();
      unpacked[i] = JSON.parse(text);
    }
    return unpacked[i];
  }
  async function openGame(id) {
    const row = D.games.rows.find((r) => r[0] === id);
    state.open = id;
    const views = await chunk(row[row.length - 1]);
    $('#game').innerHTML = views[id];
    $('#game').dataset.id = id;
    document.querySelectorAll('#games tr.game').forEach((tr) => tr.classList.toggle('sel', tr.dataset.id === id));
    $('#game').scrollIntoView({ behavior: 'instant', block: 'start' });
  }
  function charts() {
    for (const [k, spec] of Object.entries(D.charts)) {
      vegaEmbed('#chart-' + k, spec, { actions: false, renderer: 'svg' })
        .then((r) => {
          if (k !== 'pairs') return;
          r.view.addSignalListener('pair', (name, v) => {
            const one = (x) => (Array.isArray(x) ? x[0] : x);
            state.pair = v && v.buyer !== undefined ? [one(v.buyer), one(v.seller)] : null;
            state.page = 0;
            games();
          });
        })
        .catch((e) => console.error('chart ' + k + ': ' + e));
    }
  }
  header();
  sortable($('#leaderboard'), D.leaderboard.cols, D.leaderboard.rows);
  sortable($('#ratings'), D.ratings.cols, D.ratings.rows);
  if (D.sanity) sortable($('#sanity'), D.sanity.cols, D.sanity.rows);
  filters();
  games();
  charts();
  document.body.dataset.ready = '1';
})();

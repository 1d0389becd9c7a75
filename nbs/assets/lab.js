// The participant's page of `bilateral lab` (nbs/16_lab.ipynb). Every screen is drawn from the server's last message;
// text from the session, the participant or the opponent only ever enters the page as text (textContent), never HTML.
'use strict';
const app = document.getElementById('app');
const token = location.pathname.split('/').pop();
let ws = null, state = null, got = 0, tries = 0, online = false, pending = null, confirming = false;
let seq = Date.now();   // numbers this page's actions, apart from those of an earlier load of it

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'on') for (const [ev, fn] of Object.entries(v)) e.addEventListener(ev, fn);
    else if (v !== null && v !== undefined && v !== false) e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined) e.append(k instanceof Node ? k : String(k));
  return e;
}
const money = x => (x === null || x === undefined) ? '-' : (x < 0 ? '-$' : '$') +
  Math.abs(x).toLocaleString('en-US', {minimumFractionDigits: 2, maximumFractionDigits: 2});
const send = m => { if (ws && ws.readyState === 1) ws.send(JSON.stringify(m)); };
const paras = text => String(text).split(/\n\s*\n/).map(p => el('p', {}, p));

function connect() {
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  ws = new WebSocket(`${proto}//${location.host}/ws/${token}`);
  ws.onopen = () => { tries = 0; online = true; document.body.dataset.online = '1'; };
  ws.onmessage = ev => {
    const m = JSON.parse(ev.data);
    if (m.error) return notice(m);            // a frame the server refused: said on the page, which stays as it is
    if (pending && m.done_seq === pending.seq) {     // the action went through: its inputs are emptied
      for (const id of pending.clear) { const e = document.getElementById(id); if (e) e.value = ''; }
      pending = null;
    }
    if (!m.your_turn) confirming = false;
    state = m;
    got = performance.now();
    draw();
  };
  ws.onclose = () => {
    const was = online;
    online = false;
    document.body.dataset.online = '0';
    if (was && state) draw();                  // says so, and no button can be clicked while it lasts
    setTimeout(connect, Math.min(3000, 250 * 2 ** tries++));   // reload or lost connection: back to the same place
  };
}

function offline() {
  return el('p', {id: 'offline', class: 'error', role: 'alert'}, 'The connection to the server is lost. ' +
    'Reconnecting... Nothing you do can be sent until it is back; your game is kept.');
}

function notice(m) {   // shown until the next screen is drawn
  const old = document.getElementById('notice');
  if (old) old.remove();
  app.prepend(el('p', {class: 'error', id: 'notice'}, `Not sent: ${m.message} (${m.error})`));
}

function consent(s) {
  return [el('h1', {}, 'Consent'), ...paras(s.text),
    el('button', {id: 'agree', on: {click: () => send({type: 'consent', agree: true})}}, 'I agree to take part'),
    el('button', {id: 'decline', class: 'quiet', on: {click: () => send({type: 'consent', agree: false})}},
       'I do not agree')];
}

function instructions(s) {
  const form = el('form', {id: 'quiz'});
  const was = s.answers || [];
  s.quiz.forEach((q, i) => {
    const opts = q.options.map(o => el('label', {},
      el('input', {type: 'radio', name: `q${i}`, value: o, checked: was[i] === o}), ' ', o));
    form.append(el('fieldset', {class: s.wrong.includes(i) ? 'wrong' : null}, el('legend', {}, q.q), ...opts));
  });
  form.append(el('button', {id: 'check', type: 'submit'}, 'Check my answers'));
  form.addEventListener('submit', ev => {
    ev.preventDefault();
    const answers = s.quiz.map((q, i) => (form.querySelector(`input[name=q${i}]:checked`) || {}).value || null);
    send({type: 'quiz', answers});
  });
  const note = s.wrong.length ? el('p', {class: 'error', id: 'wrong'},
    `Please look again at question(s) ${s.wrong.map(i => i + 1).join(', ')}.`) : null;
  return [el('h1', {}, 'Instructions'), ...paras(s.text),
    el('p', {}, `You play ${s.games} game(s) of at most ${s.deadline} seconds. You receive ${money(s.fee)} plus ` +
       `${money(s.rate)} for each dollar of surplus you make, at most ${money(s.cap)} in all.`),
    el('h2', {}, 'Rules of the game'), el('ul', {id: 'rules'}, ...(s.rules || []).map(r => el('li', {}, r))),
    el('h2', {}, 'A short check'), note, form];
}

const words = {offer: 'offer', message: 'say', accept: 'accept', reject: 'reject', quit: 'leave'};   // You / They
function history(h) {
  const rows = h.map(a => el('tr', {class: a.who},
    el('td', {}, a.t === null || a.t === undefined ? '' : `${Number(a.t).toFixed(1)}s`),
    el('td', {}, a.who === 'you' ? 'You' : 'They'),
    el('td', {}, words[a.action] || a.action, a.price !== null && a.price !== undefined ? ` ${money(a.price)}` : '',
       a.offer_id ? ` (${a.offer_id})` : ''),
    el('td', {class: 'text'}, a.text || '')));
  return el('table', {id: 'history'}, el('tr', {}, el('th', {}, 'time'), el('th', {}, 'who'), el('th', {}, 'action'),
    el('th', {}, 'message')), ...rows);
}

function act(tool, args, thenWait, clear) {   // `clear`: the inputs emptied once the server took the action
  seq += 1;
  pending = {seq, clear: clear || []};
  send({type: 'act', tool, args, then_wait: thenWait, seq});
}
const secsTo = t => (t === null || t === undefined || !state) ? null :
  Math.max(0, t - Math.min(state.deadline, (state.clock ?? state.now) + (performance.now() - got) / 1000));
function turnText(s) {
  if (!online) return 'Connection lost: reconnecting...';
  if (s.over) return '';
  if (s.your_turn) {
    const left = secsTo(s.turn_until);
    return left === null ? 'Your move.' : `Your move (${left.toFixed(0)} s left for it).`;
  }
  if (s.partner_away !== null && s.partner_away !== undefined) return "Waiting: the other side's page is closed.";
  const left = secsTo(s.their_turn_until);
  return left === null ? 'Waiting for the other side...' :
    `Waiting for the other side (${left.toFixed(0)} s left for their move).`;
}
const num = v => (v.trim() !== '' && isFinite(Number(v))) ? Number(v) : v;   // what is not a number stays text

function actions(s) {
  const mine = s.your_turn && !s.over, theirs = s.their_offer;
  const price = el('input', {id: 'price', type: 'text', inputmode: 'decimal', placeholder: 'price', size: 8});
  const note = el('input', {id: 'note', type: 'text', placeholder: 'message with the offer (optional)', size: 30});
  const say = el('input', {id: 'say', type: 'text', placeholder: 'message', size: 40});
  const reason = el('input', {id: 'reason', type: 'text', placeholder: 'reason (optional)', size: 20});
  const secs = el('input', {id: 'secs', type: 'text', inputmode: 'decimal', placeholder: 'seconds', size: 5});
  const dis = !mine || !online;
  const textArg = (k, inp) => inp.value ? {[k]: inp.value} : {};
  return el('div', {id: 'actions', class: mine ? 'live' : 'idle'},
    el('p', {id: 'turn'}, turnText(s)),
    el('div', {}, '$', price, note, el('button', {id: 'offer', disabled: dis,
      on: {click: () => act('make_offer', {price: num(price.value), ...textArg('note', note)}, true,
                            ['price', 'note'])}}, 'Make offer')),
    el('div', {}, el('button', {id: 'accept', disabled: dis || !theirs,
      on: {click: () => act('accept_offer', {offer_id: theirs.offer_id})}},
      theirs ? `Accept their offer of ${money(theirs.price)}` : 'Accept their offer'),
      reason, el('button', {id: 'reject', disabled: dis || !theirs,
      on: {click: () => act('reject_offer', {offer_id: theirs.offer_id, ...textArg('reason', reason)}, true,
                            ['reason'])}},
      'Reject their offer')),
    el('div', {}, say, el('button', {id: 'send', disabled: !online || !!s.over || !(mine || s.asides),
      on: {click: () => act('send_message', {text: say.value}, true, ['say'])}},   // out of turn too, to a person
      mine || !s.asides ? 'Send message' : 'Send message now')),
    el('div', {}, el('button', {id: 'waitreply', disabled: dis, on: {click: () => act('wait_for_response', {})}},
      'Wait for their reply'), secs, el('button', {id: 'wait', disabled: dis,
      on: {click: () => act('wait', {seconds: num(secs.value)}, false, ['secs'])}}, 'Wait seconds'),
      el('button', {id: 'quit', class: 'quiet', disabled: dis, on: {click: () => { confirming = true; draw(); }}},
      'Leave this negotiation')),
    confirming && mine ? el('div', {id: 'confirm'}, el('p', {}, 'Leave this negotiation for good? ' +
      'The game ends at once without a deal, for both of you.'),
      el('button', {id: 'quit-yes', disabled: dis,
        on: {click: () => { confirming = false; act('quit_negotiation', {}); }}}, 'Yes, leave'),
      el('button', {id: 'quit-no', class: 'quiet', on: {click: () => { confirming = false; draw(); }}}, 'No, stay'))
      : null);
}

// The belief question (nbs/16_lab.ipynb): asked after a scored game, under its result; Continue comes once it is
// answered or skipped. The page never gets the other side's number, so it cannot show it.
function belief(b) {
  if (b.answered) return el('div', {id: 'belief'}, el('p', {id: 'believed'}, b.estimate === null ?
    'You skipped the question on the other side\'s number.' : `Your estimate: ${money(b.estimate)}. Thank you.`));
  const est = el('input', {id: 'estimate', type: 'text', inputmode: 'decimal', placeholder: 'dollars', size: 8});
  return el('div', {id: 'belief'}, el('h3', {id: 'question'}, b.question),
    el('p', {}, `The item was listed at ${money(b.listing)}.`), el('p', {id: 'how'}, b.how),
    el('div', {}, '$', est, el('button', {id: 'believe', disabled: !online,
      on: {click: () => send({type: 'belief', game_id: b.game_id, estimate: num(est.value)})}}, 'Submit my estimate'),
    el('button', {id: 'skip', class: 'quiet', disabled: !online,
      on: {click: () => send({type: 'belief', game_id: b.game_id, skip: true})}}, 'Skip this question')));
}
const goOn = b => (b && !b.answered) ? null :
  el('button', {id: 'next', on: {click: () => send({type: 'next'})}}, 'Continue');

function over(s) {
  const o = s.over;
  const what = o.text || (o.deal ? `Deal at ${money(o.price)}.` : 'No deal.');
  return el('div', {id: 'over'}, el('h2', {}, 'The game is over'), el('p', {id: 'why'}, what,
    o.scored ? ` Your surplus: ${money(o.surplus)}.` : ' This game could not be played; it is not counted.'),
    s.belief ? belief(s.belief) : null, goOn(s.belief));
}

function game(s) {
  const label = s.private.label;
  return [el('h1', {}, `Game ${s.k}: you are the ${s.role}`),
    el('section', {id: 'item'}, el('h2', {}, s.item.title), el('p', {class: 'cat'}, s.item.category),
      el('p', {}, s.item.description), el('p', {}, 'Listed at ', el('b', {}, money(s.item.listing)))),
    el('p', {id: 'private'}, `${label[0].toUpperCase()}${label.slice(1)} (private): `,
      el('b', {}, money(s.private.amount))),
    el('p', {id: 'clock'}),
    el('div', {id: 'offers'}, el('p', {}, 'Your standing offer: ', el('b', {id: 'yours'},
      s.your_offer ? `${money(s.your_offer.price)} (${s.your_offer.offer_id})` : 'none')),
      el('p', {}, 'Their standing offer: ', el('b', {id: 'theirs'},
      s.their_offer ? `${money(s.their_offer.price)} (${s.their_offer.offer_id})` : 'none'))),
    ...s.errors.map(e => el('p', {class: 'error'}, `Not done: ${e.text}`)),
    el('div', {id: 'notices'}, ...(s.notices || []).slice(-3).map(n => el('p', {class: `notice ${n.code}`}, n.text))),
    s.over ? over(s) : actions(s), history(s.history)];
}

function payoff(s) {
  const rows = s.games.map(g => el('tr', {}, el('td', {}, g.k), el('td', {}, g.role), el('td', {}, g.end || g.reason),
    el('td', {}, money(g.price)), el('td', {}, money(g.surplus))));
  const b = s.belief, pct = x => `${(100 * x).toFixed(1)}%`;
  const drawn = !b ? null : el('p', {id: 'belief-pay'}, b.k === null || b.k === undefined ?
    'You answered no question on the other side\'s number, so there is no bonus for it.' :
    `Your estimate of the other side's number in game ${b.k} was drawn: ` +
    `${b.estimate === null ? 'no answer' : money(b.estimate)}, the true number ${money(b.truth)}. ` +
    `Your chance of the bonus was ${pct(b.chance)}, the draw ${pct(b.draw)}: ` +
    (b.paid ? `you win ${money(b.paid)}.` : 'no bonus.'));
  return [el('h1', {}, 'Thank you'), el('p', {id: 'payoff'}, 'Your payment: ', el('b', {}, money(s.payoff))),
    el('p', {}, `${money(s.fee)} for taking part, plus ${money(s.rate)} per dollar of surplus` +
       (b ? ', plus the bonus for your estimate' : '') +
       (s.cap !== undefined ? `, at most ${money(s.cap)} in all.` : '.')),
    drawn,
    el('table', {}, el('tr', {}, ...['game', 'role', 'end', 'price', 'surplus'].map(h => el('th', {}, h))), ...rows)];
}

const screens = {consent, instructions, game, payoff,
  belief: s => [el('h1', {}, 'One question about your last game'), belief(s.belief), goOn(s.belief)],
  declined: () => [el('h1', {}, 'Thank you'), el('p', {}, 'You chose not to take part. You may close this page.')],
  waiting: s => [el('h1', {}, 'Please wait'), el('p', {}, s.why || 'Your next game is being prepared.')],
  paused: s => [el('h1', {}, 'Paused'), el('p', {id: 'paused'}, s.why)],
  dropped: () => [el('h1', {}, 'Thank you'), el('p', {id: 'dropped'}, 'The experimenter has ended your part of ' +
    'the session. Please follow their instructions; you may close this page.')]};

function draw() {
  const keep = {};
  for (const id of ['price', 'note', 'say', 'reason', 'secs', 'estimate']) {
    const e = document.getElementById(id);
    if (e) keep[id] = e.value;
  }
  const parts = (screens[state.stage] || screens.waiting)(state).flat().filter(x => x !== null && x !== undefined);
  app.replaceChildren(...(online ? [] : [offline()]), ...parts);
  if (!online) for (const b of app.querySelectorAll('button')) b.disabled = true;
  app.dataset.stage = state.stage;
  app.dataset.turn = state.your_turn ? '1' : '0';
  for (const [id, v] of Object.entries(keep)) { const e = document.getElementById(id); if (e) e.value = v; }
  tick();
}

function tick() {   // the clock runs on between messages at wall-clock pace, as the server's does
  const c = document.getElementById('clock');
  if (!c || !state || state.stage !== 'game') return;
  const live = state.over ? 0 : (performance.now() - got) / 1000;
  const now = Math.min(state.deadline, (state.clock ?? state.now) + live);
  c.textContent = `Clock: ${now.toFixed(0)} s of ${state.deadline} s (${Math.max(0, state.deadline - now).toFixed(0)} s left)`;
  const t = document.getElementById('turn');
  if (t) t.textContent = turnText(state);
}
setInterval(tick, 250);
connect();

// The playground page. It folds nothing itself: every message, surface and
// next request it shows was derived by the Go runtime and arrived over
// server-sent events (/api/events) or as the answer to an action.
//
// Each page load is a visitor of its own (POST /api/visitor): its own demo
// session and experiments, named by ?visitor= in every request after.
'use strict';

const S = {
  visitor: null,       // this page's visitor id
  connected: false,    // the event stream has said hello
  sessions: new Map(), // id → {id, kind, label, note, parent, records, state}
  order: [],           // ids, oldest first
  view: null,          // id of the session shown
  play: { state: 'idle' },
  selected: null,      // seq selected in the log
  staged: null,        // {kind:'delete', session, seq, type} | {kind:'edit', session, target, index, content}
  editing: null,       // {target, index} while an edit box is open
  busy: false,
  fresh: -1,           // seq of the newest record, to highlight it
  toEnd: false,        // scroll the log to its end at the next render
  freshMsgs: 0,        // messages before the newest record, to highlight new ones
  result: null,        // {kind, data}
};

// ---- helpers ------------------------------------------------------------

const $ = (sel, el = document) => el.querySelector(sel);

// h builds an element: h('div.a.b', {title: 't'}, child, 'text', …).
function h(spec, attrs, ...kids) {
  const [tag, ...classes] = spec.split('.');
  const el = document.createElement(tag || 'div');
  if (classes.length) el.className = classes.join(' ');
  if (attrs && (typeof attrs !== 'object' || attrs instanceof Node || Array.isArray(attrs))) {
    kids.unshift(attrs);
    attrs = null;
  }
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'style') el.style.cssText = v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const kid of kids.flat()) {
    if (kid == null || kid === false) continue;
    el.append(kid instanceof Node ? kid : String(kid));
  }
  return el;
}

const q = (s) => JSON.stringify(s ?? '');
const short = (s, n = 90) => (s.length > n ? s.slice(0, n - 1) + '…' : s);

// withVisitor names this page's visitor in a request's URL.
function withVisitor(path) {
  return `${path}?visitor=${encodeURIComponent(S.visitor || '')}`;
}

async function api(path, body) {
  const res = await fetch(path === '/api/visitor' ? path : withVisitor(path), {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body || {}),
  });
  let data = null;
  try { data = await res.json(); } catch (_) { /* empty body */ }
  if (!res.ok) throw new Error((data && data.error) || `${res.status} ${res.statusText}`);
  return data;
}

// ---- event kinds ----------------------------------------------------------

function kindOf(type) {
  if (type.startsWith('turn/') || type.startsWith('step/')) return 'struct';
  if (type === 'user/message') return 'user';
  if (type.startsWith('request/')) return 'request';
  if (type === 'assistant/chunk') return 'chunk';
  if (type === 'assistant/message') return 'assistant';
  if (type === 'tool/result') return 'result';
  if (type.startsWith('tool/')) return 'tool';
  if (type.startsWith('compaction/')) return 'compaction';
  if (type.startsWith('approval/')) return 'approval';
  if (type === 'session/end-seed') return 'seed';
  return 'other';
}

const SURFACE = new Set(['user/message', 'assistant/message', 'tool/result']);

function range(seqs) {
  if (!seqs || !seqs.length) return '';
  const contiguous = seqs.every((s, i) => i === 0 || s === seqs[i - 1] + 1);
  return contiguous && seqs.length > 2 ? `${seqs[0]}…${seqs[seqs.length - 1]}` : seqs.join(', ');
}

function summary(r) {
  const d = r.data || {};
  switch (r.type) {
    case 'turn/start': return `turn ${r.turn}`;
    case 'turn/end': return d.reason + (d.error ? ` — ${d.error}` : '');
    case 'step/start': return `step ${r.step}`;
    case 'step/end': return (d.finish || '') + (d.usage ? ` · in ${d.usage.input} · out ${d.usage.output}` : '');
    case 'user/message': {
      const rep = r.surface && r.surface.op === 'replace' ? `⟲ replaces ${r.surface.start}…${r.surface.end}: ` : '';
      return rep + q(d.content);
    }
    case 'request/header': {
      const hd = d.header || {};
      return `${d.reason} · ${hd.model || hd.provider || 'default model'} · tools [${(hd.tools || []).map((t) => t.name).join(', ')}]`;
    }
    case 'request/digest': return `sha256 ${String(d.sha256).slice(0, 12)}… · ${d.messages} messages`;
    case 'request/oneshot': return `${d.purpose} · sha256 ${String(d.sha256).slice(0, 12)}… · ${d.messages} messages · ${(d.header || {}).model || 'default model'}`;
    case 'request/usage':
    case 'step/usage': return `in ${d.input} · out ${d.output}`;
    case 'assistant/chunk':
      if (d.text != null) return q(d.text);
      if (d.reasoning != null) return `reasoning ${q(d.reasoning)}`;
      if (d.tool_call) return `call ${d.tool_call.name || ''} ${d.tool_call.arguments || ''}`.replace(/ +/g, ' ');
      return '';
    case 'assistant/message': {
      const calls = (d.tool_calls || []).map((c) => ` + ${c.name}(${c.arguments})`).join('');
      return (d.content ? q(d.content) : '') + calls;
    }
    case 'tool/call': return `${d.name}(${d.arguments}) · ${d.id}`;
    case 'tool/start': return d.id;
    case 'tool/result': return d.error ? `error ${d.error.code}${d.error.message ? ': ' + d.error.message : ''}` : q(d.content);
    case 'compaction/start':
    case 'compaction/end': return d.id;
    case 'session/end-seed': return 'inherited events end here';
    case 'approval/policy': return `${d.by} · default ${d.default} · ${(d.rules || []).map((r) => `${r.tool}${r.arguments ? ' ~' + r.arguments : ''} → ${r.action}`).join(', ') || 'no rules'}`;
    case 'approval/request': return `${d.id} · asked by ${d.by || '?'}${d.reason ? ': ' + d.reason : ''}`;
    case 'approval/decision': return `${d.id} ${d.allow ? 'allowed' : 'denied'} by ${d.by || '?'}${d.scope === 'session' ? ' · always for this session' : ''}${d.reason ? ': ' + d.reason : ''}`;
    default: return JSON.stringify(d);
  }
}

// ---- sessions ---------------------------------------------------------------

function upsert(sv) {
  const old = S.sessions.get(sv.id);
  if (old && old.records.length > sv.records.length) {
    // An older snapshot than what arrived since: keep the records.
    Object.assign(old, { kind: sv.kind, label: sv.label, note: sv.note, parent: sv.parent });
    return old;
  }
  S.sessions.set(sv.id, { ...sv });
  if (!S.order.includes(sv.id)) S.order.push(sv.id);
  return S.sessions.get(sv.id);
}

function current() { return S.view ? S.sessions.get(S.view) : null; }

// setPlay takes a state of the player unless a newer one arrived: the
// answer to a control and the play events come on two connections, and a
// late answer ("playing") must not undo the event that followed it
// ("done"). The server numbers its states (rev); a hello replaces the
// state whatever its rev, since it comes from a new connection, maybe to a
// restarted server.
function setPlay(ps, fromHello) {
  if (!ps) return false;
  if (!fromHello && S.play.rev != null && ps.rev < S.play.rev) return false;
  S.play = ps;
  return true;
}

function showSession(id) {
  if (S.view !== id) {
    S.view = id;
    S.selected = null;
    S.fresh = -1;
  }
  render();
}

// ---- the event stream -------------------------------------------------------

// start gets this page a visitor of its own, then follows its events. It
// runs again when the server no longer knows the visitor (it was idle too
// long, or the server restarted): the page then starts over, honestly
// empty, rather than show what the server forgot.
async function start() {
  S.connected = false;
  renderControls();
  try {
    S.visitor = (await api('/api/visitor')).visitor;
  } catch (err) {
    $('#status').textContent = `no playground: ${err.message} — retrying…`;
    setTimeout(start, 2000);
    return;
  }
  connect();
}

function connect() {
  const es = new EventSource(withVisitor('/api/events'));
  es.addEventListener('hello', (e) => {
    const d = JSON.parse(e.data);
    S.connected = true;
    S.sessions.clear();
    S.order = [];
    for (const sv of d.sessions) upsert(sv);
    setPlay(d.play, true);
    if (!S.view || !S.sessions.has(S.view)) S.view = d.play.session && S.sessions.has(d.play.session) ? d.play.session : S.order[0] || null;
    render();
  });
  es.addEventListener('session', (e) => {
    const sv = upsert(JSON.parse(e.data));
    if (!S.view || !S.sessions.has(S.view)) S.view = sv.id;
    render();
  });
  es.addEventListener('record', (e) => {
    const d = JSON.parse(e.data);
    const s = S.sessions.get(d.session);
    if (!s || d.record.seq !== s.records.length) return;
    if (d.session === S.view) S.freshMsgs = s.state ? s.state.messages.length : 0;
    s.records.push(d.record);
    s.state = d.state;
    if (d.session === S.view) {
      S.fresh = d.record.seq;
      renderSession(true);
    } else {
      renderTabs();
    }
  });
  es.addEventListener('play', (e) => {
    if (!setPlay(JSON.parse(e.data))) return;
    if (!S.view && S.play.session && S.sessions.has(S.play.session)) S.view = S.play.session;
    renderControls();
    renderTabs();
  });
  es.addEventListener('reset', () => {
    S.sessions.clear();
    S.order = [];
    S.view = null;
    S.selected = null;
    S.staged = null;
    S.result = null;
    render();
  });
  es.onerror = () => {
    S.connected = false;
    renderControls();
    // CLOSED: the server refused the stream (an unknown visitor); the
    // browser will not retry, so start over. Otherwise it reconnects
    // itself, to the same visitor.
    if (es.readyState === EventSource.CLOSED) {
      es.close();
      setTimeout(start, 1000);
    }
  };
}

// ---- rendering --------------------------------------------------------------

function render() {
  renderControls();
  renderTabs();
  renderSession(false);
  renderStaged();
  renderResult();
}

function renderControls() {
  const st = S.play.state;
  document.body.dataset.play = st;
  const play = $('#play');
  const playing = st === 'playing';
  $('.ico', play).textContent = playing ? '❚❚' : '▶';
  $('.lbl', play).textContent = playing ? 'Pause' : 'Play';
  play.disabled = st === 'done' || st === 'failed';
  $('#step').disabled = st === 'done' || st === 'failed';
  $('#finish').disabled = st === 'done' || st === 'failed';
  $('#status').textContent = statusText();
  const why = unsendable();
  const send = $('#send');
  send.disabled = S.busy || why !== '';
  send.title = why ? `Nothing to send: ${why}` : 'Send the next request (Enter)';
  $('#fork').disabled = S.busy || S.selected == null;
  $('#replay').disabled = S.busy || !current();
  $('#verify').disabled = S.busy || !current();
}

// statusText says what the page shows: the session in view (which may be
// a fork, not the demo) and the demo's player.
function statusText() {
  if (!S.connected) return S.visitor ? 'reconnecting…' : 'connecting…';
  const st = S.play.state;
  if (st === 'failed') return `the demo failed: ${S.play.error || ''}`;
  const s = current();
  const demo = S.play.session && S.sessions.get(S.play.session);
  const waits = undecided(s);
  if (waits.length) {
    return `waiting for your decision on ${waits.map((c) => `${c.tool}(${c.arguments})`).join(', ')} · ${s === demo ? 'demo' : `${s.kind} ${s.label}`} · ${s.records.length} events`;
  }
  if (!s || s === demo) {
    const n = demo ? demo.records.length : 0;
    return {
      idle: 'idle — press Space to play, → to step',
      playing: `demo playing · ${n} events`,
      paused: `demo paused · ${n} events — → for the next one`,
      done: `demo done · ${n} events — now break it`,
      waiting: `demo resuming · ${n} events`,
    }[st] || st;
  }
  const player = { idle: 'not started', playing: 'playing', paused: 'paused', done: 'done', waiting: 'waiting for your decision' }[st] || st;
  return `${s.kind} ${s.label} · ${s.records.length} events · the demo is ${player}`;
}

// unsendable says why the session in view has no next request to send,
// or '' when it has one.
function unsendable() {
  const s = current();
  if (!s || !s.records.length) return 'play or step the demo first';
  const next = s.state && s.state.next;
  if (!next) return 'the log does not fold';
  if (undecided(s).length) return 'the turn waits for your decision on its pending call';
  if (next.turn_open) return 'a turn is running; step or play it to its end';
  return '';
}

function renderTabs() {
  const tabs = $('#tabs');
  tabs.textContent = '';
  for (const id of S.order) {
    const s = S.sessions.get(id);
    tabs.append(h('button.tab', {
      type: 'button',
      role: 'tab',
      'aria-selected': String(id === S.view),
      title: `${s.note || s.label}\nsession ${id}`,
      dataset: { kind: s.kind, id },
      onclick: (e) => { e.currentTarget.blur(); showSession(id); },
    }, h('span.tk', s.kind), ' ', s.label, h('span.tn', String(s.records.length))));
  }
  const s = current();
  if (s && s.note) tabs.append(h('span.note', s.note));
  if (!S.order.length) tabs.append(h('span.note', 'No session yet.'));
}

// surfaceInfo maps the seqs of the session's state to what the model sees.
function surfaceInfo(state) {
  const bySource = new Map();
  (state?.messages || []).forEach((m, i) => bySource.set(m.source, i));
  return { bySource, surface: new Set(state?.surface || []) };
}

function renderSession(streaming) {
  const s = current();
  renderLog(s, streaming);
  renderPending(s);
  renderMessages(s);
  renderRequest(s);
  renderControls();
  if (streaming) renderTabs();
}

function renderLog(s, streaming) {
  const log = $('#log');
  const pane = $('#log-pane'); // what scrolls
  const nearBottom = pane.scrollHeight - pane.scrollTop - pane.clientHeight < 120;
  log.textContent = '';
  if (!s) {
    log.append(h('p.empty', 'Press ', h('kbd', 'Space'), ' to play, ', h('kbd', '→'), ' to step.'));
    $('#log-meta').textContent = '';
    return;
  }
  $('#log-meta').textContent = `${s.records.length} events · append-only`;
  const info = surfaceInfo(s.state);
  let turnEl = null;
  let stepEl = null;
  let compEl = null;
  for (const r of s.records) {
    if (r.type === 'turn/start') {
      turnEl = group('turn', `Turn ${r.turn}`);
      log.append(turnEl);
      stepEl = null;
    } else if (r.type === 'step/start' && turnEl) {
      stepEl = group('step', `Step ${r.step}`);
      turnEl.append(stepEl);
    } else if (r.type === 'compaction/start') {
      compEl = group('compaction', 'Compaction');
      log.append(compEl);
    }
    // The log's order is kept: a turn-scoped event logged while a step is
    // open (request/header) shows inside that step.
    const parent = (r.turn && stepEl) || (r.turn && turnEl) || compEl || log;
    parent.append(eventRow(s, r, info));
    if (r.type === 'step/end' && stepEl) {
      setGroupNote(stepEl, r.data.finish);
      stepEl = null;
    } else if (r.type === 'turn/end' && turnEl) {
      setGroupNote(turnEl, r.data.reason, r.data.reason !== 'completed');
      turnEl = null;
      stepEl = null;
    } else if (r.type === 'compaction/end') {
      compEl = null;
    }
  }
  const sel = S.selected != null && log.querySelector(`.ev[data-seq="${S.selected}"]`);
  if (S.toEnd) {
    S.toEnd = false;
    pane.scrollTop = pane.scrollHeight;
  } else if (streaming && S.fresh >= 0 && nearBottom) {
    const row = log.querySelector(`.ev[data-seq="${S.fresh}"]`);
    if (row) row.scrollIntoView({ block: 'nearest' });
  } else if (sel && !streaming) {
    sel.scrollIntoView({ block: 'nearest' });
  }
}

function group(kind, title) {
  return h(`div.group.g-${kind}`, h('div.gh', h('span.gt', title), h('span.gn')));
}

function setGroupNote(el, text, bad) {
  const n = $('.gn', el);
  n.textContent = text || '';
  if (bad) n.classList.add('bad');
}

function eventRow(s, r, info) {
  const k = kindOf(r.type);
  const cls = ['ev', `k-${k}`];
  if (r.seq === S.selected) cls.push('sel');
  if (r.seq === S.fresh) cls.push('fresh');
  const doomed = S.staged && S.staged.kind === 'delete' && S.staged.session === s.id && S.staged.seq === r.seq;
  if (doomed) cls.push('doomed');
  let vis = null;
  if (SURFACE.has(r.type)) {
    if (info.bySource.has(r.seq)) {
      const i = info.bySource.get(r.seq);
      vis = h('span.vis', { title: `model-visible: message ${i} of the fold` }, `m${i}`);
    } else if (!info.surface.has(r.seq)) {
      cls.push('shadowed');
      vis = h('span.vis.off', { title: 'replaced on the surface: the model no longer sees it' }, 'shadowed');
    }
  }
  const sum = summary(r);
  const src = r.sources && r.sources.length ? h('span.src', { title: 'sources' }, `← ${range(r.sources)}`) : null;
  const row = h(`div.${cls.join('.')}`, {
    dataset: { seq: r.seq, type: r.type, kind: k },
    title: JSON.stringify(r),
    onclick: () => select(r.seq),
  },
  h('span.seq', String(r.seq)),
  h('span.type', r.type),
  h('span.sum', sum),
  src,
  vis,
  h('span.ops',
    h('button.op.op-fork', { type: 'button', title: 'fork at this event (F)', onclick: (e) => { e.stopPropagation(); select(r.seq, true); forkHere(); } }, '⑂'),
    h('button.op.op-del', { type: 'button', title: 'delete this event, on a copy (D)', onclick: (e) => { e.stopPropagation(); select(r.seq, true); stageDelete(); } }, doomed ? '↺' : '✕'),
  ));
  if (r.seq === S.selected) {
    return h('div.evwrap', row, h('pre.raw', JSON.stringify(r)));
  }
  return row;
}

function messageItem(m, i, opts = {}) {
  const cls = ['msg', `r-${m.role}`];
  if (opts.fresh) cls.push('fresh');
  if (opts.pending) cls.push('pending');
  if (opts.tampered) cls.push('tampered');
  const calls = (m.tool_calls || []).map((c) => h('div.call', `→ ${c.name}(${c.arguments})`, h('span.cid', c.id)));
  const head = h('div.mh',
    h('span.idx', `#${i}`),
    h('span.role', m.role + (m.tool_call_id ? ` · ${m.tool_call_id}` : '')),
    opts.pending ? h('span.src', 'this turn’s user message') : m.source >= 0 ? h('span.src', `← seq ${m.source}`) : null,
    opts.tampered ? h('span.tag', 'edited, bypassing the log') : null,
    opts.editable ? h('button.edit', { type: 'button', title: 'edit this message in the request, bypassing the log', onclick: () => openEdit('message', i) }, '✎') : null,
  );
  const body = opts.editing
    ? editBox(opts.content ?? m.content ?? '')
    : h('div.body', (opts.content ?? m.content) || (calls.length ? '' : '(empty)'));
  return h(`li.${cls.join('.')}`, {
    dataset: { index: i, source: m.source ?? '' },
    onmouseenter: () => highlight(m.source, true),
    onmouseleave: () => highlight(m.source, false),
  }, head, body, calls);
}

function highlight(seq, on) {
  if (seq == null || seq < 0) return;
  const row = $(`#log .ev[data-seq="${seq}"]`);
  if (row) row.classList.toggle('hl', on);
}

// undecided returns the calls of the session's suspended step that wait
// for a decision (the server's fold says which: state.suspended).
function undecided(s) {
  const sp = s && s.state && s.state.suspended;
  return sp ? sp.calls.filter((c) => !c.decision) : [];
}

// renderPending shows the calls a suspended turn waits for, each with its
// tool, arguments and the request's reason, and the buttons that decide.
function renderPending(s) {
  const box = $('#pending');
  box.textContent = '';
  const sp = s && s.state && s.state.suspended;
  if (!sp) {
    box.hidden = true;
    return;
  }
  box.hidden = false;
  box.append(h('h3', `Turn ${sp.turn}, step ${sp.step} waits for your decision`));
  for (const c of sp.calls) {
    const row = h('div.pcall', { dataset: { call: c.id } },
      h('div.ptool', h('b', c.tool), `(${c.arguments})`, h('span.cid', ` ${c.id} · seq ${c.seq}`)),
      h('div.pwhy', `asked by ${c.by || '?'}${c.reason ? ': ' + c.reason : ''} (approval/request, seq ${c.request_seq})`));
    if (c.decision) {
      const d = c.decision;
      row.append(h(`div.pdone${d.allow ? '' : '.bad'}`, `${d.allow ? '✓ allowed' : '✗ denied'} by ${d.by}${d.reason ? ': ' + d.reason : ''} — waiting for the other calls`));
    } else {
      const reason = h('input.preason', { type: 'text', placeholder: 'reason (optional, shown to the model with a denial)', autocomplete: 'off', spellcheck: 'false' });
      const go = (allow, always) => decide(s.id, c.id, allow, always, reason.value);
      row.append(reason, h('div.pbtns',
        h('button.primary.allow', { type: 'button', disabled: S.busy, title: 'allow this call: the tool runs and the turn resumes', onclick: () => go(true, false) }, 'Allow'),
        h('button.deny', { type: 'button', disabled: S.busy, title: 'deny this call: the model gets APPROVAL_DENIED and the reason', onclick: () => go(false, false) }, 'Deny'),
        h('button.always', { type: 'button', disabled: S.busy, title: 'allow this call and, for the rest of this session, the later calls this rule asks about', onclick: () => go(true, true) }, 'Always for this session')));
    }
    box.append(row);
  }
}

function renderMessages(s) {
  const ol = $('#messages');
  ol.textContent = '';
  const st = s && s.state;
  if (!st) {
    $('#msg-meta').textContent = '';
    ol.append(h('li.empty', 'Nothing is derived from an empty log.'));
    return;
  }
  if (st.error) ol.append(h('li.empty.bad', `The log does not fold: ${st.error}`));
  $('#msg-meta').textContent = `session.DeriveMessages(seqs 0…${st.seq}) · ${st.messages.length} messages`;
  st.messages.forEach((m, i) => ol.append(messageItem(m, i, { fresh: S.fresh >= 0 && i >= S.freshMsgs && s.id === S.view })));
  if (!st.messages.length) ol.append(h('li.empty', 'No surface event yet: the model would see no message.'));
}

function renderRequest(s) {
  const box = $('#request');
  box.textContent = '';
  const next = s && s.state && s.state.next;
  if (!next) {
    $('#req-meta').textContent = '';
    return;
  }
  $('#req-meta').textContent = next.in_flight
    ? `in flight · turn ${next.turn} step ${next.step} · fold of seqs < ${next.step_start}`
    : `turn ${next.turn} step 1 · fold of the whole log + this turn’s message`;
  const staged = S.staged && S.staged.kind === 'edit' && S.staged.session === s.id ? S.staged : null;
  const canEdit = !next.in_flight && !S.busy;
  const hd = next.header;
  const sysStaged = staged && staged.target === 'system';
  const sysEditing = S.editing && S.editing.target === 'system';
  box.append(h('div.head',
    hd ? [
      h('div.kv', h('span.k', 'provider · model'), h('span.v', `${hd.provider || '—'} · ${hd.model || '—'}`)),
      h(`div.kv${sysStaged ? '.tampered' : ''}`, h('span.k', 'system'),
        sysEditing ? editBox(sysStaged ? staged.content : hd.system || '') : h('span.v', sysStaged ? staged.content : hd.system || '(none)'),
        sysStaged ? h('span.tag', 'edited, bypassing the log') : null,
        canEdit && !sysEditing ? h('button.edit', { type: 'button', title: 'edit the system prompt in the request, bypassing the log', onclick: () => openEdit('system', 0) }, '✎') : null),
      h('div.kv', h('span.k', 'tools'), h('span.v', (hd.tools || []).map((t) => t.name).join(', ') || '(none)')),
    ] : h('div.kv', h('span.k', 'header'), h('span.v.muted', 'no request/header logged yet: the first step logs one')),
  ));
  const ol = h('ol.msgs', { start: 0 });
  next.messages.forEach((m, i) => {
    const t = staged && staged.target === 'message' && staged.index === i;
    const editing = S.editing && S.editing.target === 'message' && S.editing.index === i;
    ol.append(messageItem(m, i, { editable: canEdit && !editing, editing, tampered: t, content: t ? staged.content : undefined }));
  });
  if (!next.in_flight) {
    const i = next.messages.length;
    const t = staged && staged.target === 'message' && staged.index === i;
    const editing = S.editing && S.editing.target === 'message' && S.editing.index === i;
    const m = { role: 'user', content: promptText(), source: -1 };
    ol.append(messageItem(m, i, { pending: true, editable: canEdit && !editing, editing, tampered: t, content: t ? staged.content : undefined }));
  }
  box.append(ol);
}

function promptText() { return $('#prompt').value || $('#prompt').placeholder; }

function editBox(value) {
  const ta = h('textarea.editbox', { rows: 3, spellcheck: 'false' });
  ta.value = value;
  const save = () => {
    const e = S.editing;
    S.staged = { kind: 'edit', session: S.view, target: e.target, index: e.index, content: ta.value };
    S.editing = null;
    S.result = null;
    render();
  };
  ta.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); save(); }
    if (e.key === 'Escape') { e.preventDefault(); S.editing = null; render(); }
  });
  setTimeout(() => { ta.focus(); ta.select(); }, 0);
  return h('div.editwrap', ta, h('div.editbtns',
    h('button.primary', { type: 'button', onclick: save }, 'Stage edit'),
    h('button', { type: 'button', onclick: () => { S.editing = null; render(); } }, 'Cancel'),
    h('span.muted', ' Ctrl+Enter'),
  ));
}

function openEdit(target, index) {
  S.editing = { target, index };
  renderRequest(current());
}

function renderStaged() {
  const box = $('#staged');
  box.textContent = '';
  const st = S.staged;
  const s = current();
  if (!st || !s || st.session !== s.id) {
    box.className = 'staged none';
    box.append(h('span', 'Nothing staged: the next request is built honestly from the log, and every message should get a ✓.'));
    return;
  }
  box.className = 'staged armed';
  if (st.kind === 'delete') {
    box.append(h('span.what', '✕ delete ', h('b', `seq ${st.seq}`), ` (${st.type}) from a copy of ${s.label}`),
      h('span.why', 'The request is then built from the original log, as by a loop that kept its own message list.'));
  } else if (st.target === 'system') {
    box.append(h('span.what', '✎ system prompt of the request, bypassing the log: ', h('b', q(short(st.content, 60)))));
  } else {
    box.append(h('span.what', '✎ message ', h('b', `#${st.index}`), ' of the request, bypassing the log: ', h('b', q(short(st.content, 60)))));
  }
  box.append(h('button.clear', { type: 'button', title: 'clear (Esc)', onclick: () => { S.staged = null; render(); } }, 'clear'));
}

// ---- results ----------------------------------------------------------------

function renderResult() {
  const box = $('#result');
  box.textContent = '';
  const r = S.result;
  if (!r) return;
  if (r.kind === 'error') box.append(h('div.verdict.bad', `✗ ${r.data}`));
  else if (r.kind === 'send') box.append(...sendResult(r.data));
  else if (r.kind === 'replay') box.append(...replayResult(r.data));
  else if (r.kind === 'verify') box.append(...verifyResult(r.data));
  else if (r.kind === 'fork') box.append(h('div.verdict.ok', `⑂ ${r.data}`));
  else if (r.kind === 'decide') box.append(...decideResult(r.data));
}

function violationBox(v) {
  const where = v.index >= 0 ? `message ${v.index}` : v.seq >= 0 ? `seq ${v.seq}` : '';
  return h('div.violation', { role: 'alert' },
    h('div.vh', h('code.rule', v.rule), where ? h('span.where', where) : null),
    h('div.vmsg', v.message),
    v.expected || v.actual ? h('dl',
      h('dt', 'expected'), h('dd', v.expected || '—'),
      h('dt', 'actual'), h('dd', v.actual || '—')) : null);
}

function msgCell(m) {
  if (!m) return h('td.cell.none', '(no message)');
  const calls = (m.tool_calls || []).map((c) => ` → ${c.name}(${c.arguments})`).join('');
  return h('td.cell', { title: (m.content || '') + calls }, h('span.role', m.role), ' ', short((m.content || '') + calls, 70));
}

const MARK = { match: ['✓', 'ok', 'match'], diverge: ['✗', 'bad', 'first divergence'], unchecked: ['·', 'skip', 'not compared: the check stops at the first divergence'] };

function sendResult(d) {
  const out = [];
  const rule = d.violation ? h('code.rule', d.violation.rule) : null;
  const verdict = {
    request: ['bad', '✗ Refused by the invariants plugin: ', rule, ' — the request never reached the model.'],
    seed: ['bad', '✗ The forged log was refused when it was seeded', rule ? [': ', rule] : '.'],
    fork: ['bad', '✗ Could not fork: ', d.error],
    turn: ['bad', '✗ The turn failed.'],
    sent: ['ok', '✓ The request equals a fresh fold of the log: it was sent.'],
  }[d.stage] || ['bad', d.stage];
  const [cls, ...text] = verdict;
  out.push(h(`div.verdict.${cls}`, { dataset: { stage: d.stage } }, ...text));
  out.push(h('div.tamper', h('span.k', 'tampering '), d.tamper));
  if (d.stage === 'sent' && d.reply) out.push(h('div.reply', h('span.k', 'the model replied '), q(d.reply)));
  if (d.compare && d.compare.length) {
    const rows = d.compare.map((c, i) => {
      const [sym, mcls, title] = MARK[c.mark];
      return h(`tr.reveal.m-${c.mark}`, { style: `animation-delay:${i * 160}ms` },
        h('td.i', `#${c.index}`),
        msgCell(d.expected.messages[c.index]),
        msgCell(d.request.messages[c.index]),
        h(`td.mark.${mcls}`, { title }, sym));
    });
    const [hsym, hcls, htitle] = MARK[d.header || 'unchecked'];
    rows.push(h(`tr.reveal.hdr.m-${d.header}`, { style: `animation-delay:${d.compare.length * 160}ms` },
      h('td.i', 'hdr'),
      h('td.cell', 'latest request/header'),
      h('td.cell', 'the request’s header'),
      h(`td.mark.${hcls}`, { title: htitle }, hsym)));
    out.push(h('table.cmp',
      h('thead', h('tr', h('th', '#'), h('th', `fresh fold of the log (seqs < ${d.expected.step_start})`), h('th', 'request as sent'), h('th', ''))),
      h('tbody', rows)));
  }
  if (d.violation) {
    const delay = (d.compare ? d.compare.length + 1 : 0) * 160;
    const v = violationBox(d.violation);
    v.classList.add('reveal');
    v.style.animationDelay = `${delay}ms`;
    out.push(v);
  }
  // Without a violation the error is all there is to say: show it open.
  if (d.error) out.push(h('details.err', { open: !d.violation }, h('summary', 'the error, as returned'), h('pre', d.error)));
  return out;
}

function decideResult(r) {
  const { req, data: d } = r;
  const what = req.allow ? (req.always ? 'Allowed for the rest of this session' : 'Allowed') : 'Denied';
  const out = [h(`div.verdict.${req.allow ? 'ok' : 'bad'}`, { dataset: { stage: 'decided' } },
    `${req.allow ? '✓' : '✗'} ${what}: ${req.call}, logged as approval/decision at seq ${d.seq}. `,
    d.resumed ? 'Every call of the step is decided: the turn resumes.' : `Still waiting for ${d.undecided.join(', ')}.`)];
  return out;
}

function replayResult(d) {
  const same = d.steps.filter((s) => s.same).length;
  const ok = same === d.steps.length && !d.error;
  const out = [h(`div.verdict.${ok ? 'ok' : 'bad'}`, `${ok ? '✓' : '✗'} Replay: ${same} of ${d.steps.length} requests re-derived identically (provider/replay, no model).`)];
  if (d.steps.length) {
    out.push(h('table.cmp.replay',
      h('thead', h('tr', h('th', 'step'), h('th', 'recorded digest'), h('th', 'replayed digest'), h('th', ''))),
      h('tbody', d.steps.map((s, i) => h('tr.reveal', { style: `animation-delay:${i * 120}ms` },
        h('td.i', `${s.turn}.${s.step}`),
        h('td.cell.mono', s.recorded ? s.recorded.slice(0, 16) + '…' : '—'),
        h('td.cell.mono', s.replayed ? s.replayed.slice(0, 16) + '…' : '—'),
        h(`td.mark.${s.same ? 'ok' : 'bad'}`, s.same ? '✓' : '✗'))))));
  }
  if (d.violation) out.push(violationBox(d.violation));
  else if (d.error) out.push(h('details.err', { open: true }, h('summary', 'the replay stopped'), h('pre', d.error)));
  return out;
}

function verifyResult(d) {
  const n = d.violations.length;
  const out = [h(`div.verdict.${n ? 'bad' : 'ok'}`, n
    ? `✗ Verify: ${n} violation${n > 1 ? 's' : ''} in ${d.events} events.`
    : `✓ Verify: ${d.events} events, every append rule and request digest holds.`)];
  for (const v of d.violations) out.push(violationBox(v));
  return out;
}

// ---- actions ----------------------------------------------------------------

async function control(op) {
  try {
    if (setPlay(await api('/api/control', { op }))) renderControls();
  } catch (err) {
    S.result = { kind: 'error', data: err.message };
    renderResult();
  }
}

function select(seq, keep) {
  S.selected = !keep && S.selected === seq ? null : seq;
  renderLog(current(), false);
  renderControls();
}

function moveSel(delta) {
  const s = current();
  if (!s || !s.records.length) return;
  const n = s.records.length;
  S.selected = S.selected == null ? (delta > 0 ? 0 : n - 1) : Math.max(0, Math.min(n - 1, S.selected + delta));
  renderLog(s, false);
  renderControls();
}

function stageDelete() {
  const s = current();
  if (!s || S.selected == null) return;
  const r = s.records[S.selected];
  if (S.staged && S.staged.kind === 'delete' && S.staged.session === s.id && S.staged.seq === r.seq) S.staged = null;
  else S.staged = { kind: 'delete', session: s.id, seq: r.seq, type: r.type };
  S.result = null;
  render();
}

async function run(kind, fn) {
  if (S.busy) return;
  S.busy = true;
  document.body.classList.add('busy');
  renderControls();
  try {
    S.result = await fn();
  } catch (err) {
    S.result = { kind: 'error', data: err.message };
  } finally {
    S.busy = false;
    document.body.classList.remove('busy');
  }
  render();
  $('#result').scrollIntoView({ block: 'nearest' });
}

function send() {
  const s = current();
  if (!s || S.busy || unsendable()) return;
  const body = { session: s.id, prompt: $('#prompt').value };
  const st = S.staged && S.staged.session === s.id ? S.staged : null;
  if (st && st.kind === 'delete') body.delete = st.seq;
  if (st && st.kind === 'edit') body.edit = { target: st.target, index: st.index, content: st.content };
  run('send', async () => {
    const d = await api('/api/send', body);
    S.staged = null;
    S.editing = null;
    if (d.session) {
      upsert(d.session);
      S.view = d.session.id;
      S.selected = null;
      S.fresh = -1;
      S.toEnd = true; // the turn just sent is at the end
    }
    return { kind: 'send', data: d };
  });
}

function decide(session, call, allow, always, reason) {
  const req = { session, call, allow, always, reason };
  run('decide', async () => {
    const d = await api('/api/decide', req);
    return { kind: 'decide', data: { req, data: d } };
  });
}

function forkHere() {
  const s = current();
  if (!s || S.selected == null) return;
  const seq = S.selected;
  run('fork', async () => {
    const d = await api('/api/fork', { session: s.id, seq });
    upsert(d.session);
    S.view = d.session.id;
    S.selected = null;
    S.toEnd = true;
    return { kind: 'fork', data: `Forked ${s.label} at seq ${seq}: ${d.session.label} holds seqs 0…${seq} and a session/end-seed. Send the next request to continue it.` };
  });
}

function replay() {
  const s = current();
  if (!s) return;
  run('replay', async () => ({ kind: 'replay', data: await api('/api/replay', { session: s.id }) }));
}

function verify() {
  const s = current();
  if (!s) return;
  run('verify', async () => ({ kind: 'verify', data: await api('/api/verify', { session: s.id }) }));
}

function switchTab(delta) {
  if (!S.order.length) return;
  const i = Math.max(0, S.order.indexOf(S.view));
  showSession(S.order[(i + delta + S.order.length) % S.order.length]);
}

function togglePlay() { control(S.play.state === 'playing' ? 'pause' : 'play'); }

// ---- wiring -----------------------------------------------------------------

function wire() {
  const click = (id, fn) => $(id).addEventListener('click', (e) => { e.currentTarget.blur(); fn(); });
  click('#play', togglePlay);
  click('#step', () => control('step'));
  click('#finish', () => control('finish'));
  click('#reset', () => control('reset'));
  click('#send', send);
  click('#fork', forkHere);
  click('#replay', replay);
  click('#verify', verify);
  const prompt = $('#prompt');
  prompt.placeholder = 'And in a fortnight?';
  prompt.addEventListener('input', () => renderRequest(current()));
  prompt.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') { e.preventDefault(); prompt.blur(); send(); }
    if (e.key === 'Escape') prompt.blur();
  });
  document.addEventListener('keydown', (e) => {
    if (e.target.closest && e.target.closest('input, textarea, select')) return;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    switch (e.key) {
      case ' ': togglePlay(); break;
      case 'ArrowRight': case '.': control('step'); break;
      case 'e': case 'E': control('finish'); break;
      case 'r': case 'R': control('reset'); break;
      case 'ArrowDown': case 'j': moveSel(1); break;
      case 'ArrowUp': case 'k': moveSel(-1); break;
      case 'd': case 'D': case 'Delete': stageDelete(); break;
      case 'f': case 'F': forkHere(); break;
      case 'Enter': send(); break;
      case 'p': case 'P': replay(); break;
      case 'v': case 'V': verify(); break;
      case '[': switchTab(-1); break;
      case ']': switchTab(1); break;
      case 'Escape': S.staged = null; S.editing = null; S.selected = null; render(); break;
      default: return;
    }
    e.preventDefault();
  });
}

wire();
render();
start();

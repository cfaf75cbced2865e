// A session's timeline: turns → steps → events, from its log, then
// following it live through the event stream (a ticket per stream,
// resumed after the last seq seen).
import { api, enc, events, follow } from './api.js';
import { h, mount, notice, pretty, num } from './dom.js';
import { sessionHead, setStatus } from './session.js';

// repairCodes mark the results crash repair wrote.
const repairCodes = new Set(['TOOL_NOT_STARTED', 'TOOL_OUTCOME_UNKNOWN']);

function label(text, kind) {
  return h('span', { class: 'label' + (kind ? ' ' + kind : '') }, text);
}

// describe renders one record's body; chunks are folded into the step's
// streaming text elsewhere.
function describe(rec, sessionID) {
  const d = rec.data || {};
  switch (rec.type) {
    case 'turn/start':
      return [d.by ? `posted by ${d.by}` : 'started', d.continues ? [' ', label(`continuation of turn ${d.continues}`)] : null];
    case 'turn/end':
      return [d.reason, d.reason === 'interrupted' ? [' ', label('crash repair', 'repair')] : null, d.error ? h('pre', {}, d.error) : null];
    case 'user/message':
      return [d.origin ? [label(d.origin), ' '] : null, h('div', { class: 'msg' }, h('div', { class: 'role' }, 'user'), d.content)];
    case 'assistant/message':
      return h('div', { class: 'msg' }, h('div', { class: 'role' }, 'assistant'), d.content || '',
        (d.tool_calls || []).length ? h('div', { class: 'muted' }, 'calls ', d.tool_calls.map((c) => c.name).join(', ')) : null);
    case 'tool/call':
      return [h('code', {}, d.name), ' ', h('code', { class: 'muted' }, d.id), h('pre', {}, pretty(d.arguments))];
    case 'tool/result': {
      const out = [h('code', {}, d.name || ''), ' → '];
      if (d.error) {
        if (repairCodes.has(d.error.code)) out.push(label('crash repair', 'repair'), ' ');
        out.push(h('span', { class: 'bad' }, d.error.code), d.error.message ? ': ' + d.error.message : '');
      }
      if (d.content !== undefined) out.push(h('pre', {}, d.content));
      if (d.child) out.push(h('p', {}, label('delegation'), ' ', h('a', { href: '#/sessions/' + enc(d.child.id), class: 'child-link' }, `open the sub-agent's timeline (${d.child.id})`)));
      return out;
    }
    case 'approval/request':
      return [`waits for a person: ${d.by || ''}${d.reason ? ' — ' + d.reason : ''} `, h('a', { href: '#/approvals' }, 'decide')];
    case 'approval/decision':
      return [h('span', { class: d.allow ? 'ok' : 'bad' }, d.allow ? 'allowed' : 'denied'), ` by ${d.by || '?'}`, d.scope === 'session' ? ' for this session' : '', d.reason ? ` — ${d.reason}` : ''];
    case 'request/header':
      return [d.reason, d.header ? ` · ${d.header.provider || ''} ${d.header.model || ''}` : ''];
    case 'request/digest':
      return [h('code', {}, (d.sha256 || '').slice(0, 16) + '…'), ` over ${d.messages} messages`];
    case 'step/end':
      return [d.finish || '', d.usage ? ` · ${num(d.usage.input)} in / ${num(d.usage.output)} out` : ''];
    case 'tool/retry':
      return [label('continuation'), ' runs ', h('code', {}, d.id), ' again with its idempotency key'];
    case 'tool/reconcile':
      return [label('reconciled'), ` ${d.id}${d.by ? ' by ' + d.by : ''}`, d.content ? h('pre', {}, d.content) : null];
    case 'approval/policy':
      return [`policy by ${d.by || '?'}: default ${d.default || 'allow'}`, h('ul', { class: 'rules' }, (d.rules || []).map((r) =>
        h('li', {}, h('code', {}, r.tool), r.arguments ? [' matching ', h('code', {}, r.arguments)] : '', ` → ${r.action}`, r.reason ? ` (${r.reason})` : '')))];
    case 'tool/start':
      return h('code', { class: 'muted' }, d.id);
    default:
      return Object.keys(d).length ? h('pre', {}, JSON.stringify(d, null, 2)) : '';
  }
}

// Timeline keeps the records by turn and step and redraws only the turn a
// new record belongs to.
class Timeline {
  constructor(id, root) {
    this.id = id;
    this.root = root;
    this.turns = new Map(); // turn → {recs, el}
    this.loose = { recs: [], el: null };
  }

  add(rec) {
    const key = rec.turn || 0;
    if (!this.turns.has(key)) this.turns.set(key, { recs: [], el: null });
    this.turns.get(key).recs.push(rec);
    return key;
  }

  renderTurn(key) {
    const t = this.turns.get(key);
    const el = this.turnEl(key, t.recs);
    if (t.el) t.el.replaceWith(el);
    else this.root.append(el);
    t.el = el;
  }

  turnEl(key, recs) {
    const start = recs.find((r) => r.type === 'turn/start');
    const end = recs.find((r) => r.type === 'turn/end');
    const title = key === 0 ? 'Between turns' : `Turn ${key}`;
    const badges = [];
    if (start && start.data.continues) badges.push(label(`continuation of turn ${start.data.continues}`));
    if (end && end.data.reason === 'interrupted') badges.push(label('crash repair', 'repair'));
    const state = end ? end.data.reason : (key === 0 ? '' : 'running…');
    const lastSeq = recs.length ? recs[recs.length - 1].seq : 0;
    const steps = new Map();
    const outside = [];
    for (const r of recs) {
      if (r.step) {
        if (!steps.has(r.step)) steps.set(r.step, []);
        steps.get(r.step).push(r);
      } else outside.push(r);
    }
    // Records of the turn outside steps come first (start, user message,
    // header) and last (end); steps sit between them in order.
    const before = outside.filter((r) => r.type !== 'turn/end');
    const after = outside.filter((r) => r.type === 'turn/end');
    const forkAt = end ? end.seq : null;
    return h('section', { class: 'turn', 'data-turn': key, 'aria-label': title },
      h('h2', {}, title, ' ', h('span', { class: 'muted' }, state), badges,
        forkAt !== null ? h('button', { type: 'button', class: 'quiet fork-turn', onclick: () => fork(this.id, forkAt) }, `Fork after seq ${forkAt}`) : null),
      before.length ? h('div', { class: 'step' }, this.eventsEl(before)) : null,
      [...steps.entries()].map(([n, srecs]) => this.stepEl(key, n, srecs)),
      after.length ? h('div', { class: 'step' }, this.eventsEl(after)) : null,
      h('span', { hidden: true }, String(lastSeq)));
  }

  stepEl(turn, n, recs) {
    const end = recs.find((r) => r.type === 'step/end');
    const msg = recs.find((r) => r.type === 'assistant/message');
    const chunks = recs.filter((r) => r.type === 'assistant/chunk');
    const rest = recs.filter((r) => r.type !== 'assistant/chunk');
    let streaming = null;
    if (!msg && chunks.length) {
      const text = chunks.map((c) => c.data.text || '').join('');
      streaming = h('p', { class: 'msg streaming', 'aria-live': 'polite' }, h('span', { class: 'role' }, 'assistant (streaming) '), text);
    }
    return h('div', { class: 'step', 'data-step': `${turn}/${n}` },
      h('h3', {}, `Step ${n}`, ' ', h('span', { class: 'muted' }, end ? end.data.finish || '' : 'open'),
        h('a', { href: `#/sessions/${enc(this.id)}/steps/${turn}/${n}`, class: 'request-link' }, `Request of step ${turn}.${n}`)),
      this.eventsEl(rest), streaming);
  }

  eventsEl(recs) {
    return h('ol', { class: 'events' }, recs.map((r) => h('li', { 'data-seq': r.seq, 'data-type': r.type },
      h('span', { class: 'seq' }, r.seq), h('span', { class: 'etype' }, r.type), h('div', { class: 'body' }, describe(r, this.id)))));
  }
}

export async function fork(id, at) {
  try {
    const s = await api('POST', `/v1/sessions/${enc(id)}/forks`, { at });
    notice(`Forked at seq ${at} into ${s.id}.`, 'info');
    location.hash = '#/sessions/' + enc(s.id);
  } catch (err) {
    notice(err.message);
  }
}

export async function timelineView(id) {
  const { head, status } = await sessionHead(id, '', 'Timeline');
  const live = h('span', { class: 'live', id: 'live' }, 'connecting…');
  const root = h('div', { id: 'timeline' });
  const prompt = h('input', { id: 'prompt', name: 'prompt', type: 'text', autocomplete: 'off' });
  const at = h('input', { id: 'fork-at', name: 'at', type: 'number', min: '-1', inputmode: 'numeric', class: 'narrow' });
  const forms = h('div', { class: 'row' },
    h('form', { class: 'row', onsubmit: async (e) => {
      e.preventDefault();
      if (!prompt.value.trim()) return;
      try {
        await api('POST', `/v1/sessions/${enc(id)}/turns`, { prompt: prompt.value });
        prompt.value = '';
      } catch (err) { notice(err.message); }
    } }, h('div', { class: 'field' }, h('label', { for: 'prompt' }, 'New turn'), prompt), h('div', { class: 'field' }, h('button', { type: 'submit' }, 'Send'))),
    h('form', { class: 'row', onsubmit: (e) => { e.preventDefault(); if (at.value !== '') fork(id, Number(at.value)); } },
      h('div', { class: 'field' }, h('label', { for: 'fork-at' }, 'Fork at seq'), at), h('div', { class: 'field' }, h('button', { type: 'submit', class: 'quiet', id: 'fork' }, 'Fork'))),
    h('div', { class: 'field' }, live));
  mount(head, forms, root);
  const tl = new Timeline(id, root);
  const recs = await events(id);
  for (const r of recs) tl.add(r);
  for (const key of [...tl.turns.keys()].sort((a, b) => a - b)) tl.renderTurn(key);
  if (!recs.length) root.append(h('p', { class: 'muted', id: 'empty' }, 'No turn yet.'));
  const last = recs.length ? recs[recs.length - 1].seq : -1;
  // Redraw at most once a frame however fast records come.
  const dirty = new Set();
  let frame = 0;
  const stopStream = follow(id, last, (rec) => {
    const empty = document.getElementById('empty');
    if (empty) empty.remove();
    dirty.add(tl.add(rec));
    if (rec.type === 'turn/end' || rec.type === 'turn/start' || rec.type === 'approval/request' || rec.type === 'approval/decision') setStatus(id, status);
    if (!frame) frame = requestAnimationFrame(() => {
      frame = 0;
      for (const k of dirty) tl.renderTurn(k);
      dirty.clear();
    });
  }, (on) => {
    live.textContent = on ? 'live' : 'reconnecting…';
    live.classList.toggle('on', on);
    if (on) live.dataset.opens = String(Number(live.dataset.opens || 0) + 1); // streams opened, resumes included
  });
  return () => { stopStream(); cancelAnimationFrame(frame); };
}

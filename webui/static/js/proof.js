// The proofs of a session: each step's request as re-derived from the log
// (digest, invariants, checkpoint), the replay report,
// the trace waterfall and the usage per turn. All of it is the API's
// answer, shown; the page derives nothing.
import { api, enc } from './api.js';
import { h, mount, pretty, num, usd } from './dom.js';
import { sessionHead } from './session.js';

function mark(ok, yes, no) {
  return h('span', { class: ok ? 'ok verdict' : 'bad verdict' }, ok ? '✓ ' + yes : '✗ ' + no);
}

// unavailable says that the server does not serve a proof (an older one).
function failed(err, what) {
  return h('p', { class: 'notice' }, err.status === 404 && err.code === 'not_found' && /no route/.test(err.message)
    ? `This server does not serve ${what}.` : err.message);
}

// stepList is the steps of a GET …/steps answer ({"steps": […]}).
function stepList(body) {
  return Array.isArray(body) ? body : body.steps || [];
}

export async function stepsView(id) {
  const { head } = await sessionHead(id, '/steps', 'Steps');
  let body;
  try {
    const steps = stepList(await api('GET', `/v1/sessions/${enc(id)}/steps`));
    body = steps.length === 0 ? h('p', { class: 'muted' }, 'No step yet.') : h('div', { class: 'table-wrap' }, h('table', {},
      h('thead', {}, h('tr', {}, ['Step', 'Seq', 'Model', 'Finish', 'Digest'].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, steps.map((s) => h('tr', {},
        h('td', {}, h('a', { href: `#/sessions/${enc(id)}/steps/${s.turn}/${s.step}` }, `${s.turn}.${s.step}`)),
        h('td', {}, s.seq), h('td', {}, s.model || '—'), h('td', {}, s.finish || 'open'),
        h('td', {}, mark(s.digest_match, 'matches', 'differs')))))));
  } catch (err) { body = failed(err, 'the steps of a session'); }
  mount(head, body);
  return null;
}

function message(m) {
  const parts = [h('div', { class: 'role' }, m.role + (m.name ? ` (${m.name})` : '') + (m.tool_call_id ? ` · ${m.tool_call_id}` : ''))];
  if (m.content !== undefined && m.content !== '') parts.push(h('div', {}, typeof m.content === 'string' ? m.content : pretty(m.content)));
  for (const c of m.tool_calls || []) parts.push(h('pre', {}, `${c.name || (c.function && c.function.name)}(${pretty(c.arguments || (c.function && c.function.arguments) || '')})`));
  return h('div', { class: 'msg' }, parts);
}

export async function requestView(id, turn, step) {
  const { head } = await sessionHead(id, '/steps', `Request of step ${turn}.${step}`);
  let body;
  try {
    const r = await api('GET', `/v1/sessions/${enc(id)}/steps/${turn}/${step}/request`);
    const d = r.digest || {}, inv = r.invariants || { ok: false, findings: [] }, cp = r.checkpoint;
    let nav = null;
    try {
      const steps = stepList(await api('GET', `/v1/sessions/${enc(id)}/steps`));
      const i = steps.findIndex((s) => s.turn === turn && s.step === step);
      const link = (s, text) => s ? h('a', { href: `#/sessions/${enc(id)}/steps/${s.turn}/${s.step}` }, text) : null;
      nav = h('p', { class: 'row' }, link(steps[i - 1], '← previous step'), link(steps[i + 1], 'next step →'));
    } catch { /* the request alone still shows */ }
    body = [nav,
      h('section', { class: 'card', 'aria-labelledby': 'proof-h' },
        h('h2', { id: 'proof-h' }, 'Proof'),
        h('dl', { class: 'facts' },
          h('dt', {}, 'Digest'), h('dd', { id: 'digest' }, mark(d.match, 'the recorded digest matches the request derived from the log', 'the recorded digest differs from the derived request'),
            h('div', { class: 'id' }, 'recorded ', d.recorded || '—'), h('div', { class: 'id' }, 'derived ', d.derived || '—')),
          h('dt', {}, 'Invariants'), h('dd', { id: 'invariants' }, mark(inv.ok, 'hold', 'broken'),
            (inv.findings || []).length ? h('ul', {}, inv.findings.map((f) => h('li', {}, typeof f === 'string' ? f : JSON.stringify(f)))) : null),
          h('dt', {}, 'Checkpoint'), h('dd', { id: 'checkpoint' }, checkpoint(cp)),
          h('dt', {}, 'Seq'), h('dd', {}, r.seq)),
        h('p', {}, 'A fork starts at a turn\'s boundary: ', h('a', { href: `#/sessions/${enc(id)}` }, 'fork from the timeline'), '.')),
      h('section', { 'aria-labelledby': 'header-h' }, h('h2', { id: 'header-h' }, 'Header'), h('pre', { tabindex: '0', 'aria-label': 'Request header' }, JSON.stringify(r.header, null, 2))),
      h('section', { 'aria-labelledby': 'messages-h' }, h('h2', { id: 'messages-h' }, `Messages (${(r.messages || []).length})`), (r.messages || []).map(message)),
    ];
  } catch (err) { body = failed(err, 'step requests'); }
  mount(head, body);
  return null;
}

// checkpoint says how a signed log's checkpoints cover the step: a
// signature is checked only where the server holds the public keys.
function checkpoint(cp) {
  if (!cp || !cp.signed) return 'the log is not signed';
  if (!cp.covered) return mark(false, '', 'no signed checkpoint covers this step yet');
  const at = `the signed checkpoint at seq ${cp.checkpoint_seq} (tree size ${cp.tree_size}${cp.key ? ', key ' + cp.key : ''})`;
  return cp.verified ? mark(true, 'covered by ' + at + ', whose signature verifies', '')
    : h('span', {}, 'covered by ' + at + '; its signature is not checked here (the server holds no public key for it)');
}

function diffList(title, items) {
  if (!items || !items.length) return null;
  return [h('h3', {}, title), h('ul', {}, items.map((x) => h('li', {}, h('pre', {}, typeof x === 'string' ? x : JSON.stringify(x, null, 2)))))];
}

export async function replayView(id) {
  const { head } = await sessionHead(id, '/replay', 'Replay');
  mount(head, h('p', { class: 'muted' }, 'Replaying the recorded session…'));
  let body;
  try {
    const r = await api('GET', `/v1/sessions/${enc(id)}/replay`);
    const dv = r.diverged;
    body = h('section', { class: 'card', id: 'replay' },
      h('p', {}, r.identical ? mark(true, `identical: all ${r.steps} steps re-derive the same requests`, '')
        : mark(false, '', dv ? `diverged at step ${dv.turn}.${dv.step} (seq ${dv.seq})` : 'diverged')),
      dv && dv.field ? h('p', {}, 'First difference: ', h('code', {}, dv.field)) : null,
      dv && dv.not_sent ? h('p', {}, 'No request was sent: ', dv.not_sent) : null,
      dv ? [h('p', {}, h('a', { href: `#/sessions/${enc(id)}/steps/${dv.turn}/${dv.step}` }, `Open step ${dv.turn}.${dv.step}'s request`)),
        diffList('Header differences', dv.header_diff), diffList('Message differences', dv.message_diff)] : null,
      diffList('Errors', r.errors));
  } catch (err) { body = failed(err, 'replay reports'); }
  mount(head, body);
  return null;
}

export async function traceView(id) {
  const { head } = await sessionHead(id, '/trace', 'Trace');
  let body;
  try {
    const { spans } = await api('GET', `/v1/sessions/${enc(id)}/trace`);
    if (!spans.length) body = h('p', { class: 'muted' }, 'No span yet.');
    else {
      const t0 = Math.min(...spans.map((s) => Date.parse(s.start)));
      const t1 = Math.max(...spans.map((s) => Date.parse(s.end || s.start)));
      const total = Math.max(t1 - t0, 1);
      const depth = new Map();
      const byID = new Map(spans.map((s) => [s.id, s]));
      const level = (s) => {
        if (depth.has(s.id)) return depth.get(s.id);
        const p = s.parent && byID.get(s.parent);
        const d = p && p !== s ? Math.min(level(p) + 1, 8) : 0;
        depth.set(s.id, d);
        return d;
      };
      // Tree order: each span under its parent, siblings by start.
      const kids = new Map();
      for (const s of spans) {
        const p = s.parent && byID.has(s.parent) && s.parent !== s.id ? s.parent : '';
        if (!kids.has(p)) kids.set(p, []);
        kids.get(p).push(s);
      }
      const ordered = [], seen = new Set();
      const walk = (p) => {
        for (const s of (kids.get(p) || []).sort((a, b) => Date.parse(a.start) - Date.parse(b.start))) {
          if (seen.has(s.id)) continue;
          seen.add(s.id);
          ordered.push(s);
          walk(s.id);
        }
      };
      walk('');
      for (const s of spans) if (!seen.has(s.id)) ordered.push(s); // a cycle: shown flat
      const kind = (s) => s.name.startsWith('execute_tool') ? 'tool' : s.name.startsWith('invoke_agent') ? 'turn' : '';
      body = h('div', { class: 'card waterfall', id: 'waterfall', role: 'list' }, ordered.map((s) => {
        const a = Date.parse(s.start) - t0, b = Date.parse(s.end || s.start) - t0;
        const bar = h('span', { class: kind(s) });
        bar.style.left = (100 * a / total).toFixed(2) + '%';
        bar.style.width = (100 * (b - a) / total).toFixed(2) + '%';
        const name = h('div', { class: 'span-name' }, s.name);
        name.style.paddingLeft = level(s) * 0.8 + 'rem';
        if (s.error) name.append(' ', h('span', { class: 'bad' }, '✗ ' + s.error));
        return h('div', { class: 'span-row', role: 'listitem' }, name,
          h('div', { class: 'span-bar', role: 'img', 'aria-label': `${s.name}: from ${a} ms to ${b} ms` }, bar),
          h('div', { class: 'num' }, `${b - a} ms`));
      }));
    }
  } catch (err) { body = failed(err, 'traces'); }
  mount(head, body);
  return null;
}

export async function usageView(id) {
  const { head } = await sessionHead(id, '/usage', 'Usage');
  let body;
  try {
    const u = await api('GET', `/v1/sessions/${enc(id)}/usage`);
    const max = Math.max(1, ...u.turns.map((t) => (t.input || 0) + (t.output || 0)));
    const row = (name, t, isTotal) => {
      const bar = h('div', { class: 'bar' });
      bar.style.width = (100 * ((t.input || 0) + (t.output || 0)) / max).toFixed(1) + '%';
      return h('tr', {}, isTotal ? h('th', { scope: 'row' }, name) : h('td', {}, name),
        h('td', { class: 'num' }, t.steps === undefined ? '—' : num(t.steps)), h('td', { class: 'num' }, num(t.input)), h('td', { class: 'num' }, num(t.output)),
        h('td', { class: 'num' }, usd(t.cost_usd), (t.unpriced || []).length ? h('div', { class: 'muted' }, 'no price for ' + t.unpriced.join(', ')) : null),
        h('td', {}, isTotal ? '' : bar));
    };
    body = h('div', { class: 'table-wrap' }, h('table', { id: 'usage' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Turn'), ['Steps', 'Input tokens', 'Output tokens', 'Cost'].map((t) => h('th', { scope: 'col', class: 'num' }, t)), h('th', { scope: 'col' }, 'Share'))),
      h('tbody', {}, u.turns.map((t) => row(`Turn ${t.turn}`, t))),
      h('tfoot', {}, row('Total', u.total || {}, true))));
  } catch (err) { body = failed(err, 'usage'); }
  mount(head, body);
  return null;
}

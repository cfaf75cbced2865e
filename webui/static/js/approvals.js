// The approvals inbox: every call waiting for a person across the
// sessions the principal may see, with its whole arguments and the turn
// around it; a decision is posted to the API, which logs it as made by
// the principal the token names.
import { api, enc, events } from './api.js';
import { h, mount, notice, time, pretty } from './dom.js';

export async function refreshApprovalCount() {
  const el = document.getElementById('approval-count');
  try {
    const { approvals } = await api('GET', '/v1/approvals');
    el.textContent = String(approvals.length);
    el.hidden = approvals.length === 0;
    el.setAttribute('aria-label', `${approvals.length} waiting`);
  } catch { el.hidden = true; }
}

// context is what led to call: the turn's person and message, and what
// the model said when it made the call.
function context(recs, call) {
  const callRec = recs.find((r) => r.type === 'tool/call' && r.data.id === call);
  if (!callRec) return null;
  const turn = recs.filter((r) => r.turn === callRec.turn);
  const start = turn.find((r) => r.type === 'turn/start');
  const user = turn.find((r) => r.type === 'user/message');
  const said = turn.filter((r) => r.type === 'assistant/message' && r.step === callRec.step).pop();
  return { turn: callRec.turn, step: callRec.step, seq: callRec.seq, by: start && start.data.by, user: user && user.data.content, said: said && said.data.content };
}

function card(a, ctx, onDone) {
  const key = `${a.session}-${a.call}`.replace(/[^A-Za-z0-9_-]/g, '_');
  const reason = h('input', { id: 'reason-' + key, name: 'reason', type: 'text', autocomplete: 'off' });
  const scope = h('input', { id: 'scope-' + key, name: 'scope', type: 'checkbox' });
  const result = h('p', { role: 'status', class: 'muted' });
  async function decide(allow) {
    const body = { allow, reason: reason.value.trim() };
    if (allow && scope.checked) body.scope = 'session';
    for (const b of buttons) b.disabled = true;
    try {
      await api('POST', `/v1/sessions/${enc(a.session)}/approvals/${enc(a.call)}`, body);
      result.textContent = allow ? 'Allowed: the turn goes on.' : 'Denied: the model is told why.';
      onDone();
    } catch (err) {
      result.textContent = err.message;
      for (const b of buttons) b.disabled = false;
    }
  }
  const buttons = [
    h('button', { type: 'button', class: 'allow', onclick: () => decide(true) }, 'Allow'),
    h('button', { type: 'button', class: 'deny', onclick: () => decide(false) }, 'Deny'),
  ];
  const sessionLink = h('a', { class: 'id', href: `#/sessions/${enc(a.session)}` }, a.session);
  return h('article', { class: 'card approval', 'data-call': a.call, 'aria-labelledby': 'title-' + key },
    h('h2', { id: 'title-' + key }, h('code', {}, a.tool), ' wants to run'),
    h('dl', { class: 'facts' },
      h('dt', {}, 'Session'), h('dd', {}, sessionLink, ctx ? ` · turn ${ctx.turn}, step ${ctx.step}, seq ${ctx.seq}` : ''),
      a.parent ? [h('dt', {}, 'Sub-agent of'), h('dd', {}, h('a', { class: 'id', href: `#/sessions/${enc(a.parent.id)}` }, a.parent.id), ' for call ', h('code', {}, a.parent.call))] : null,
      h('dt', {}, 'Call'), h('dd', {}, h('code', {}, a.call)),
      h('dt', {}, 'Asked by'), h('dd', {}, a.by || 'the policy', a.reason ? ': ' + a.reason : ''),
      h('dt', {}, 'Waiting since'), h('dd', {}, time(a.requested)),
      ctx && ctx.by ? [h('dt', {}, 'Turn posted by'), h('dd', {}, ctx.by)] : null),
    h('h3', {}, 'Arguments'),
    h('pre', { class: 'arguments', tabindex: '0', 'aria-label': 'Arguments of ' + a.tool }, pretty(a.arguments)),
    ctx ? h('details', { class: 'context' }, h('summary', {}, 'The turn so far'),
      ctx.user !== undefined ? h('div', { class: 'msg' }, h('div', { class: 'role' }, 'user'), ctx.user) : null,
      ctx.said ? h('div', { class: 'msg' }, h('div', { class: 'role' }, 'assistant'), ctx.said) : null) : null,
    h('div', { class: 'actions' },
      h('div', { class: 'field' }, h('label', { for: 'reason-' + key }, 'Reason (logged with the decision)'), reason),
      h('label', { class: 'check', for: 'scope-' + key }, scope, 'Allow for this session'),
      buttons),
    result);
}

export async function approvalsView() {
  const list = h('div', { id: 'approvals' });
  const count = h('p', { class: 'muted' });
  mount(h('h1', {}, 'Approvals'), count, list);
  const logs = new Map();
  let stopped = false, timer = null, shown = '';
  async function refresh() {
    try {
      const { approvals } = await api('GET', '/v1/approvals');
      if (stopped) return;
      // Redraw only when the waiting calls changed, so a reason being
      // typed is not wiped by a refresh.
      const now = approvals.map((a) => a.session + '/' + a.call).join(',');
      if (now !== shown) {
        shown = now;
        const cards = [];
        for (const a of approvals) {
          if (!logs.has(a.session)) logs.set(a.session, await events(a.session).catch(() => []));
          cards.push(card(a, context(logs.get(a.session), a.call), () => { logs.delete(a.session); refreshApprovalCount(); }));
        }
        if (stopped) return;
        list.replaceChildren(...cards);
        count.textContent = approvals.length === 0 ? 'Nothing waits for a decision.' : approvals.length === 1 ? 'One call waits for a decision.' : `${approvals.length} calls wait for a decision.`;
      }
    } catch (err) {
      if (!stopped) notice(err.message);
    }
    if (!stopped) timer = setTimeout(refresh, 3000);
  }
  await refresh();
  return () => { stopped = true; clearTimeout(timer); };
}

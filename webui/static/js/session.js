// The head of a session's views: its id, status, parent, and the tabs.
import { api, enc } from './api.js';
import { h, statusBadge, time } from './dom.js';
import { statusOf } from './sessions.js';

const tabs = [['', 'Timeline'], ['/steps', 'Steps'], ['/replay', 'Replay'], ['/trace', 'Trace'], ['/usage', 'Usage']];

export async function sessionHead(id, current, title) {
  const sum = await api('GET', `/v1/sessions/${enc(id)}`);
  const base = '#/sessions/' + enc(id);
  const status = h('span', { id: 'session-status' }, statusBadge(statusOf(sum)));
  const head = h('div', {},
    h('p', { class: 'muted' }, h('a', { href: '#/sessions' }, 'Sessions'), ' / ', h('span', { class: 'id' }, id)),
    h('h1', {}, title),
    h('dl', { class: 'facts' },
      h('dt', {}, 'Status'), h('dd', {}, status),
      h('dt', {}, 'Tenant'), h('dd', {}, sum.tenant, sum.by ? ` · created by ${sum.by}` : '', ' · ', time(sum.created)),
      sum.parent ? [h('dt', {}, 'Parent'), h('dd', {}, h('a', { class: 'id', href: '#/sessions/' + enc(sum.parent.id), id: 'parent-link' }, sum.parent.id),
        sum.parent.call ? [' · call ', h('code', {}, sum.parent.call)] : ' · a fork', sum.parent.seq !== undefined ? ` at seq ${sum.parent.seq}` : '')] : null),
    h('nav', { class: 'tabs', 'aria-label': 'Session views' }, tabs.map(([path, name]) =>
      h('a', { href: base + path, 'aria-current': path === current ? 'page' : false }, name))));
  return { head, sum, status };
}

// setStatus redraws the status badge from a fresh summary.
export async function setStatus(id, el) {
  try {
    const sum = await api('GET', `/v1/sessions/${enc(id)}`);
    el.replaceChildren(statusBadge(statusOf(sum)));
    return sum;
  } catch { return null; }
}

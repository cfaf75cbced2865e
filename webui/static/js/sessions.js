// The sessions list: every session the principal may see (the API
// scopes it to the tenant), with each one's summary and usage, filtered
// and searched here, refreshed every few seconds.
import { api, enc } from './api.js';
import { h, mount, notice, time, usd, num, statusBadge } from './dom.js';

// failedEnds are the ways a turn ends that a person must look at.
const failedEnds = new Set(['error', 'interrupted', 'blocked', 'max-steps', 'budget']);

// statusOf is the API's status, or failed for an idle session whose
// last turn did not complete.
export function statusOf(sum) {
  if (sum.status === 'idle' && failedEnds.has(sum.ended)) return 'failed';
  return sum.status;
}

// MAX bounds the rows, and so the summaries asked for at each refresh.
const MAX = 200;

// usageSeen keeps each session's usage with the log's length it was read
// at: a usage is a fold of the whole log on the server, so a refresh asks
// again only for the sessions whose log grew since.
const usageSeen = new Map();

async function usageOf(id, sum) {
  const at = sum ? sum.events : undefined;
  const seen = usageSeen.get(id);
  if (seen && at !== undefined && seen.at === at) return seen.usage;
  const usage = await api('GET', `/v1/sessions/${enc(id)}/usage`).catch(() => null);
  if (usage && at !== undefined) usageSeen.set(id, { at, usage });
  return usage;
}

async function load() {
  const list = await api('GET', '/v1/sessions');
  const infos = list.sessions.slice().sort((a, b) => (a.created < b.created ? 1 : -1)).slice(0, MAX);
  return Promise.all(infos.map(async (info) => {
    const sum = await api('GET', `/v1/sessions/${enc(info.id)}`).catch(() => null);
    return { info, sum, usage: await usageOf(info.id, sum) };
  }));
}

function tokens(usage) {
  if (!usage || !usage.total) return null;
  return (usage.total.input || 0) + (usage.total.output || 0);
}

export async function sessionsView() {
  const status = h('select', { id: 'f-status', name: 'status' },
    ['all', 'idle', 'running', 'suspended', 'failed'].map((s) => h('option', { value: s === 'all' ? '' : s }, s)));
  const search = h('input', { id: 'f-search', name: 'q', type: 'search', placeholder: 'id, tenant or creator' });
  const live = h('span', { class: 'live' }, '');
  const body = h('tbody', {});
  const count = h('p', { class: 'muted', id: 'sessions-count' });
  const newButton = h('button', { type: 'button', id: 'new-session', class: 'quiet', onclick: async () => {
    try {
      const s = await api('POST', '/v1/sessions');
      location.hash = '#/sessions/' + enc(s.id);
    } catch (err) { notice(err.message); }
  } }, 'New session');
  let rows = [];
  function render() {
    const want = status.value, q = search.value.trim().toLowerCase();
    const shown = rows.filter(({ info, sum }) => {
      const st = sum ? statusOf(sum) : '';
      if (want && st !== want) return false;
      if (!q) return true;
      return [info.id, info.tenant, info.by, info.parent && info.parent.id].some((v) => v && v.toLowerCase().includes(q));
    });
    body.replaceChildren(...shown.map(({ info, sum, usage }) => h('tr', { 'data-session': info.id },
      h('td', { 'data-label': 'Session' }, h('div', { class: 'cell' }, h('a', { class: 'id', href: '#/sessions/' + enc(info.id) }, info.id),
        info.parent ? h('div', { class: 'muted' }, info.parent.call ? 'sub-agent of ' : 'fork of ', h('a', { class: 'id', href: '#/sessions/' + enc(info.parent.id) }, info.parent.id.slice(-8))) : null)),
      h('td', { 'data-label': 'Status' }, sum ? statusBadge(statusOf(sum)) : '—'),
      h('td', { 'data-label': 'Tenant' }, info.tenant),
      h('td', { 'data-label': 'Creator' }, info.by || '—'),
      h('td', { 'data-label': 'Last activity' }, time(sum && sum.last_activity || info.created)),
      h('td', { 'data-label': 'Turns', class: 'num' }, sum ? num(sum.turns) : '—'),
      h('td', { 'data-label': 'Tokens', class: 'num' }, num(tokens(usage))),
      h('td', { 'data-label': 'Cost', class: 'num' }, usage && usage.total ? usd(usage.total.cost_usd) : '—'),
    )));
    count.textContent = `${shown.length} of ${rows.length} sessions` + (rows.length >= MAX ? ` (the newest ${MAX})` : '');
  }
  status.addEventListener('change', render);
  search.addEventListener('input', render);
  mount(
    h('h1', {}, 'Sessions'),
    h('form', { class: 'row', role: 'search', onsubmit: (e) => e.preventDefault() },
      h('div', { class: 'field' }, h('label', { for: 'f-status' }, 'Status'), status),
      h('div', { class: 'field' }, h('label', { for: 'f-search' }, 'Search'), search),
      h('div', { class: 'field' }, newButton),
      h('div', { class: 'field' }, live)),
    count,
    h('div', { class: 'table-wrap' }, h('table', { class: 'sessions' },
      h('caption', { class: 'muted', hidden: true }, 'Sessions'),
      h('thead', {}, h('tr', {}, ['Session', 'Status', 'Tenant', 'Creator', 'Last activity'].map((t) => h('th', { scope: 'col' }, t)),
        ['Turns', 'Tokens', 'Cost'].map((t) => h('th', { scope: 'col', class: 'num' }, t)))),
      body)),
  );
  let stopped = false, timer = null;
  async function refresh() {
    try {
      rows = await load();
      if (stopped) return;
      live.textContent = 'updated ' + new Date().toLocaleTimeString();
      live.classList.add('on');
      render();
    } catch (err) {
      if (!stopped) notice(err.message);
    }
    if (!stopped) timer = setTimeout(refresh, 4000);
  }
  await refresh();
  return () => { stopped = true; clearTimeout(timer); };
}

// h builds an element: attributes (on* become listeners, a boolean false
// drops the attribute) and children (strings become text nodes, never
// HTML, so what the API returns cannot inject markup).
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v === null || v === undefined) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// mount replaces main's content and moves focus to its heading, so a
// keyboard or screen-reader user lands on the new view.
export function mount(...children) {
  const main = document.getElementById('main');
  main.replaceChildren(...children.flat(Infinity).filter(Boolean));
  const title = main.querySelector('h1');
  if (title) document.title = title.textContent + ' · Vigil';
  main.focus({ preventScroll: true });
  return main;
}

// notice shows a message in the live region (errors by default).
export function notice(text, kind) {
  const n = document.getElementById('notice');
  if (!text) { n.hidden = true; n.textContent = ''; return; }
  n.className = 'notice' + (kind === 'info' ? ' info' : '');
  n.textContent = text;
  n.hidden = false;
}

export function ago(iso) {
  if (!iso) return '—';
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return iso;
  const s = Math.round((Date.now() - t.getTime()) / 1000);
  if (s < 60) return `${Math.max(s, 0)} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return t.toISOString().slice(0, 16).replace('T', ' ');
}

export function time(iso) {
  return h('time', { datetime: iso, title: iso }, ago(iso));
}

export function usd(n) {
  if (n === undefined || n === null) return '—';
  return '$' + Number(n).toFixed(n < 0.01 && n > 0 ? 5 : 4);
}

export function num(n) {
  return n === undefined || n === null ? '—' : Number(n).toLocaleString('en');
}

// pretty shows JSON text indented when it parses, as written when not;
// whole either way (arguments are never cut).
export function pretty(text) {
  if (typeof text !== 'string') return JSON.stringify(text, null, 2);
  try { return JSON.stringify(JSON.parse(text), null, 2); } catch { return text; }
}

export function statusBadge(status) {
  return h('span', { class: 'status ' + status }, status);
}

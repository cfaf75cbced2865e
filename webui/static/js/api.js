// The page's one way to the server: the public /v1 API, with the bearer
// token of the person logged in. Every check is the API's.

const KEY = 'vigil.token';

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export const auth = {
  get token() { return sessionStorage.getItem(KEY) || ''; },
  set(token, how) { sessionStorage.setItem(KEY, token); sessionStorage.setItem(KEY + '.how', how || 'token'); },
  clear() { sessionStorage.removeItem(KEY); sessionStorage.removeItem(KEY + '.how'); },
  // name is who is logged in as far as the page knows: an ID token's
  // name, email or subject; a pasted token says nothing the page can read.
  name() {
    if (sessionStorage.getItem(KEY + '.how') !== 'oidc') return 'Logged in with a token';
    const c = claims(this.token);
    return 'Logged in as ' + (c.name || c.email || c.preferred_username || c.sub || 'an OpenID Connect user');
  },
};

// claims reads a JWT's payload without checking it: the API checks it;
// the page only shows a name.
export function claims(jwt) {
  try {
    const part = jwt.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    return JSON.parse(decodeURIComponent(escape(atob(part))));
  } catch { return {}; }
}

export async function api(method, path, body) {
  const headers = { 'Accept': 'application/json' };
  if (auth.token) headers['Authorization'] = 'Bearer ' + auth.token;
  const init = { method, headers, cache: 'no-store' };
  // The API takes a POST only as JSON, even one without a body: that is
  // what keeps a form of another site from posting to it.
  if (method !== 'GET') headers['Content-Type'] = 'application/json';
  if (body !== undefined) init.body = JSON.stringify(body);
  const res = await fetch(path, init);
  const text = await res.text();
  let data = null;
  if (text) { try { data = JSON.parse(text); } catch { data = text; } }
  if (!res.ok) {
    const code = data && data.code || String(res.status);
    const msg = data && data.message || `${method} ${path}: ${res.status}`;
    if (res.status === 401) window.dispatchEvent(new CustomEvent('vigil:unauthorized', { detail: msg }));
    throw new ApiError(res.status, code, msg);
  }
  return data;
}

export const enc = encodeURIComponent;

// follow streams session id's events from seq after+1 on: it POSTs for a
// stream ticket with the bearer token (an EventSource cannot send one),
// opens the stream with it, and, when the stream drops, asks for a new
// ticket and resumes after the last seq seen, so no event is lost or seen
// twice. It returns a function that stops it.
export function follow(id, after, onRecord, onState) {
  let last = after, es = null, stopped = false, timer = null;
  async function open() {
    if (stopped) return;
    try {
      const t = await api('POST', `/v1/sessions/${enc(id)}/events/tickets`);
      if (stopped) return;
      // A fresh EventSource cannot set Last-Event-ID itself; after= says
      // where to resume. Its own reconnects (same ticket) are refused, and
      // then this opens a new one.
      es = new EventSource(`/v1/sessions/${enc(id)}/events?ticket=${enc(t.ticket)}&after=${last}`);
      es.onopen = () => onState && onState(true);
      es.onmessage = (e) => {
        const seq = Number(e.lastEventId);
        if (!(seq > last)) return;
        last = seq;
        try { onRecord(JSON.parse(e.data)); } catch (err) { console.error(err); }
      };
      es.onerror = () => {
        onState && onState(false);
        es.close();
        if (!stopped) timer = setTimeout(open, 1000);
      };
    } catch (err) {
      onState && onState(false);
      if (!stopped && err.status !== 401 && err.status !== 403 && err.status !== 404) timer = setTimeout(open, 2000);
    }
  }
  open();
  return () => { stopped = true; clearTimeout(timer); if (es) es.close(); };
}

// events reads session id's whole log (JSONL), a record each line.
export async function events(id) {
  const res = await fetch(`/v1/sessions/${enc(id)}/events`, {
    headers: { 'Authorization': 'Bearer ' + auth.token, 'Accept': 'application/jsonl' }, cache: 'no-store',
  });
  if (!res.ok) {
    let msg = `events: ${res.status}`;
    try { msg = (await res.json()).message || msg; } catch { /* not JSON */ }
    throw new ApiError(res.status, String(res.status), msg);
  }
  const text = await res.text();
  return text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

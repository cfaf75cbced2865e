// Logging in: a bearer token pasted by the person (from the server's
// token file), or OpenID Connect's authorization-code flow with PKCE as a
// public client, whose ID token is then the bearer the API checks.
import { api, auth, claims } from './api.js';
import { h, mount, notice } from './dom.js';

let configPromise = null;
export function config() {
  if (!configPromise) configPromise = fetch('config.json', { cache: 'no-store' }).then((r) => r.ok ? r.json() : {}).catch(() => ({}));
  return configPromise;
}

export async function loginView() {
  const cfg = await config();
  const input = h('input', { id: 'token', name: 'token', type: 'password', autocomplete: 'off', required: true, spellcheck: 'false' });
  const form = h('form', { class: 'card', onsubmit: async (e) => {
    e.preventDefault();
    const token = input.value.trim();
    if (!token) return;
    auth.set(token, 'token');
    try {
      // Any call the principal may make tells whether the API takes it.
      await api('GET', '/v1/sessions');
    } catch (err) {
      auth.clear();
      notice(err.status === 401 ? 'That token is not accepted.' : err.message);
      return;
    }
    notice('');
    window.dispatchEvent(new CustomEvent('vigil:login'));
  } },
  h('div', { class: 'field' }, h('label', { for: 'token' }, 'Bearer token'), input,
    h('span', { class: 'muted', id: 'token-help' }, 'A token of the server\'s token file. It stays in this tab only (session storage).')),
  h('button', { type: 'submit', id: 'login' }, 'Log in'));
  input.setAttribute('aria-describedby', 'token-help');
  let oidc = null;
  if (cfg.oidc) {
    oidc = h('div', { class: 'card' },
      h('h2', {}, 'Single sign-on'),
      h('p', {}, 'Log in at ', h('span', { class: 'id' }, cfg.oidc.issuer), ' (OpenID Connect).'),
      h('button', { type: 'button', id: 'oidc-login', onclick: () => startOIDC(cfg.oidc).catch((err) => notice('OpenID Connect login failed: ' + err.message)) }, 'Log in with OpenID Connect'));
  }
  mount(h('section', { class: 'login' }, h('h1', {}, 'Log in to Vigil'), oidc, form));
  input.focus();
  return null;
}

const PKCE = 'vigil.oidc';

function b64url(bytes) {
  let s = '';
  for (const b of new Uint8Array(bytes)) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function random() {
  return b64url(crypto.getRandomValues(new Uint8Array(32)));
}

async function discover(issuer) {
  const res = await fetch(issuer.replace(/\/$/, '') + '/.well-known/openid-configuration');
  if (!res.ok) throw new Error(`discovery: ${res.status}`);
  return res.json();
}

function redirectURI() {
  return location.origin + location.pathname;
}

// startOIDC sends the browser to the issuer with a PKCE challenge; the
// verifier, state and nonce wait in session storage for the way back.
async function startOIDC(o) {
  const meta = await discover(o.issuer);
  const verifier = random(), state = random(), nonce = random();
  const challenge = b64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
  sessionStorage.setItem(PKCE, JSON.stringify({ verifier, state, nonce, token: meta.token_endpoint }));
  const q = new URLSearchParams({
    response_type: 'code', client_id: o.client_id, redirect_uri: redirectURI(), scope: o.scopes.join(' '),
    state, nonce, code_challenge: challenge, code_challenge_method: 'S256',
  });
  location.assign(meta.authorization_endpoint + '?' + q.toString());
}

// finishOIDC completes a login the issuer redirected back from: it checks
// the state, trades the code and the verifier for tokens, checks the ID
// token's nonce, and keeps the ID token as the bearer. It reports whether
// there was a login to finish.
export async function finishOIDC() {
  const q = new URLSearchParams(location.search);
  if (!q.has('code') && !q.has('error')) return false;
  const saved = JSON.parse(sessionStorage.getItem(PKCE) || 'null');
  sessionStorage.removeItem(PKCE);
  history.replaceState(null, '', location.pathname + location.hash);
  if (q.has('error')) throw new Error(q.get('error_description') || q.get('error'));
  if (!saved || q.get('state') !== saved.state) throw new Error('the answer does not match a login this tab started');
  const cfg = await config();
  if (!cfg.oidc) throw new Error('this server offers no OpenID Connect login');
  const res = await fetch(saved.token, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code: q.get('code'), redirect_uri: redirectURI(),
      client_id: cfg.oidc.client_id, code_verifier: saved.verifier }),
  });
  const body = await res.json().catch(() => ({}));
  if (!res.ok || !body.id_token) throw new Error(body.error_description || body.error || `token endpoint: ${res.status}`);
  if (claims(body.id_token).nonce !== saved.nonce) throw new Error('the ID token is not for this login (nonce)');
  auth.set(body.id_token, 'oidc');
  return true;
}

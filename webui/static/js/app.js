// The router: hash routes, so the server serves one page and the page's
// address says which view it shows (a link, a reload, Back all work).
import { auth } from './api.js';
import { notice } from './dom.js';
import { loginView, finishOIDC } from './login.js';
import { sessionsView } from './sessions.js';
import { approvalsView, refreshApprovalCount } from './approvals.js';
import { timelineView } from './timeline.js';
import { stepsView, requestView, replayView, traceView, usageView } from './proof.js';

const routes = [
  [/^#\/sessions$/, () => sessionsView()],
  [/^#\/approvals$/, () => approvalsView()],
  [/^#\/sessions\/([^/]+)$/, (m) => timelineView(m[1])],
  [/^#\/sessions\/([^/]+)\/steps$/, (m) => stepsView(m[1])],
  [/^#\/sessions\/([^/]+)\/steps\/(\d+)\/(\d+)$/, (m) => requestView(m[1], Number(m[2]), Number(m[3]))],
  [/^#\/sessions\/([^/]+)\/replay$/, (m) => replayView(m[1])],
  [/^#\/sessions\/([^/]+)\/trace$/, (m) => traceView(m[1])],
  [/^#\/sessions\/([^/]+)\/usage$/, (m) => usageView(m[1])],
];

// stop ends what the current view runs (streams, polls) before the next.
let stop = null;
let approvalTimer = null;
// generation tells a view that finished loading after the next route
// began that it is stale: its streams and polls are stopped at once.
let generation = 0;
// pending is a notice for the next view: routing clears the last view's,
// and a refusal that sends the person to log in must still say why.
let pending = '';

async function route() {
  const gen = ++generation;
  if (stop) { stop(); stop = null; }
  notice(pending);
  pending = '';
  const hash = location.hash || '#/sessions';
  const signedIn = Boolean(auth.token);
  document.getElementById('who').hidden = !signedIn;
  document.querySelector('nav[aria-label="Main"]').hidden = !signedIn;
  if (!signedIn || hash === '#/login') {
    await loginView();
    return;
  }
  const section = hash.split('/')[1] || 'sessions';
  for (const a of document.querySelectorAll('[data-nav]')) {
    if (a.dataset.nav === section) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  document.getElementById('who-name').textContent = auth.name();
  for (const [re, view] of routes) {
    const m = hash.match(re);
    if (m) {
      m[1] = m[1] && decodeURIComponent(m[1]);
      try {
        const stopView = await view(m);
        if (gen === generation) stop = stopView;
        else if (stopView) stopView();
      } catch (err) {
        notice(err.message);
      }
      return;
    }
  }
  location.replace('#/sessions');
}

function pollApprovals() {
  clearInterval(approvalTimer);
  if (!auth.token) return;
  refreshApprovalCount();
  approvalTimer = setInterval(refreshApprovalCount, 5000);
}

window.addEventListener('vigil:unauthorized', (e) => {
  auth.clear();
  clearInterval(approvalTimer);
  pending = 'Your credentials were refused (' + e.detail + '): log in again.';
  if (location.hash !== '#/login') location.hash = '#/login';
  else route();
});

window.addEventListener('vigil:login', () => {
  pollApprovals();
  // A changed hash routes by itself (hashchange); routing twice would
  // mount the view twice.
  if (location.hash === '#/sessions') route();
  else location.hash = '#/sessions';
});

document.getElementById('logout').addEventListener('click', () => {
  auth.clear();
  clearInterval(approvalTimer);
  location.hash = '#/login';
});

window.addEventListener('hashchange', route);

(async () => {
  try {
    // The hash is set before the first route: no hashchange is pending.
    if (await finishOIDC()) history.replaceState(null, '', location.pathname + '#/sessions');
  } catch (err) {
    notice('OpenID Connect login failed: ' + err.message);
  }
  pollApprovals();
  route();
})();

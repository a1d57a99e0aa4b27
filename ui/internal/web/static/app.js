// The router: the hash is the page (#/, #/k/{kind}/{ns}/{name},
// #/k/{kind}/{ns}/{name}/o/{id}, #/k/{kind}/{ns}/{name}/pod/{ns}/{pod}, #/drift, #/events, each with an optional
// ?query of filters). One page is mounted at a time; it gets the live
// stream's changes while it is.

import * as api from './api.js';
import { h, fill } from './dom.js';
import * as signin from './pages/signin.js';
import * as overview from './pages/overview.js';
import * as object from './pages/object.js';
import * as applied from './pages/applied.js';
import * as pod from './pages/pod.js';
import * as drift from './pages/drift.js';
import * as events from './pages/events.js';

const main = document.getElementById('main');
let current = null; // the mounted page: {onChange, destroy}
let unsubscribe = null;
let signedIn = false;

// parseHash splits "#/k/kustomization/apps/web/o/apps%2FDeployment%2Fapps%2Fweb?x=1"
// into decoded path segments and the query's parameters.
export function parseHash(hash) {
  const raw = (hash || '').replace(/^#/, '') || '/';
  const [path, q] = raw.split('?', 2);
  const parts = path.split('/').filter(Boolean).map((s) => {
    try { return decodeURIComponent(s); } catch { return s; }
  });
  return { parts, params: new URLSearchParams(q || '') };
}

function route() {
  const { parts, params } = parseHash(location.hash);
  if (parts.length === 0) return { page: overview, args: { params }, nav: 'overview' };
  if (parts[0] === 'drift') return { page: drift, args: { params }, nav: 'drift' };
  if (parts[0] === 'events') return { page: events, args: { params }, nav: 'events' };
  if (parts[0] === 'k' && parts.length >= 4) {
    const [kind, ns, name] = parts.slice(1, 4);
    const namespace = ns === '_' ? '' : ns;
    if (parts.length >= 6 && parts[4] === 'o') {
      return { page: applied, args: { kind, namespace, name, id: parts.slice(5).join('/'), params }, nav: 'overview' };
    }
    if (parts.length === 7 && parts[4] === 'pod') {
      return { page: pod, args: { kind, namespace, name, podNamespace: parts[5], pod: parts[6] }, nav: 'overview' };
    }
    return { page: object, args: { kind, namespace, name, params }, nav: 'overview' };
  }
  return null;
}

function unmount() {
  if (current && current.destroy) current.destroy();
  current = null;
}

function show() {
  if (!signedIn) return;
  unmount();
  const r = route();
  for (const a of document.querySelectorAll('[data-nav]')) {
    if (r && a.dataset.nav === r.nav) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  if (!r) {
    fill(main, h('h1', { tabindex: '-1' }, 'Not found'), h('p', {}, h('a', { href: '#/' }, 'Back to the overview')));
    return;
  }
  fill(main);
  current = r.page.mount(main, r.args) || null;
  const title = main.querySelector('h1');
  if (title && document.activeElement !== title && !main.contains(document.activeElement)) title.focus({ preventScroll: true });
}

function showSignIn(message) {
  signedIn = false;
  unmount();
  api.stopLive();
  if (unsubscribe) { unsubscribe(); unsubscribe = null; }
  document.getElementById('user').textContent = '';
  document.getElementById('signout').hidden = true;
  current = signin.mount(main, { message, done: start });
}

function start(session) {
  signedIn = true;
  document.getElementById('user').textContent = session.user || '';
  document.getElementById('signout').hidden = session.mode === 'kubeconfig';
  api.startLive();
  if (!unsubscribe) unsubscribe = api.subscribe((ev) => { if (current && current.onChange) current.onChange(ev); });
  show();
}

// loginSecret finds kubeconfig mode's one-time secret in the query or the
// hash's query, and removes it from the address so it is not bookmarked.
function loginSecret() {
  const search = new URLSearchParams(location.search);
  const { params } = parseHash(location.hash);
  const secret = search.get('login') || params.get('login');
  if (!secret) return '';
  params.delete('login');
  const path = (location.hash.replace(/^#/, '').split('?')[0]) || '/';
  const rest = params.toString();
  history.replaceState(null, '', location.pathname + '#' + path + (rest ? '?' + rest : ''));
  return secret;
}

async function boot() {
  api.onUnauthorized(() => showSignIn('Your session ended; sign in again.'));
  document.getElementById('signout').addEventListener('click', async () => {
    try { await api.logout(); } catch { /* the session is gone either way */ }
    showSignIn('Signed out.');
  });
  window.addEventListener('hashchange', show);
  const secret = loginSecret();
  try {
    if (secret) {
      start(await api.login({ secret }));
      return;
    }
    start(await api.session());
  } catch (err) {
    showSignIn(secret ? 'The sign-in link did not work: ' + err.message : '');
  }
}

boot();

// The only module that talks to the server: JSON over fetch with the session
// cookie, the X-Plumb-CSRF header on every POST, and one EventSource on
// /api/live shared by every page (docs/design/ui.md, "HTTP API" and "Live").

let csrf = '';
let unauthorized = () => {};

// APIError is a failed request: status is the HTTP status (403 stays 403).
export class APIError extends Error {
  constructor(status, message) {
    super(message || `HTTP ${status}`);
    this.status = status;
  }
}

// onUnauthorized sets what happens when a request finds no session (the sign-in page).
export function onUnauthorized(fn) { unauthorized = fn; }

// query builds "?a=1&b=2" from the set values of params.
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  }
  const s = q.toString();
  return s ? '?' + s : '';
}

async function call(method, path, body, signal) {
  const headers = { Accept: 'application/json' };
  const init = { method, headers, credentials: 'same-origin', signal };
  if (method !== 'GET') {
    headers['Content-Type'] = 'application/json';
    headers['X-Plumb-CSRF'] = csrf;
    init.body = JSON.stringify(body || {});
  }
  const res = await fetch(path, init);
  let data = null;
  const text = await res.text();
  if (text) {
    try { data = JSON.parse(text); } catch { data = { error: text.slice(0, 300) }; }
  }
  if (!res.ok) {
    const err = new APIError(res.status, (data && data.error) || res.statusText);
    if (res.status === 401 && path !== '/api/login' && path !== '/api/session') unauthorized();
    throw err;
  }
  return data;
}

// get fetches path with params as its query.
export function get(path, params, signal) { return call('GET', path + query(params), null, signal); }

// post sends body as JSON with the CSRF header.
export function post(path, body) { return call('POST', path, body); }

// session returns {user, groups, mode, csrf} and remembers the CSRF token, or throws 401.
export async function session() {
  const s = await call('GET', '/api/session');
  csrf = s.csrf || '';
  return s;
}

// login trades a token ({token}) or the kubeconfig mode's one-time secret ({secret}) for a session.
export async function login(body) {
  await call('POST', '/api/login', body);
  return session();
}

export async function logout() {
  try { await call('POST', '/api/logout', {}); } finally { csrf = ''; }
}

// objectPath is /api/objects/{kind}/{ns}/{name} plus an optional suffix.
export function objectPath(kind, ns, name, suffix) {
  return '/api/objects/' + [kind.toLowerCase(), ns || '_', name].map(encodeURIComponent).join('/') + (suffix || '');
}

// The live stream: one EventSource for the whole app; pages subscribe and
// unsubscribe as they come and go. EventSource reconnects by itself.
const listeners = new Set();
let source = null;

export function startLive() {
  if (source) return;
  source = new EventSource('/api/live', { withCredentials: true });
  source.addEventListener('change', (m) => {
    let ev;
    try { ev = JSON.parse(m.data); } catch { return; }
    for (const fn of listeners) fn(ev);
  });
  source.addEventListener('open', () => document.body.classList.remove('offline'));
  source.addEventListener('error', () => document.body.classList.add('offline'));
}

export function stopLive() {
  if (source) source.close();
  source = null;
}

// subscribe calls fn with each change {kind, namespace, name, reason}; it returns the unsubscribe.
export function subscribe(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

// sameObject says whether a change is about the object kind/ns/name (kinds compared case-insensitively).
export function sameObject(ev, kind, ns, name) {
  return ev && String(ev.kind).toLowerCase() === String(kind).toLowerCase() &&
    (ev.namespace || '') === (ns || '') && ev.name === name;
}

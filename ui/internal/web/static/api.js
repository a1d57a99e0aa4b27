// The only module that talks to the server: JSON over fetch with the session
// cookie and the X-Plumb-CSRF header on every request, and one EventSource on
// /api/live shared by every page, which carries the value as ?csrf= (an
// EventSource sets no headers) (docs/design/ui.md, "HTTP API" and "Live").
//
// The cookie alone reads nothing: the browser sends it to every server on
// the host, whatever the port. The CSRF value comes with the sign-in's
// answer and is kept in this origin's localStorage, which no other origin
// (another port) can read, so a reload or another tab goes on with it.

const csrfKey = 'plumb.csrf';
let csrf = stored();
let unauthorized = () => {};

function stored() {
  try { return localStorage.getItem(csrfKey) || ''; } catch { return ''; }
}

function keep(value) {
  csrf = value || '';
  try {
    if (csrf) localStorage.setItem(csrfKey, csrf); else localStorage.removeItem(csrfKey);
  } catch { /* storage refused: this page still has it */ }
}

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
  // Another tab may have signed in since: the stored value is the cookie's.
  const token = stored() || csrf;
  if (token) headers['X-Plumb-CSRF'] = token;
  if (method !== 'GET') {
    headers['Content-Type'] = 'application/json';
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

// stream GETs path with params as its query and calls onText with each
// piece of the answer's text as it arrives (a log that is followed); it
// resolves when the answer ends, and signal aborts it. A failed request
// throws an APIError, as get does.
export async function stream(path, params, onText, signal) {
  const headers = { Accept: 'text/plain' };
  const token = stored() || csrf;
  if (token) headers['X-Plumb-CSRF'] = token;
  const res = await fetch(path + query(params), { headers, credentials: 'same-origin', signal });
  if (!res.ok) {
    let message = res.statusText;
    try { message = (JSON.parse(await res.text()).error) || message; } catch { /* not JSON */ }
    if (res.status === 401) unauthorized();
    throw new APIError(res.status, message);
  }
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    onText(decoder.decode(value, { stream: true }));
  }
}

// get fetches path with params as its query.
export function get(path, params, signal) { return call('GET', path + query(params), null, signal); }

// post sends body as JSON with the CSRF header.
export function post(path, body) { return call('POST', path, body); }

// session returns {user, groups, mode, csrf}, or throws (401 without a
// session, 403 without the CSRF value this origin kept).
export async function session() {
  const s = await call('GET', '/api/session');
  if (s && s.csrf) keep(s.csrf);
  return s;
}

// login trades a token ({token}) or the kubeconfig mode's one-time secret
// ({secret}) for a session, and keeps the CSRF value its answer carries.
export async function login(body) {
  const s = await call('POST', '/api/login', body);
  keep(s && s.csrf);
  return session();
}

export async function logout() {
  try { await call('POST', '/api/logout', {}); } finally { keep(''); }
}

// objectPath is /api/objects/{kind}/{ns}/{name} plus an optional suffix.
export function objectPath(kind, ns, name, suffix) {
  return '/api/objects/' + [kind.toLowerCase(), ns || '_', name].map(encodeURIComponent).join('/') + (suffix || '');
}

// The live stream: one EventSource for the whole app; pages subscribe and
// unsubscribe as they come and go. EventSource reconnects by itself after a
// network error, but gives up on an HTTP error (a restarted server, an
// ended session); then a new one is made after a growing pause. Changes
// missed while the stream was down are unknown, so after a reconnect the
// listeners get {resync: true} and refetch what they show.
const listeners = new Set();
let source = null;
let retry = 0;
let retryTimer = 0;
let dropped = false;

function emit(ev) {
  for (const fn of listeners) fn(ev);
}

export function startLive() {
  if (source) return;
  source = new EventSource('/api/live' + query({ csrf: stored() || csrf }), { withCredentials: true });
  source.addEventListener('change', (m) => {
    let ev;
    try { ev = JSON.parse(m.data); } catch { return; }
    if (ev && typeof ev === 'object') emit(ev);
  });
  source.addEventListener('open', () => {
    document.body.classList.remove('offline');
    retry = 0;
    if (dropped) { dropped = false; emit({ resync: true }); }
  });
  source.addEventListener('error', () => {
    document.body.classList.add('offline');
    dropped = true;
    if (source && source.readyState === EventSource.CLOSED) {
      source = null;
      retry = Math.min(retry ? retry * 2 : 1000, 30000);
      retryTimer = setTimeout(startLive, retry);
    }
  });
}

export function stopLive() {
  clearTimeout(retryTimer);
  if (source) source.close();
  source = null;
  dropped = false;
}

// subscribe calls fn with each change {kind, namespace, name, reason} (or
// {resync: true} after the stream was down); it returns the unsubscribe.
export function subscribe(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

// sameObject says whether a change is about the object kind/ns/name (kinds compared case-insensitively).
export function sameObject(ev, kind, ns, name) {
  return ev && String(ev.kind).toLowerCase() === String(kind).toLowerCase() &&
    (ev.namespace || '') === (ns || '') && ev.name === name;
}

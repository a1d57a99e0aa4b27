// DOM helpers. Everything the server sends is data, so it only ever reaches
// the page as a text node or an attribute value: h() has no way to set
// markup, and nothing else in the app does (handler_test.go checks).

// h(tag, attrs, ...children) builds an element. attrs: "class", "on<event>"
// (a listener), booleans (present when true) and strings (setAttribute);
// children: nodes, strings (text nodes), arrays, null/undefined/false (skipped).
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

// fill replaces el's children.
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// announce tells screen readers the result of an action (the polite live region).
export function announce(text) {
  const r = document.getElementById('announce');
  if (!r) return;
  r.textContent = '';
  // A new text node after a tick, so repeating the same words is announced again.
  setTimeout(() => { r.textContent = text; }, 50);
}

// debounce calls fn once, ms after the last call.
export function debounce(fn, ms) {
  let t;
  return (...args) => { clearTimeout(t); t = setTimeout(() => fn(...args), ms); };
}

// ago renders an RFC 3339 time as "3m ago" in a <time> with the exact time as its title.
export function ago(iso) {
  if (!iso) return h('span', { class: 'muted' }, '—');
  const d = new Date(iso);
  if (isNaN(d)) return h('span', {}, String(iso));
  const s = Math.max(0, Math.round((Date.now() - d.getTime()) / 1000));
  const text = s < 60 ? `${s}s ago` : s < 3600 ? `${Math.floor(s / 60)}m ago`
    : s < 86400 ? `${Math.floor(s / 3600)}h ago` : `${Math.floor(s / 86400)}d ago`;
  return h('time', { datetime: d.toISOString(), title: d.toISOString() }, text);
}

// clock renders an RFC 3339 time as local date and time.
export function clock(iso) {
  if (!iso) return h('span', { class: 'muted' }, '—');
  const d = new Date(iso);
  if (isNaN(d)) return h('span', {}, String(iso));
  return h('time', { datetime: d.toISOString(), title: d.toISOString() }, d.toLocaleString());
}

// badge is a status word with its colour class: the word carries the meaning,
// the colour only helps the eye.
export function badge(word, kind) {
  const w = word || 'Unknown';
  return h('span', { class: `badge s-${kind || w}` }, w);
}

// readyWord turns an overview row's Ready condition into one word.
export function readyWord(row) {
  if (row.suspended) return 'Suspended';
  if (row.ready === 'True') return 'Ready';
  if (row.ready === 'False') return 'NotReady';
  return 'Progressing';
}

// shortRev shortens "main@sha1:0123456789abcdef…" to "main@0123456".
export function shortRev(rev) {
  if (!rev) return '';
  const m = /^(.*?)@?(sha1|sha256):([0-9a-f]+)$/.exec(rev);
  if (!m) return rev;
  return (m[1] ? m[1] + '@' : '') + m[3].slice(0, 7);
}

const kindNames = { gitrepository: 'GitRepository', kustomization: 'Kustomization', helmrelease: 'HelmRelease', helmrepository: 'HelmRepository', helmchart: 'HelmChart', ocirepository: 'OCIRepository',
  imagerepository: 'ImageRepository', imagepolicy: 'ImagePolicy', imageupdateautomation: 'ImageUpdateAutomation', objectset: 'ObjectSet' };

// kindName turns a route's lower-case kind back into the Kind.
export function kindName(kind) {
  return kindNames[String(kind).toLowerCase()] || kind;
}

// objectHref is the route of one GitRepository, Kustomization or HelmRelease.
export function objectHref(kind, ns, name) {
  return '#/k/' + [kind.toLowerCase(), ns || '_', name].map(encodeURIComponent).join('/');
}

// appliedHref is the route of one applied object of a Kustomization or HelmRelease.
export function appliedHref(kind, ns, name, id) {
  return objectHref(kind, ns, name) + '/o/' + encodeURIComponent(id);
}

// podHref is the route of the log view of a Pod in a Kustomization's or HelmRelease's tree.
export function podHref(kind, ns, name, podNamespace, pod) {
  return objectHref(kind, ns, name) + '/pod/' + encodeURIComponent(podNamespace) + '/' + encodeURIComponent(pod);
}

// pageHeader is the h1 every page starts with (focused on navigation).
export function pageHeader(title, ...rest) {
  return h('div', { class: 'page-head' }, h('h1', { tabindex: '-1' }, title), ...rest);
}

// errorBox shows a failed request in place of what it was for.
export function errorBox(err) {
  return h('p', { class: 'error', role: 'alert' }, err.status === 403 ? 'Not allowed: ' + err.message : String(err.message || err));
}

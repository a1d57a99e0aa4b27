// The overview: every object of Plumb's kinds the user may list (an
// ImagePolicy's revision is its latest image), one fixed-height row each, fetched from the server a page at a
// time as the virtual list scrolls to it (GET /api/overview?offset=&limit=).

import * as api from '../api.js';
import { h, fill, ago, badge, readyWord, shortRev, objectHref, pageHeader, errorBox, debounce } from '../dom.js';
import { VirtualList } from '../vlist.js';

const pageSize = 200;
const kinds = ['GitRepository', 'Kustomization', 'HelmRelease', 'ObjectSet', 'ImagePolicy', 'ImageRepository', 'ImageUpdateAutomation'];
const statuses = ['Ready', 'NotReady', 'Progressing', 'Suspended'];

export function mount(main, { params }) {
  const filter = {
    kind: params.get('kind') || '', namespace: params.get('namespace') || '',
    status: params.get('status') || '', q: params.get('q') || '',
  };
  let pages = new Map(); // offset → items
  let inflight = new Set();
  let generation = 0;
  let total = 0;
  const dirty = new Set();

  const kindSel = select('f-kind', 'Kind', [['', 'All kinds'], ...kinds.map((k) => [k, k])], filter.kind);
  // The namespace in the address is an option before the list of namespaces arrives.
  const nsSel = select('f-namespace', 'Namespace', [['', 'All namespaces'], ...(filter.namespace ? [[filter.namespace, filter.namespace]] : [])], filter.namespace);
  const statusSel = select('f-status', 'Status', [['', 'Any status'], ...statuses.map((s) => [s, s])], filter.status);
  const text = h('input', { id: 'f-q', type: 'search', value: filter.q, placeholder: 'name, namespace, revision…', autocomplete: 'off' });
  const counts = h('div', { class: 'counts', role: 'group', 'aria-label': 'Counts by status' });
  const summary = h('p', { class: 'summary', 'aria-live': 'polite' }, '');
  const problem = h('div', { class: 'problem' });
  const empty = h('p', { class: 'empty muted', hidden: true }, 'Nothing matches the filters.');

  const list = new VirtualList({
    rowHeight: 36,
    label: 'GitRepositories, Kustomizations and HelmReleases',
    render: renderRow,
    onActivate: (row) => { location.hash = objectHref(row.kind, row.namespace, row.name); },
    onRange: (first, last) => {
      for (let o = Math.floor(first / pageSize) * pageSize; o <= last; o += pageSize) fetchPage(o);
    },
  });
  list.el.classList.add('overview-list');

  fill(main,
    pageHeader('Overview', summary),
    h('form', { class: 'filters', role: 'search', onsubmit: (e) => e.preventDefault() },
      field('f-kind', 'Kind', kindSel), field('f-namespace', 'Namespace', nsSel),
      field('f-status', 'Status', statusSel), field('f-q', 'Search', text)),
    counts, problem, empty,
    h('div', { class: 'row-head overview-cols', 'aria-hidden': 'true' },
      h('span', {}, 'Ready'), h('span', {}, 'Kind'), h('span', {}, 'Namespace / name'), h('span', {}, 'Revision'),
      h('span', {}, 'Health'), h('span', {}, 'Drift'), h('span', {}, 'Last sync')),
    list.el);

  const changed = () => {
    filter.kind = kindSel.value; filter.namespace = nsSel.value; filter.status = statusSel.value; filter.q = text.value.trim();
    const q = api.query(filter);
    history.replaceState(null, '', location.pathname + '#/' + q);
    reload();
  };
  kindSel.addEventListener('change', changed);
  nsSel.addEventListener('change', changed);
  statusSel.addEventListener('change', changed);
  text.addEventListener('input', debounce(changed, 250));

  api.get('/api/namespaces').then((r) => {
    const names = Array.isArray(r) ? r : (r && (r.namespaces || r.items)) || [];
    for (const n of names) {
      const name = typeof n === 'string' ? n : n.name;
      if (name === filter.namespace) continue;
      nsSel.appendChild(h('option', { value: name, selected: name === filter.namespace }, name));
    }
  }).catch(() => { /* the filter still takes a namespace from the address */ });

  function reload() {
    generation++;
    pages = new Map();
    inflight = new Set();
    list.el.scrollTop = 0;
    fetchPage(0, true);
  }

  async function fetchPage(offset, force) {
    if (!force && (pages.has(offset) || inflight.has(offset))) return;
    inflight.add(offset);
    const gen = generation;
    try {
      const r = await api.get('/api/overview', { ...filter, offset, limit: pageSize });
      if (gen !== generation) return;
      fill(problem);
      pages.set(offset, r.items || []);
      setTotals(r);
    } catch (err) {
      if (gen === generation) fill(problem, errorBox(err));
    } finally {
      if (gen === generation) inflight.delete(offset);
    }
  }

  function setTotals(r) {
    const first = total === 0 && (r.total || 0) > 0;
    total = r.total || 0;
    list.setData(total, (i) => {
      const p = pages.get(Math.floor(i / pageSize) * pageSize);
      return p ? p[i % pageSize] : undefined;
    });
    if (first) list.active = 0;
    empty.hidden = total !== 0;
    list.el.hidden = total === 0;
    summary.textContent = `${total} ${total === 1 ? 'object' : 'objects'}` + (filter.status || filter.kind || filter.namespace || filter.q ? ' match the filters' : '');
    renderCounts(r.counts || {});
  }

  function renderCounts(c) {
    const all = h('button', { type: 'button', class: 'count', 'aria-pressed': String(filter.status === '') }, 'All');
    all.addEventListener('click', () => { statusSel.value = ''; changed(); });
    fill(counts, all, statuses.map((s) => {
      const b = h('button', { type: 'button', class: `count s-${s}`, 'aria-pressed': String(filter.status === s), 'data-status': s },
        h('span', { class: 'count-n' }, String(c[s] || 0)), ' ', s);
      b.addEventListener('click', () => { statusSel.value = filter.status === s ? '' : s; changed(); });
      return b;
    }));
  }

  function renderRow(el, row) {
    el.classList.add('overview-cols');
    el.setAttribute('aria-label', `${row.kind} ${row.namespace}/${row.name}: ${readyWord(row)}`);
    const hl = row.health || {};
    const parts = [['healthy', 'Healthy'], ['progressing', 'Progressing'], ['degraded', 'Degraded'], ['unknown', 'Unknown']]
      .filter(([k]) => hl[k] > 0).map(([k, w]) => h('span', { class: `hcount s-${w}` }, `${hl[k]} ${k}`));
    fill(el,
      h('span', {}, badge(readyWord(row))),
      h('span', { class: 'kind', title: row.kind }, row.kind),
      h('span', { class: 'name', title: row.message || '' },
        h('a', { href: objectHref(row.kind, row.namespace, row.name), tabindex: '-1' }, h('span', { class: 'ns' }, row.namespace + '/'), row.name)),
      h('span', { class: 'rev', title: row.revision || '' }, shortRev(row.revision) || '—'),
      h('span', { class: 'health' }, parts.length ? parts : h('span', { class: 'muted' }, '—')),
      h('span', {}, driftBadge(row.drift)),
      h('span', {}, ago(row.lastSync)));
  }

  // Live: refetch only the loaded pages that show the changed object (or the
  // first page, for the totals, when it is not loaded: it may be new).
  const refetch = debounce(() => {
    for (const o of dirty) fetchPage(o, true);
    dirty.clear();
  }, 200);

  reload();
  return {
    onChange(ev) {
      if (ev.resync) {
        for (const o of pages.keys()) dirty.add(o);
        refetch();
        return;
      }
      if (!kinds.some((k) => k.toLowerCase() === String(ev.kind).toLowerCase())) return;
      let found = false;
      for (const [o, items] of pages) {
        if (items.some((r) => api.sameObject(ev, r.kind, r.namespace, r.name))) { dirty.add(o); found = true; }
      }
      if (!found) dirty.add(0);
      refetch();
    },
    destroy() { generation++; list.destroy(); },
  };
}

export function driftBadge(d) {
  const state = (d && d.state) || 'none';
  const words = { none: 'In sync', drifted: 'Drifted', corrected: 'Corrected', contested: 'Contested' };
  const word = (words[state] || state) + (d && d.count && state !== 'none' ? ` (${d.count})` : '');
  return h('span', { class: `badge d-${state}`, title: d && d.lastDetected ? 'last detected ' + d.lastDetected : '' }, word);
}

function select(id, _label, options, value) {
  return h('select', { id }, options.map(([v, t]) => h('option', { value: v, selected: v === value }, t)));
}

function field(id, label, control) {
  return h('div', { class: 'field' }, h('label', { for: id }, label), control);
}

// One object of the overview (GET /api/objects/{kind}/{ns}/{name}): its
// source and revision, conditions, sync phase and wave, the tree of its
// objects, the last sync's hooks, its actions and its applied revisions
// with the diff between any two and a Rollback button on each earlier one
// (POST …/rollback, the user's own RBAC); for image-controller's kinds
// what image.js adds; for an ObjectSet its generators and elements (set.js).

import * as api from '../api.js';
import { h, fill, announce, ago, clock, badge, readyWord, shortRev, objectHref, appliedHref, podHref, kindName, pageHeader, errorBox, debounce } from '../dom.js';
import { actionBar } from './actions.js';
import { objectTree } from './tree.js';
import { changesTable } from './applied.js';
import { imageSection } from './image.js';
import { sourceSection } from './source.js';
import { setSection } from './set.js';

export function mount(main, { kind, namespace, name }) {
  const applies = ['kustomization', 'helmrelease'].includes(kind.toLowerCase());
  const status = h('span', { class: 'head-status' });
  const problem = h('div', { class: 'problem' });
  const outOfSync = h('div', { id: 'out-of-sync', 'aria-live': 'polite' });
  const facts = h('dl', { class: 'facts' }, h('dt', {}, 'Loading…'));
  const conditions = h('div', { class: 'section-body' });
  const hooks = h('div', { class: 'section-body' });
  const revisions = h('div', { class: 'section-body' });
  const treeCount = h('span', { class: 'muted' });
  let source = null;
  let alive = true;

  const actions = actionBar(kind, namespace, name, () => refetch());
  const picker = syncPicker(kind, namespace, name, () => refetch());
  // A Pod opens its logs; anything else its live object against Git.
  const tree = applies ? objectTree((node) => {
    location.hash = node.kind === 'Pod' && !node.group ? podHref(kind, namespace, name, node.namespace, node.name) : appliedHref(kind, namespace, name, node.id);
  }) : null;
  const q = api.query({ kind: kind.toLowerCase(), namespace, name });
  const image = imageSection(kind, namespace, name);
  const src = sourceSection(kind);
  const set = setSection(kind);

  fill(main,
    h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('a', { href: '#/' }, 'Overview'), ' / ', `${kindName(kind)} ${namespace}/${name}`),
    pageHeader(name, status),
    actions.el,
    problem,
    outOfSync,
    h('div', { class: 'cols' },
      h('section', { 'aria-labelledby': 's-facts' }, h('h2', { id: 's-facts' }, 'Source and sync'), facts,
        h('p', { class: 'links' }, h('a', { href: '#/drift' + q }, 'Drift timeline of this object'), ' · ', h('a', { href: '#/events' + q }, 'Its events'))),
      h('section', { 'aria-labelledby': 's-conditions' }, h('h2', { id: 's-conditions' }, 'Conditions'), conditions)),
    image && image.el,
    src && src.el,
    set && set.el,
    tree && h('section', { 'aria-labelledby': 's-tree' }, h('h2', { id: 's-tree' }, 'Objects ', treeCount), tree.el),
    applies && h('section', { 'aria-labelledby': 's-hooks' }, h('h2', { id: 's-hooks' }, 'Hooks of the last sync'), hooks),
    applies && h('section', { 'aria-labelledby': 's-revisions' }, h('h2', { id: 's-revisions' }, 'Applied revisions'), revisions));

  async function load() {
    try {
      const r = await api.get(api.objectPath(kind, namespace, name));
      if (!alive) return;
      fill(problem);
      show(r);
    } catch (err) {
      if (alive) fill(problem, errorBox(err));
    }
  }
  const refetch = debounce(load, 200);

  function show(r) {
    const o = r.object || {};
    const st = o.status || {};
    const suspended = r.suspended ?? (o.spec && o.spec.suspend) ?? false;
    const ready = r.ready ?? readyOf(r.conditions || st.conditions);
    fill(status, badge(readyWord({ ready, suspended })), r.reason ? h('span', { class: 'muted' }, ' ' + r.reason) : null);
    // A rollback holds an earlier render (plumb.dev/rollback): said at the
    // top, and Resume ends it.
    const rolledBack = (r.conditions || st.conditions || []).find((c) => c.type === 'RolledBack' && c.status === 'True');
    actions.update(suspended, r.syncPolicy === 'Manual', !!rolledBack);
    const manual = r.syncPolicy === 'Manual';
    if (manual && r.outOfSync) picker.keep(r.outOfSync);
    fill(outOfSync, r.outOfSync ? outOfSyncBox(r.outOfSync, manual ? picker : null) : null, manual && !r.outOfSync ? picker.result : null);
    if (manual) picker.show(r);
    source = r.source || null;
    const sync = r.sync || {};
    const rev = r.revision || st.lastAppliedRevision || (st.artifact && st.artifact.revision) || '';
    fill(facts,
      fact('Kind', r.kind || kindName(kind)),
      source && fact('Source', h('a', { href: objectHref(source.kind, source.namespace, source.name) }, `${source.kind} ${source.namespace}/${source.name}`),
        source.revision ? h('span', { class: 'muted' }, ' at ' + shortRev(source.revision)) : null),
      fact('Revision', h('span', { title: rev }, shortRev(rev) || '—')),
      applies && fact('Sync phase', sync.phase || '—'),
      applies && fact('Wave', sync.wave === undefined || sync.wave === null ? '—' : String(sync.wave)),
      fact('Last sync', ago(r.lastSync || sync.finishedAt)),
      rolledBack && fact('Rolled back', h('span', { id: 'rolled-back' }, rolledBack.message || '')),
      r.message && fact('Message', r.message));
    const conds = r.conditions || st.conditions || [];
    fill(conditions, conds.length ? h('table', { class: 'table' },
      h('thead', {}, h('tr', {}, ['Type', 'Status', 'Reason', 'Message', 'Since'].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, conds.map((c) => h('tr', {},
        h('td', {}, c.type), h('td', {}, badge(c.status, c.status === 'True' ? 'Ready' : c.status === 'False' ? 'NotReady' : 'Unknown')),
        h('td', {}, c.reason || ''), h('td', { class: 'msg' }, c.message || ''), h('td', {}, ago(c.lastTransitionTime))))))
      : h('p', { class: 'muted' }, 'No conditions yet.'));
    if (image) image.show(r);
    if (src) src.show(r);
    if (set) set.show(r);
    if (tree) {
      tree.setNodes(r.tree || []);
      treeCount.textContent = `(${countNodes(r.tree || [])})`;
    }
    if (applies) {
      const hk = r.hooks || [];
      fill(hooks, hk.length ? h('table', { class: 'table' },
        h('thead', {}, h('tr', {}, ['Hook', 'Object', 'Phase', 'Outcome', 'Message'].map((t) => h('th', { scope: 'col' }, t)))),
        h('tbody', {}, hk.map((x) => h('tr', {},
          h('td', {}, x.hook || ''), h('td', {}, `${x.kind} ${x.namespace ? x.namespace + '/' : ''}${x.name}`),
          h('td', {}, x.phase || ''), h('td', {}, badge(x.outcome || x.health || 'Unknown')), h('td', { class: 'msg' }, x.reason || x.message || '')))))
        : h('p', { class: 'muted' }, 'The last sync ran no hooks.'));
    }
  }

  // Revisions: pick two, see the diff between them.
  async function loadRevisions() {
    try {
      const r = await api.get(api.objectPath(kind, namespace, name, '/revisions'));
      if (!alive) return;
      const revs = (r && (r.revisions || r.items)) || [];
      if (!revs.length) { fill(revisions, h('p', { class: 'muted' }, 'No applied revisions recorded.')); return; }
      // An entry is named by its id (a release's version, a Kustomization
      // render's digest): one source revision can have several renders (a
      // spec change renders it anew), so its revision alone is ambiguous.
      // A stand-in without ids is named by its revision.
      const keyOf = (v) => v.id || v.revision;
      const shared = (v) => v.revision && revs.filter((x) => x.revision === v.revision).length > 1;
      const nameOf = (v) => (shortRev(v.revision) || shortRev(v.id)) + (shared(v) && v.digest ? ` (render ${shortRev(v.digest)})` : '');
      const picked = [];
      const compare = h('button', { type: 'button', id: 'compare', disabled: true }, 'Compare the two picked');
      const out = h('div', { class: 'rev-diff', 'aria-live': 'polite' });
      const rollbackResult = h('p', { class: 'action-result', id: 'rollback-result', 'aria-live': 'polite' });
      // Each earlier render can be synced again and held (plumb rollback);
      // the first entry is the one applied now.
      const rollbackButton = (v, i) => {
        if (i === 0 || !v.digest) return null;
        const b = h('button', { type: 'button', id: 'rollback-' + i, class: 'rollback' }, 'Roll back');
        b.addEventListener('click', async () => {
          b.disabled = true;
          rollbackResult.className = 'action-result busy';
          rollbackResult.textContent = 'Rolling back…';
          try {
            await api.post(api.objectPath(kind, namespace, name, '/rollback'), { digest: v.digest });
            rollbackResult.className = 'action-result ok';
            rollbackResult.textContent = `Rolled back to ${shortRev(v.revision) || shortRev(v.digest)}: held until resumed`;
            refetch();
          } catch (err) {
            rollbackResult.className = 'action-result failed';
            rollbackResult.textContent = err.status === 403 ? 'Roll back: not allowed' : `Roll back failed: ${err.message}`;
          } finally {
            b.disabled = false;
          }
        });
        return b;
      };
      const boxes = revs.map((v, i) => {
        const id = 'rev-' + i;
        const box = h('input', { type: 'checkbox', id, value: keyOf(v) });
        box.addEventListener('change', () => {
          if (box.checked) picked.push(box); else picked.splice(picked.indexOf(box), 1);
          while (picked.length > 2) { const old = picked.shift(); old.checked = false; }
          compare.disabled = picked.length !== 2;
        });
        return h('li', {}, box, ' ', h('label', { for: id }, h('code', { title: v.revision || v.id || '' }, nameOf(v)),
          v.version ? ` v${v.version}` : '', ' ',
          // A failed release, or the reason a sync failed (HealthCheckFailed…), reads as a failure.
          v.status ? badge(v.status, /failed$/i.test(v.status) ? 'Failed' : undefined) : null,
          v.syncs > 1 ? h('span', { class: 'muted', title: `synced ${v.syncs} times` }, ` ×${v.syncs}`) : null,
          ' ', clock(v.time || v.appliedAt)), ' ', rollbackButton(v, i));
      });
      compare.addEventListener('click', async () => {
        // Older first: the list is newest first, so the later-listed pick is "from".
        const [a, b] = picked.map((p) => revs.find((v) => keyOf(v) === p.value));
        const [older, newer] = revs.indexOf(a) > revs.indexOf(b) ? [a, b] : [b, a];
        const from = keyOf(older), to = keyOf(newer);
        fill(out, h('p', { class: 'muted' }, 'Comparing…'));
        try {
          const d = await api.get(api.objectPath(kind, namespace, name, '/revisions'), { from, to });
          const diff = d && d.diff;
          const unavailable = d && d.diffUnavailable;
          fill(out, h('h3', {}, `${nameOf(older)} → ${nameOf(newer)}`),
            typeof diff === 'string' ? h('pre', { class: 'yaml' }, diff)
              : diff && diff.length ? changesTable(diff, { object: true, revisions: true })
                : unavailable ? h('p', { class: 'diff-unavailable' }, unavailable.reason || 'These revisions cannot be compared.',
                  unavailable.gone && unavailable.gone.length ? ` No longer served: ${[].concat(unavailable.gone).join(', ')}.` : '')
                  : h('p', {}, 'No differences.'));
        } catch (err) { fill(out, errorBox(err)); }
      });
      fill(revisions, h('ul', { class: 'revisions' }, boxes), compare, rollbackResult, out);
    } catch (err) {
      if (alive) fill(revisions, errorBox(err));
    }
  }

  load();
  if (applies) loadRevisions();
  return {
    onChange(ev) {
      if (ev.resync || api.sameObject(ev, kind, namespace, name) || (source && api.sameObject(ev, source.kind, source.namespace, source.name))) {
        refetch();
        if (image) image.refetch();
      }
    },
    destroy() { alive = false; if (tree) tree.destroy(); if (image) image.destroy(); },
  };
}

// outOfSyncBox shows what a manual sync of the waiting render would do
// (status.outOfSync: at most 20 names a list, with the whole counts). With
// picker, each object to create or change gets a box to tick for a
// selective sync (objects to prune do not: a selective sync never prunes).
function outOfSyncBox(o, picker) {
  const item = (x, pickable) => pickable && picker ? picker.box(x) : h('code', {}, x);
  const list = (verb, n, names, pickable) => n ? h('li', {}, `${n} to ${verb}: `,
    ...(names || []).flatMap((x, i) => [i ? ', ' : '', item(x, pickable)]),
    n > (names || []).length ? ` and ${n - names.length} more` : '') : null;
  return h('section', { class: 'out-of-sync', 'aria-labelledby': 's-out-of-sync' },
    h('h2', { id: 's-out-of-sync' }, 'Out of sync'),
    h('p', {}, 'Revision ', h('code', { title: o.revision || '' }, shortRev(o.revision || '')), ' waits for a manual sync.'),
    h('ul', {}, list('create', o.creates, o.create, true), list('change', o.changes, o.change, true), list('prune', o.prunes, o.prune, false)),
    picker ? picker.el : null);
}

// syncPicker is the selective sync of a Manual Kustomization or
// HelmRelease: the ticked objects (Kind/namespace/name, as status.outOfSync
// names them) are shown, "Sync selected" sends them as the Sync button's
// only (plumb.dev/sync-only, as `plumb sync --only` sets it), and once
// the controller handled the request the result says what happened. The
// ticks survive the page's refetches.
function syncPicker(kind, ns, name, done) {
  const chosen = new Set();
  const preview = h('p', { id: 'sync-preview', class: 'muted' });
  const button = h('button', { type: 'button', id: 'act-sync-selected' }, 'Sync selected');
  const result = h('p', { id: 'sync-selected-result', class: 'action-result', 'aria-live': 'polite' });
  let pending = null; // {token, only}: a selective sync asked for, not yet handled

  function update() {
    const only = [...chosen];
    button.disabled = only.length === 0;
    preview.textContent = only.length ? 'Will sync only: ' + only.join(', ') + '.' : 'Tick objects to sync only those (without hooks or prune).';
  }
  button.addEventListener('click', async () => {
    const only = [...chosen].sort();
    button.disabled = true;
    result.className = 'action-result busy';
    result.textContent = 'Syncing ' + only.join(', ') + '…';
    try {
      const r = await api.post(api.objectPath(kind, ns, name, '/sync'), { only });
      pending = { token: r && r.requested, only };
      result.className = 'action-result ok';
      result.textContent = 'Sync of ' + only.join(', ') + ' requested';
      chosen.clear();
      done();
    } catch (err) {
      result.className = 'action-result failed';
      result.textContent = err.status === 403 ? 'Sync: not allowed' : `Sync failed: ${err.message}`;
    } finally {
      update();
      announce(result.textContent);
    }
  });
  update();
  const el = h('div', { class: 'sync-picker', role: 'group', 'aria-label': 'Selective sync' }, preview, button, result);
  return {
    el,
    result,
    box(id) {
      const box = h('input', { type: 'checkbox', class: 'sync-pick', value: id, 'aria-label': 'Sync ' + id });
      box.checked = chosen.has(id);
      box.addEventListener('change', () => { if (box.checked) chosen.add(id); else chosen.delete(id); update(); });
      return h('label', { class: 'inline pick' }, box, h('code', {}, id));
    },
    // show says the outcome once status.lastHandledReconcileAt reaches
    // the request: the failure the Ready condition gives, or done.
    show(r) {
      const st = ((r.object || {}).status) || {};
      if (!pending || !pending.token || st.lastHandledReconcileAt !== pending.token) return;
      const failed = r.ready === 'False' && ['SyncFailed', 'ApplyFailed'].includes(r.reason);
      result.className = 'action-result ' + (failed ? 'failed' : 'ok');
      result.textContent = (failed ? 'Sync of ' + pending.only.join(', ') + ' failed: ' + r.message : 'Synced ' + pending.only.join(', '));
      announce(result.textContent);
      pending = null;
    },
    // keep drops ticks of objects no longer out of sync.
    keep(o) {
      const now = new Set([...(o.create || []), ...(o.change || [])]);
      for (const id of [...chosen]) if (!now.has(id)) chosen.delete(id);
      update();
    },
  };
}

function fact(term, ...value) {
  return [h('dt', {}, term), h('dd', {}, ...value)];
}

function readyOf(conds) {
  const c = (conds || []).find((x) => x.type === 'Ready');
  return c ? c.status : 'Unknown';
}

function countNodes(nodes) {
  let n = 0;
  for (const x of nodes) n += 1 + countNodes(x.children || []);
  return n;
}

// One applied object of a Kustomization or HelmRelease (GET /api/objects/
// {kind}/{ns}/{name}/live?id=): the field-level diff of live against Git
// with the field manager that wrote each drifted field, its health, and its
// Kubernetes Events. A diff line becomes an ignore rule with one action.

import * as api from '../api.js';
import { h, fill, ago, badge, objectHref, kindName, pageHeader, errorBox, debounce, announce } from '../dom.js';
import { workloadActions } from './workload.js';

export function mount(main, { kind, namespace, name, id }) {
  const health = h('span', { class: 'head-status' });
  const problem = h('div', { class: 'problem' });
  const diff = h('div', { class: 'section-body' }, h('p', { class: 'muted' }, 'Loading…'));
  const ignore = h('div', { class: 'ignore-panel', 'aria-live': 'polite' });
  const events = h('div', { class: 'section-body' });
  const live = h('pre', { class: 'yaml' });
  let alive = true;
  const workload = workloadActions(kind, namespace, name, id);

  fill(main,
    h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('a', { href: '#/' }, 'Overview'), ' / ',
      h('a', { href: objectHref(kind, namespace, name) }, `${kindName(kind)} ${namespace}/${name}`), ' / ', id),
    pageHeader(id, health),
    problem,
    workload && workload.el,
    h('section', { 'aria-labelledby': 's-diff' }, h('h2', { id: 's-diff' }, 'Live vs Git'), diff, ignore),
    h('section', { 'aria-labelledby': 's-events' }, h('h2', { id: 's-events' }, 'Events'), events),
    h('section', { 'aria-labelledby': 's-live' }, h('details', {}, h('summary', { id: 's-live' }, 'The live object'), live)));

  async function load() {
    try {
      const r = await api.get(api.objectPath(kind, namespace, name, '/live'), { id });
      if (!alive) return;
      fill(problem);
      const hl = typeof r.health === 'string' ? { status: r.health } : (r.health || {});
      fill(health, badge(hl.status || 'Unknown'), hl.reason || hl.message ? h('span', { class: 'muted' }, ' ' + (hl.reason || hl.message)) : null);
      const changes = r.diff || [];
      // No comparison (no right to dry-run, no render at hand, a hook) is
      // not the same as no difference: say why there is none.
      const unavailable = r.diffUnavailable;
      fill(diff, changes.length ? changesTable(changes, { onIgnore: ignoreField })
        : unavailable ? h('p', { class: 'diff-unavailable' }, badge('Not compared', 'Unknown'), ' ',
          unavailable.status === 403 ? 'You may not dry-run an apply of this object, so it cannot be compared with Git: ' : '',
          unavailable.reason || 'No comparison with Git is available.')
          : h('p', { class: 'in-sync' }, badge('In sync', 'Healthy'), ' The live object matches Git.'));
      const evs = r.events || [];
      fill(events, evs.length ? h('table', { class: 'table' },
        h('thead', {}, h('tr', {}, ['Type', 'Reason', 'Message', 'Count', 'Last seen'].map((t) => h('th', { scope: 'col' }, t)))),
        h('tbody', {}, evs.map((e) => h('tr', {},
          h('td', {}, badge(e.type || 'Normal', e.type === 'Warning' ? 'Degraded' : 'Healthy')), h('td', {}, e.reason || ''),
          h('td', { class: 'msg' }, e.message || ''), h('td', {}, String(e.count || 1)),
          h('td', {}, ago(e.lastTimestamp || e.eventTime || e.time))))))
        : h('p', { class: 'muted' }, 'No events.'));
      live.textContent = r.object ? JSON.stringify(r.object, null, 2) : '';
      if (workload && r.object && r.object.spec) workload.setReplicas(r.object.spec.replicas);
    } catch (err) {
      if (alive) fill(problem, errorBox(err));
    }
  }
  const refetch = debounce(load, 200);

  // ignoreField offers an ignore rule for one changed field, in the form
  // chosen: a JSON pointer, a jq path expression that finds list elements
  // by name, or everything the field's manager writes (when one is known).
  async function ignoreField(path, button, manager) {
    button.disabled = true;
    const forms = [['path', 'JSON pointer'], ['jq', 'jq, by element name']];
    if (manager) forms.push(['manager', `everything ${manager} writes`]);
    let as = 'path';
    const request = (apply) => api.post(api.objectPath(kind, namespace, name, '/ignore'), { id, path, apply, as, manager: manager || '' });
    const pre = h('pre', { class: 'yaml', id: 'ignore-yaml' }, '');
    const result = h('span', { class: 'action-result' });
    const choices = h('fieldset', { class: 'ignore-form' }, h('legend', {}, 'Rule by'),
      forms.map(([value, label]) => {
        const input = h('input', { type: 'radio', name: 'ignore-as', value, id: `ignore-as-${value}` });
        if (value === as) input.checked = true;
        input.addEventListener('change', () => { as = value; show(); });
        return h('label', { for: `ignore-as-${value}` }, input, ' ', label);
      }));
    const copy = h('button', { type: 'button', id: 'copy-yaml' }, 'Copy');
    copy.addEventListener('click', async () => {
      try { await navigator.clipboard.writeText(pre.textContent); result.textContent = 'Copied'; } catch { selectText(pre); result.textContent = 'Selected: press Ctrl+C'; }
      announce(result.textContent);
    });
    const apply = h('button', { type: 'button', id: 'apply-ignore' }, 'Apply');
    apply.addEventListener('click', async () => {
      apply.disabled = true;
      result.className = 'action-result busy';
      result.textContent = 'Applying…';
      try {
        await request(true);
        result.className = 'action-result ok';
        result.textContent = `Applied: ${path} is ignored`;
        refetch();
      } catch (err) {
        result.className = 'action-result failed';
        result.textContent = err.status === 403 ? 'Apply: not allowed' : 'Apply failed: ' + err.message;
        apply.disabled = false;
      }
      announce(result.textContent);
    });
    async function show() {
      try {
        const r = await request(false);
        pre.textContent = r.yaml || '';
        apply.hidden = r.mayApply === false;
        fill(ignore, h('h3', {}, `Ignore rule for ${path}`), choices,
          h('p', {}, 'Commit this to the object in Git' + (apply.hidden ? '.' : ', or apply it now.')), pre, h('div', { class: 'actions' }, copy, apply, result));
      } catch (err) {
        fill(ignore, errorBox(err));
      }
    }
    fill(ignore, h('p', { class: 'muted' }, `Making an ignore rule for ${path}…`));
    await show();
    button.disabled = false;
  }

  load();
  return {
    onChange(ev) { if (ev.resync || api.sameObject(ev, kind, namespace, name)) refetch(); },
    destroy() { alive = false; },
  };
}

// changesTable renders field changes {object?, path, before, after, manager, hidden?}
// as rows "path: before → after, changed by manager"; opts.object adds the
// object column, opts.onIgnore(path, button, manager) an "Ignore this field" button.
export function changesTable(changes, opts = {}) {
  // Between two revisions there is no live side and no field manager.
  const heads = opts.revisions ? ['Field', 'Older render', '', 'Newer render']
    : ['Field', 'Live (before)', '', 'Git (after)', 'Changed by'];
  return h('table', { class: 'table diff' },
    h('thead', {}, h('tr', {},
      opts.object ? h('th', { scope: 'col' }, 'Object') : null,
      heads.map((t) => h('th', { scope: 'col', class: t ? null : 'arrow' }, t)),
      opts.onIgnore ? h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Actions')) : null)),
    h('tbody', {}, changes.map((c) => {
      const btn = opts.onIgnore ? h('button', { type: 'button', class: 'ignore', 'data-path': c.path }, 'Ignore this field') : null;
      if (btn) btn.addEventListener('click', () => opts.onIgnore(c.path, btn, c.manager));
      return h('tr', { class: 'diff-line' },
        opts.object ? h('td', {}, c.object || '') : null,
        h('td', {}, h('code', { class: 'path' }, c.path)),
        h('td', {}, c.hidden ? hidden() : value(c.before, 'before')),
        h('td', { class: 'arrow', 'aria-hidden': 'true' }, '→'),
        h('td', {}, c.hidden ? hidden() : value(c.after, 'after')),
        opts.revisions ? null : h('td', { class: 'manager' }, c.manager ? `changed by ${c.manager}` : ''),
        btn ? h('td', {}, btn) : null);
    })));
}

// hidden stands for the values of a change whose object the user may not
// read (the server leaves them out).
function hidden() {
  return h('span', { class: 'val hidden', title: 'You may not read this object' }, '(hidden)');
}

function value(v, side) {
  if (v === undefined || v === null || v === '') return h('span', { class: `val ${side} absent` }, '(absent)');
  return h('code', { class: `val ${side}` }, String(v));
}

function selectText(el) {
  const r = document.createRange();
  r.selectNodeContents(el);
  const s = getSelection();
  s.removeAllRanges();
  s.addRange(r);
}

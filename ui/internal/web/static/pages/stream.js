// What the drift timeline and the event history share: entries from the
// JetStream stream, newest first, filtered by fields in the address, paged
// backwards with before=<seq>, and new entries merged in at the top when
// the live stream says something about a matching object. Browsers anchor
// the scroll position, so entries arriving above do not move what is read.

import * as api from '../api.js';
import { h, fill, pageHeader, errorBox, debounce } from '../dom.js';

const limit = 100;

// streamPage mounts a page for path (/api/drift or /api/events). filters:
// [{name, label, options?}] (options makes a select); render(entry) → <li>.
export function streamPage(main, { title, intro, path, filters, render, params }) {
  const values = {};
  for (const f of filters) values[f.name] = params.get(f.name) || '';
  let entries = [];
  let alive = true;
  let oldest = 0;
  // cursor is the server's before= for the next older page, when it said
  // (a page it ended early, within its time and checks, may be short or
  // empty and still have older entries).
  let cursor = 0;
  let generation = 0;

  const inputs = filters.map((f) => {
    const id = 'f-' + f.name;
    const control = f.options
      ? h('select', { id }, f.options.map(([v, t]) => h('option', { value: v, selected: v === values[f.name] }, t)))
      : h('input', { id, type: 'search', value: values[f.name], autocomplete: 'off' });
    control.addEventListener(f.options ? 'change' : 'input', f.options ? changed : debounce(changed, 300));
    return [f.name, control, h('div', { class: 'field' }, h('label', { for: id }, f.label), control)];
  });
  const list = h('ol', { class: 'stream', 'aria-label': title });
  const problem = h('div', { class: 'problem' });
  const older = h('button', { type: 'button', id: 'older', hidden: true }, 'Older entries');
  const summary = h('p', { class: 'summary' });
  older.addEventListener('click', () => fetch(cursor || oldest));

  fill(main, pageHeader(title, summary), intro ? h('p', { class: 'intro' }, intro) : null,
    h('form', { class: 'filters', role: 'search', onsubmit: (e) => e.preventDefault() }, inputs.map((x) => x[2])),
    problem, list, older);

  function changed() {
    for (const [name, control] of inputs) values[name] = control.value.trim();
    const route = location.hash.replace(/^#/, '').split('?')[0];
    history.replaceState(null, '', location.pathname + '#' + route + api.query(values));
    entries = [];
    oldest = 0;
    cursor = 0;
    fill(list);
    fetch(0);
  }

  async function fetch(before) {
    const gen = generation;
    try {
      const r = await api.get(path, { ...values, before: before || '', limit });
      if (!alive || gen !== generation) return;
      fill(problem);
      const items = Array.isArray(r) ? r : (r && r.items) || [];
      const first = !before && entries.length === 0;
      if (before) {
        entries.push(...items);
        list.append(...items.map(render));
      } else {
        // The newest page: only what is newer than what is shown goes in, at the top.
        const newest = entries.length ? entries[0].seq : 0;
        const fresh = entries.length ? items.filter((e) => e.seq > newest) : items;
        entries.unshift(...fresh);
        list.prepend(...fresh.map(render));
      }
      if (entries.length) oldest = entries[entries.length - 1].seq;
      // The server's before says there is more; else a short page means the
      // stream has nothing older. A live refresh says nothing about that.
      if (before || first) {
        cursor = (r && !Array.isArray(r) && r.before) || 0;
        older.hidden = !cursor && items.length < limit;
      }
      summary.textContent = entries.length ? `${entries.length} shown, newest first` : '';
      if (!entries.length) fill(list, h('li', { class: 'muted empty' }, 'Nothing here yet.'));
      else list.querySelector('.empty')?.remove();
    } catch (err) {
      if (alive && gen === generation) fill(problem, errorBox(err));
    }
  }
  const refresh = debounce(() => fetch(0), 200);

  fetch(0);
  return {
    onChange(ev) {
      if (ev.resync) { refresh(); return; }
      if (values.kind && String(ev.kind).toLowerCase() !== values.kind.toLowerCase()) return;
      if (values.namespace && ev.namespace !== values.namespace) return;
      if (values.name && ev.name !== values.name) return;
      refresh();
    },
    destroy() { alive = false; generation++; },
  };
}

// An ObjectSet's part of its page (GET /api/objects/objectset/{ns}/{name}'s
// "set"): its generators summed up, and each element of its last applied
// render with the objects it gave, each linking to its page with its
// Ready state as the user may read it.

import { h, fill, badge, objectHref } from '../dom.js';

export function setSection(kind) {
  if (kind.toLowerCase() !== 'objectset') return null;
  const generators = h('div', { class: 'section-body', id: 'set-generators' });
  const elements = h('div', { class: 'section-body', id: 'set-elements' });
  const count = h('span', { class: 'muted' });
  const el = h('div', {},
    h('section', { 'aria-labelledby': 's-generators' }, h('h2', { id: 's-generators' }, 'Generators'), generators),
    h('section', { 'aria-labelledby': 's-elements' }, h('h2', { id: 's-elements' }, 'Elements ', count), elements));

  function show(r) {
    const s = r.set || { generators: [], items: [] };
    fill(generators, s.generators.length
      ? h('ul', {}, s.generators.map((g) => h('li', {}, g)))
      : h('p', { class: 'muted' }, 'No generators.'));
    count.textContent = `(${s.elements || 0})`;
    fill(elements,
      s.items.length ? h('table', { class: 'table set-elements' },
        h('thead', {}, h('tr', {}, ['Element', 'Objects'].map((t) => h('th', { scope: 'col' }, t)))),
        h('tbody', {}, s.items.map((e) => h('tr', { class: 'set-element' },
          h('td', {}, h('code', { class: 'element-values' }, e.values)),
          h('td', {}, h('ul', { class: 'element-objects' }, e.objects.map(objectItem)))))))
        : h('p', { class: 'muted' }, 'No element applied yet.'),
      s.note ? h('p', { class: 'muted', id: 'set-note' }, 'Note: ' + s.note + '.') : null);
  }
  return { el, show };
}

// objectItem is one object of an element: a link to its page when it has
// one, and its state.
function objectItem(o) {
  const label = `${o.kind} ${o.namespace}/${o.name}`;
  const state = o.error ? h('span', { class: 'muted', title: o.error }, 'not readable')
    : o.ready === 'Exists' ? badge('Exists', 'Healthy')
      : badge(o.ready === 'True' ? 'Ready' : o.ready === 'False' ? 'NotReady' : o.ready === 'Missing' ? 'Missing' : 'Unknown');
  return h('li', { 'data-id': o.id },
    o.route ? h('a', { href: objectHref(o.route, o.namespace, o.name) }, label) : h('span', {}, label), ' ', state,
    o.reason ? h('span', { class: 'muted' }, ' ' + o.reason) : null);
}

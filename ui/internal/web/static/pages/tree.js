// The tree of a Kustomization's or HelmRelease's objects: the inventory,
// with what a workload owns nested under it. It is flattened to the rows
// that are open and drawn by the virtual list, so 2,000 objects cost a few
// dozen elements. Right opens a node, Left closes it (or goes to its
// parent), Enter shows the object.

import { h, fill, badge } from '../dom.js';
import { VirtualList } from '../vlist.js';

// objectTree returns {el, setNodes(tree)}; open(node) is called on Enter or click.
export function objectTree(open) {
  const expanded = new Set();
  let roots = [];
  let rows = []; // [{node, depth, parent}]

  const list = new VirtualList({
    rowHeight: 30,
    role: 'tree',
    rowRole: 'treeitem',
    label: 'Objects',
    render,
    onActivate: (r) => open(r.node),
    onKey: (e, r, i) => {
      const kids = r.node.children && r.node.children.length;
      if (e.key === 'ArrowRight' && kids) {
        if (!expanded.has(r.node.id)) toggle(r.node.id); else list.focusIndex(i + 1);
        return true;
      }
      if (e.key === 'ArrowLeft') {
        if (kids && expanded.has(r.node.id)) toggle(r.node.id);
        else if (r.parent >= 0) list.focusIndex(r.parent);
        return true;
      }
      return false;
    },
  });
  list.el.classList.add('tree');

  function flatten() {
    rows = [];
    const walk = (nodes, depth, parent) => {
      for (const node of nodes || []) {
        const i = rows.length;
        rows.push({ node, depth, parent });
        if (expanded.has(node.id)) walk(node.children, depth + 1, i);
      }
    };
    walk(roots, 0, -1);
    list.setData(rows.length, (i) => rows[i]);
  }

  function toggle(id) {
    if (expanded.has(id)) expanded.delete(id); else expanded.add(id);
    flatten();
  }

  function render(el, r) {
    const n = r.node;
    const kids = n.children && n.children.length;
    el.style.setProperty('--depth', r.depth);
    el.setAttribute('aria-level', r.depth + 1);
    if (kids) el.setAttribute('aria-expanded', String(expanded.has(n.id))); else el.removeAttribute('aria-expanded');
    el.setAttribute('aria-label', `${n.kind} ${n.namespace ? n.namespace + '/' : ''}${n.name}: ${n.health || 'Unknown'}${n.reason ? ', ' + n.reason : ''}`);
    const toggleBtn = kids
      ? h('button', { type: 'button', class: 'toggle', tabindex: '-1', 'aria-label': expanded.has(n.id) ? 'Collapse' : 'Expand' }, expanded.has(n.id) ? '▾' : '▸')
      : h('span', { class: 'toggle' });
    if (kids) toggleBtn.addEventListener('click', () => toggle(n.id));
    fill(el,
      h('span', { class: 'indent' }),
      toggleBtn,
      badge(n.health),
      h('span', { class: 'kind' }, n.kind),
      h('span', { class: 'name' }, (n.namespace ? n.namespace + '/' : '') + n.name),
      h('span', { class: 'reason', title: n.reason || '' }, n.reason || ''),
      n.hook ? h('span', { class: 'tag' }, 'hook ' + n.hook) : null,
      n.wave ? h('span', { class: 'tag' }, 'wave ' + n.wave) : null,
      kids ? h('span', { class: 'muted' }, `${kids} owned`) : null);
  }

  return {
    el: list.el,
    list,
    setNodes(tree) { roots = tree || []; flatten(); },
    destroy() { list.destroy(); },
  };
}

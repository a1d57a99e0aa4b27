// What an object page adds for image-controller's kinds (GET
// /api/objects/{kind}/{ns}/{name}'s "image"): an ImagePolicy's latest and
// previous image, the ImageRepository it came from (last scan, tag count)
// and the automations that select it; an ImageUpdateAutomation's last push
// and the commits it made, read from its events on the stream (GET
// /api/events, its Succeeded events, which carry the commit and the images
// in their metadata), newest first and at most `commitLimit`.

import * as api from '../api.js';
import { h, fill, ago, clock, shortRev, objectHref, errorBox } from '../dom.js';

export const imageKinds = ['imagerepository', 'imagepolicy', 'imageupdateautomation'];
const commitLimit = 20;

export function imageSection(kind, namespace, name) {
  const k = kind.toLowerCase();
  if (k !== 'imagepolicy' && k !== 'imageupdateautomation') return null;
  const policy = k === 'imagepolicy';
  const facts = h('dl', { class: 'facts image-facts' });
  const commits = h('div', { class: 'section-body commits' });
  let alive = true;

  const el = h('section', { 'aria-labelledby': 's-image' },
    h('h2', { id: 's-image' }, policy ? 'Latest image' : 'Last push'), facts,
    policy ? null : [h('h3', {}, 'Commits it made'), commits]);

  function show(r) {
    const img = r.image || {};
    if (policy) {
      const src = r.source || {};
      const autos = img.automations || [];
      fill(facts,
        fact('Latest image', h('code', { class: 'latest-image' }, refText(img.latest))),
        fact('Previous image', h('code', { class: 'previous-image' }, refText(img.previous))),
        fact('Repository', src.name ? h('a', { href: objectHref(src.kind || 'ImageRepository', src.namespace, src.name) }, `${src.namespace}/${src.name}`) : '—',
          src.image ? h('span', { class: 'muted' }, ' ' + src.image) : null,
          src.error ? h('span', { class: 'error' }, ' ' + src.error) : null),
        fact('Last scan', ago(src.lastScan)),
        fact('Tags', src.tagCount === undefined || src.tagCount === null ? '—' : String(src.tagCount)),
        fact('Automations', autos.length
          ? autos.map((a, i) => [i ? ', ' : '', h('a', { href: objectHref(a.kind, a.namespace, a.name) }, a.name)])
          : h('span', { class: 'muted' }, img.automationsNote || 'none selects it')));
      return;
    }
    const pols = Object.entries(img.policies || {}).sort(([a], [b]) => a.localeCompare(b));
    fill(facts,
      fact('Commit', h('code', { class: 'last-commit', title: img.lastPushCommit || '' }, img.lastPushCommit ? img.lastPushCommit.slice(0, 7) : '—')),
      fact('Pushed', ago(img.lastPushTime)),
      fact('Last run', ago(img.lastRunTime)),
      fact('Policies', pols.length
        ? pols.map(([p, ref], i) => [i ? ', ' : '', h('a', { href: objectHref('imagepolicy', namespace, p) }, p), ' ', h('code', {}, refText(ref))])
        : h('span', { class: 'muted' }, '—')));
  }

  async function loadCommits() {
    if (policy) return;
    try {
      const r = await api.get('/api/events', { kind: 'imageupdateautomation', namespace, name, reason: 'Succeeded', limit: commitLimit });
      if (!alive) return;
      const items = ((Array.isArray(r) ? r : (r && r.items)) || []).filter((e) => e.metadata && e.metadata.commit);
      fill(commits, items.length
        ? h('ol', { class: 'commit-list' }, items.map((e) => h('li', { class: 'commit' },
          h('code', { title: e.metadata.commit }, e.metadata.commit.slice(0, 7)), ' ',
          e.metadata.branch ? h('span', { class: 'muted' }, `on ${e.metadata.branch} `) : null,
          clock(e.timestamp),
          h('ul', { class: 'images' }, String(e.metadata.images || '').split(',').filter(Boolean).map((i) => h('li', {}, h('code', {}, i)))))))
        : h('p', { class: 'muted' }, 'No commit on record.'),
        h('p', { class: 'links' }, h('a', { href: '#/events' + api.query({ kind: 'imageupdateautomation', namespace, name }) }, 'All its events')));
    } catch (err) {
      if (alive) fill(commits, errorBox(err));
    }
  }

  loadCommits();
  return {
    el, show,
    refetch() { loadCommits(); },
    destroy() { alive = false; },
  };
}

// refText is an image reference as name:tag, @digest when it has one.
function refText(ref) {
  if (!ref || !ref.name) return '—';
  return `${ref.name}:${ref.tag}` + (ref.digest ? '@' + shortRev(ref.digest) : '');
}

function fact(term, ...value) {
  return [h('dt', {}, term), h('dd', {}, ...value)];
}

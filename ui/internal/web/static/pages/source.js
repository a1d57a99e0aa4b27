// What an object page adds for a source (GET /api/objects/{kind}/{ns}/
// {name}'s "artifact", "usedBy" and the object): the artifact it serves
// (revision, digest, size, when), what it fetches from (an OCIRepository's
// URL, reference and layer selector), how it is verified (spec.verify and
// the SourceVerified condition), and the Kustomizations and HelmReleases
// built from it.

import { h, fill, ago, badge, readyWord, objectHref } from '../dom.js';

const sourceKinds = ['gitrepository', 'ocirepository', 'bucket', 'helmrepository', 'externalartifact'];

export function sourceSection(kind) {
  const k = kind.toLowerCase();
  if (!sourceKinds.includes(k)) return null;
  const artifact = h('dl', { class: 'facts', id: 'artifact-facts' });
  const verification = h('dl', { class: 'facts', id: 'verification-facts' });
  const users = h('div', { class: 'section-body', id: 'used-by' });
  const el = h('div', {},
    h('div', { class: 'cols' },
      h('section', { 'aria-labelledby': 's-artifact' }, h('h2', { id: 's-artifact' }, 'Artifact'), artifact),
      h('section', { 'aria-labelledby': 's-verification' }, h('h2', { id: 's-verification' }, 'Origin and verification'), verification)),
    h('section', { 'aria-labelledby': 's-used-by' }, h('h2', { id: 's-used-by' }, 'Used by'), users));

  function show(r) {
    const o = r.object || {};
    const spec = o.spec || {};
    const a = r.artifact || (o.status || {}).artifact;
    fill(artifact, a ? [
      fact('Revision', h('code', { class: 'artifact-revision' }, a.revision || '—')),
      fact('Digest', h('code', {}, a.digest || '—')),
      fact('Size', a.size ? `${Math.max(1, Math.round(a.size / 1024))} KiB` : '—'),
      fact('Updated', ago(a.lastUpdateTime)),
    ] : fact('Artifact', h('span', { class: 'muted' }, 'None yet.')));
    const ref = spec.ref || {};
    const refText = ref.digest || (ref.semver && `semver ${ref.semver}`) || ref.tag || ref.commit || ref.name || ref.branch || '';
    const verified = (r.conditions || []).find((c) => c.type === 'SourceVerified');
    const verify = spec.verify;
    fill(verification,
      fact('URL', h('code', {}, spec.url || spec.endpoint || '—')),
      refText && fact('Reference', h('code', {}, refText)),
      spec.layerSelector && fact('Layer', h('code', {}, [spec.layerSelector.mediaType, spec.layerSelector.operation].filter(Boolean).join(' ') || '—')),
      fact('Verification', verify
        ? [verify.provider || (k === 'ocirepository' ? 'cosign' : 'OpenPGP'), verify.mode ? ` (${verify.mode})` : '', ' ',
          verified ? badge(verified.status === 'True' ? 'Verified' : 'NotVerified', verified.status === 'True' ? 'Healthy' : 'Degraded') : badge('Unknown'),
          verified && verified.message ? h('span', { class: 'muted' }, ' ' + verified.message) : null]
        : h('span', { class: 'muted' }, 'Not verified (no spec.verify).')));
    const list = r.usedBy || [];
    fill(users,
      list.length ? h('table', { class: 'table' },
        h('thead', {}, h('tr', {}, ['Kind', 'Object', 'Ready', 'Revision'].map((t) => h('th', { scope: 'col' }, t)))),
        h('tbody', {}, list.map((u) => h('tr', {},
          h('td', {}, u.kind), h('td', {}, h('a', { href: objectHref(u.kind, u.namespace, u.name) }, `${u.namespace}/${u.name}`)),
          h('td', {}, badge(readyWord({ ready: u.ready }))), h('td', {}, h('code', {}, u.revision || '—'))))))
        : h('p', { class: 'muted' }, 'No Kustomization or HelmRelease you may see uses it.'),
      r.usedByNote ? h('p', { class: 'muted', id: 'used-by-note' }, 'Note: ' + r.usedByNote + '.') : null);
  }
  return { el, show };
}

function fact(term, ...value) {
  return [h('dt', {}, term), h('dd', {}, ...value)];
}

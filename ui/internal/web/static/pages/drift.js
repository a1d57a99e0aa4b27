// The drift timeline (GET /api/drift): every DriftDetected and
// DriftCorrected from the stream, cluster-wide or for one object, with who
// changed which field and how long the revert took.

import { h, clock, ago, shortRev, objectHref } from '../dom.js';
import { changesTable } from './applied.js';
import { streamPage } from './stream.js';

export function mount(main, { params }) {
  return streamPage(main, {
    title: 'Drift timeline',
    intro: 'Foreign edits to applied objects, as the sync controllers saw them: detected, then corrected. It comes from the event stream, so it survives restarts.',
    path: '/api/drift',
    params,
    filters: [
      { name: 'kind', label: 'Kind', options: [['', 'All kinds'], ['kustomization', 'Kustomization'], ['helmrelease', 'HelmRelease']] },
      { name: 'namespace', label: 'Namespace' },
      { name: 'name', label: 'Name' },
    ],
    render: entry,
  });
}

function entry(e) {
  const corrected = e.reason === 'DriftCorrected';
  return h('li', { class: `entry ${corrected ? 'corrected' : 'detected'}`, 'data-seq': e.seq },
    h('div', { class: 'entry-head' },
      h('span', { class: `badge ${corrected ? 'd-corrected' : 'd-drifted'}` }, corrected ? 'Corrected' : 'Drift detected'),
      ' ', clock(e.time), ' ', h('span', { class: 'muted' }, '(', ago(e.time), ')'), ' ',
      h('a', { href: objectHref(e.kind, e.namespace, e.name) }, `${e.kind} ${e.namespace}/${e.name}`),
      e.revision ? h('span', { class: 'muted' }, ' at ' + shortRev(e.revision)) : null,
      corrected && e.latency ? h('span', { class: 'latency' }, `reverted in ${e.latency}`) : null),
    changesTable(e.changes || [], { object: true }));
}

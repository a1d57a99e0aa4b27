// The event history (GET /api/events): the stream, newest first, filtered
// by kind, namespace, name, reason and severity.

import { h, clock, badge, objectHref } from '../dom.js';
import { streamPage } from './stream.js';

const linked = ['gitrepository', 'kustomization', 'helmrelease', 'helmrepository', 'helmchart', 'ocirepository'];

export function mount(main, { params }) {
  return streamPage(main, {
    title: 'Events',
    path: '/api/events',
    params,
    filters: [
      { name: 'kind', label: 'Kind' },
      { name: 'namespace', label: 'Namespace' },
      { name: 'name', label: 'Name' },
      { name: 'reason', label: 'Reason' },
      { name: 'severity', label: 'Severity', options: [['', 'Any'], ['info', 'info'], ['error', 'error']] },
    ],
    render: entry,
  });
}

function entry(e) {
  const o = e.involvedObject || {};
  const what = `${o.kind} ${o.namespace ? o.namespace + '/' : ''}${o.name}`;
  return h('li', { class: `entry event sev-${e.severity}`, 'data-seq': e.seq },
    h('div', { class: 'entry-head' },
      badge(e.severity === 'error' ? 'error' : 'info', e.severity === 'error' ? 'Degraded' : 'Healthy'), ' ',
      clock(e.timestamp), ' ',
      h('strong', { class: 'reason' }, e.reason), ' ',
      linked.includes(String(o.kind).toLowerCase()) ? h('a', { href: objectHref(o.kind, o.namespace, o.name) }, what) : h('span', {}, what),
      e.revision ? h('span', { class: 'muted' }, ' ' + e.revision) : null,
      h('span', { class: 'muted' }, ' · ' + (e.reportingController || ''))),
    h('p', { class: 'msg' }, e.message || ''));
}

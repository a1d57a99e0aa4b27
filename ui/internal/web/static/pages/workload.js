// Actions on a workload of a Kustomization's or HelmRelease's inventory,
// on its applied-object page (POST /api/objects/{kind}/{ns}/{name}/
// resources/{action}): restart a Deployment, StatefulSet or DaemonSet,
// scale a Deployment or StatefulSet, suspend or resume a CronJob. Each is
// the user's own write; a 403 is "not allowed". Plumb applies only the
// fields Git sets: the page says so before and the server's note after
// (a scale of replicas Git sets is reverted unless an ignore rule covers
// them).

import * as api from '../api.js';
import { h, announce } from '../dom.js';

const kinds = {
  'apps/Deployment': ['restart', 'scale'],
  'apps/StatefulSet': ['restart', 'scale'],
  'apps/DaemonSet': ['restart'],
  'batch/CronJob': ['suspend', 'resume'],
};

// workloadActions returns the action bar of the applied object id
// ("apps/Deployment/apps/web"), or null for a kind without actions.
export function workloadActions(kind, ns, name, id) {
  const [group, k] = id.split('/');
  const actions = kinds[`${group}/${k}`];
  if (!actions) return null;
  const result = h('span', { class: 'action-result', id: 'workload-result' });
  const note = h('p', { class: 'workload-note', id: 'workload-note' });
  const replicas = h('input', { type: 'number', id: 'scale-replicas', min: '0', max: '1000', value: '1', inputmode: 'numeric' });
  const buttons = [];
  let touched = false; // the user changed the replicas field: it is theirs
  replicas.addEventListener('change', () => { touched = true; });
  replicas.addEventListener('input', () => { touched = true; });

  async function run(button, action, body, verb) {
    for (const b of buttons) b.disabled = true;
    button.setAttribute('aria-busy', 'true');
    result.className = 'action-result busy';
    result.textContent = `${verb}…`;
    try {
      const r = await api.post(api.objectPath(kind, ns, name, '/resources/' + action), { id, ...body });
      result.className = 'action-result ok';
      result.textContent = (r && r.done) || verb;
      note.textContent = (r && r.note) || '';
    } catch (err) {
      result.className = 'action-result failed';
      result.textContent = err.status === 403 ? `${verb}: not allowed` : `${verb} failed: ${err.message}`;
    } finally {
      button.removeAttribute('aria-busy');
      for (const b of buttons) b.disabled = false;
      announce(result.textContent);
    }
  }

  const parts = [];
  for (const action of actions) {
    const label = { restart: 'Restart', scale: 'Scale', suspend: 'Suspend', resume: 'Resume' }[action];
    const b = h('button', { type: 'button', id: 'act-' + action }, label);
    buttons.push(b);
    if (action === 'scale') {
      b.addEventListener('click', () => run(b, 'scale', { replicas: Number(replicas.value) }, 'Scale'));
      parts.push(h('label', { for: 'scale-replicas' }, 'Replicas '), replicas, b);
    } else {
      b.addEventListener('click', () => run(b, action, {}, label));
      parts.push(b);
    }
  }
  note.textContent = actions.includes('restart')
    ? 'A restart stays: Plumb applies only the fields Git sets. A scale of replicas Git sets is reverted about a second later unless an ignore rule covers spec.replicas.'
    : 'Suspending a CronJob whose spec.suspend Git sets is reverted about a second later unless an ignore rule covers it.';
  return {
    el: h('section', { 'aria-labelledby': 's-workload' }, h('h2', { id: 's-workload' }, 'Workload'),
      h('div', { class: 'actions', role: 'group', 'aria-label': 'Workload actions' }, parts, result), note),
    // setReplicas shows the live object's replicas in the scale field.
    setReplicas(n) { if (typeof n === 'number' && !touched) replicas.value = String(n); },
  };
}

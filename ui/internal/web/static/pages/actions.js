// Actions on a GitRepository, Kustomization or HelmRelease: each is a POST
// with the user's identity; the button shows it in progress, the result
// stays next to it and is read out by the live region. A 403 is "not
// allowed" — the API server's word on the user's RBAC, not an error.

import * as api from '../api.js';
import { h, announce } from '../dom.js';

// actionBar returns {el, update(suspended, manual, rolledBack)} for the
// object kind/ns/name; after a successful action it calls done() so the
// page refetches. Sync is offered only for a Kustomization or HelmRelease
// whose syncPolicy is Manual (an automatic one syncs on its own); Resume
// shows on a suspended object and on one a rollback holds (resuming ends
// the hold).
export function actionBar(kind, ns, name, done) {
  const result = h('span', { class: 'action-result', id: 'action-result' });
  const withSource = h('input', { type: 'checkbox', id: 'with-source', checked: true });
  const reconcile = h('button', { type: 'button', id: 'act-reconcile' }, 'Reconcile');
  const suspend = h('button', { type: 'button', id: 'act-suspend' }, 'Suspend');
  const resume = h('button', { type: 'button', id: 'act-resume' }, 'Resume');
  const sync = h('button', { type: 'button', id: 'act-sync', hidden: true }, 'Sync');
  const isSource = kind.toLowerCase() !== 'kustomization' && kind.toLowerCase() !== 'helmrelease';
  const sourceBox = isSource ? null : h('label', { class: 'inline', for: 'with-source' }, withSource, ' with its source');

  async function run(button, verb, path, body, doneWord) {
    for (const b of [reconcile, suspend, resume, sync]) b.disabled = true;
    button.setAttribute('aria-busy', 'true');
    result.className = 'action-result busy';
    result.textContent = `${verb}…`;
    try {
      await api.post(api.objectPath(kind, ns, name, path), body);
      result.className = 'action-result ok';
      result.textContent = doneWord;
      done();
    } catch (err) {
      result.className = 'action-result failed';
      result.textContent = err.status === 403 ? `${verb}: not allowed` : `${verb} failed: ${err.message}`;
    } finally {
      button.removeAttribute('aria-busy');
      for (const b of [reconcile, suspend, resume, sync]) b.disabled = false;
      announce(result.textContent);
    }
  }

  reconcile.addEventListener('click', () => run(reconcile, 'Reconcile', '/reconcile',
    { withSource: !isSource && withSource.checked }, 'Reconcile requested'));
  suspend.addEventListener('click', () => run(suspend, 'Suspend', '/suspend', {}, 'Suspended'));
  resume.addEventListener('click', () => run(resume, 'Resume', '/resume', {}, 'Resumed'));
  sync.addEventListener('click', () => run(sync, 'Sync', '/sync', { only: [] }, 'Sync requested'));

  const el = h('div', { class: 'actions', role: 'group', 'aria-label': 'Actions' }, sync, reconcile, sourceBox, suspend, resume, result);
  return {
    el,
    update(suspended, manual, rolledBack) {
      suspend.hidden = !!suspended;
      resume.hidden = !suspended && !rolledBack;
      sync.hidden = !manual;
    },
  };
}

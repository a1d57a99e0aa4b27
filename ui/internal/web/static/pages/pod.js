// A Pod in a Kustomization's or HelmRelease's tree (GET /api/objects/
// {kind}/{ns}/{name}/pod?id=): its containers, and one container's log
// (GET …/logs), its last lines or its previous instance's, or followed as
// new lines come (a streamed answer, ended by the server after its bound).
// Delete removes the Pod (its workload makes another). Every read and
// write is the user's: a 403 is "not allowed", the API server's word.

import * as api from '../api.js';
import { h, fill, badge, objectHref, kindName, pageHeader, errorBox, announce } from '../dom.js';

// maxShown bounds the text the page keeps of a followed log: the oldest
// lines leave as new ones come.
const maxShown = 2 << 20;

export function mount(main, { kind, namespace, name, podNamespace, pod }) {
  const id = `/Pod/${podNamespace}/${pod}`;
  const status = h('span', { class: 'head-status' });
  const problem = h('div', { class: 'problem' });
  const facts = h('dl', { class: 'facts' }, h('dt', {}, 'Loading…'));
  const container = h('select', { id: 'log-container' });
  const previous = h('input', { type: 'checkbox', id: 'log-previous' });
  const tail = h('input', { type: 'number', id: 'log-tail', min: '-1', value: '100', inputmode: 'numeric' });
  const follow = h('input', { type: 'checkbox', id: 'log-follow' });
  const show = h('button', { type: 'button', id: 'log-show' }, 'Show');
  const stop = h('button', { type: 'button', id: 'log-stop', hidden: true }, 'Stop');
  const bounds = h('p', { class: 'muted', id: 'log-bounds' });
  const logState = h('p', { class: 'log-state', id: 'log-state', 'aria-live': 'polite' });
  const log = h('pre', { class: 'log', id: 'log', tabindex: '0', 'aria-label': 'Log' });
  const del = h('button', { type: 'button', id: 'act-delete-pod', class: 'danger' }, 'Delete Pod');
  const result = h('span', { class: 'action-result', id: 'action-result' });
  let reading = null; // the AbortController of the log being read
  let alive = true;

  fill(main,
    h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' }, h('a', { href: '#/' }, 'Overview'), ' / ',
      h('a', { href: objectHref(kind, namespace, name) }, `${kindName(kind)} ${namespace}/${name}`), ' / ', `Pod ${podNamespace}/${pod}`),
    pageHeader(pod, status),
    h('div', { class: 'actions', role: 'group', 'aria-label': 'Actions' }, del, result),
    problem,
    h('section', { 'aria-labelledby': 's-pod' }, h('h2', { id: 's-pod' }, 'Pod'), facts),
    h('section', { 'aria-labelledby': 's-log' }, h('h2', { id: 's-log' }, 'Log'),
      h('div', { class: 'log-controls', role: 'group', 'aria-label': 'Which log' },
        h('label', { for: 'log-container' }, 'Container '), container,
        h('label', { class: 'inline', for: 'log-previous' }, previous, ' previous container'),
        h('label', { for: 'log-tail' }, 'Last lines '), tail,
        h('label', { class: 'inline', for: 'log-follow' }, follow, ' follow'),
        show, stop),
      bounds, logState, log));

  async function load() {
    try {
      const r = await api.get(api.objectPath(kind, namespace, name, '/pod'), { id });
      if (!alive) return;
      fill(problem);
      fill(status, badge(r.phase || 'Unknown', r.phase === 'Running' || r.phase === 'Succeeded' ? 'Healthy' : r.phase === 'Failed' ? 'Degraded' : 'Progressing'));
      const cs = r.containers || [];
      fill(facts,
        fact('Namespace', r.namespace), fact('Node', r.node || '—'),
        fact('Containers', cs.map((c, i) => [i ? ', ' : '', c.name, c.init ? ' (init)' : '',
          c.restarts ? h('span', { class: 'muted' }, ` ${c.restarts} restarts`) : null,
          c.state ? h('span', { class: 'muted' }, ` ${c.state}`) : null])));
      const picked = container.value;
      fill(container, cs.map((c) => h('option', { value: c.name }, c.name + (c.init ? ' (init)' : ''))));
      container.value = picked || (cs.find((c) => !c.init) || cs[0] || {}).name || '';
      const b = r.bounds || {};
      if (b.defaultTail && !tail.dataset.set) { tail.value = String(b.defaultTail); tail.dataset.set = '1'; }
      bounds.textContent = b.maxBytes ? `At most ${Math.round(b.maxBytes / 1024)} KiB and ${b.maxTail} lines a read; a follow stops after ${b.maxFollow}.` : '';
      if (!reading) read();
    } catch (err) {
      if (alive) fill(problem, errorBox(err));
    }
  }

  async function read() {
    if (reading) reading.abort();
    const ctl = new AbortController();
    reading = ctl;
    const following = follow.checked;
    let text = '';
    log.textContent = '';
    stop.hidden = !following;
    logState.className = 'log-state busy';
    logState.textContent = following ? 'Following…' : 'Reading…';
    let drawn = 0;
    const draw = () => {
      drawn = 0;
      if (text.length > maxShown) text = text.slice(text.indexOf('\n', text.length - maxShown) + 1);
      const atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
      log.textContent = text;
      if (atEnd) log.scrollTop = log.scrollHeight;
    };
    try {
      await api.stream(api.objectPath(kind, namespace, name, '/logs'),
        { id, container: container.value, previous: previous.checked ? 'true' : '', tail: tail.value, follow: following ? 'true' : '' },
        (chunk) => { text += chunk; if (!drawn) drawn = requestAnimationFrame(draw); }, ctl.signal);
      draw();
      logState.className = 'log-state ok';
      logState.textContent = text ? (following ? 'The follow ended (its time is up); Show follows again.' : '') : 'The log is empty.';
    } catch (err) {
      if (ctl.signal.aborted) { logState.className = 'log-state'; logState.textContent = 'Stopped.'; return; }
      draw();
      logState.className = 'log-state failed';
      logState.textContent = err.status === 403 ? 'Reading this log is not allowed: ' + err.message : 'The log could not be read: ' + err.message;
    } finally {
      if (reading === ctl) { reading = null; stop.hidden = true; }
    }
  }

  show.addEventListener('click', read);
  stop.addEventListener('click', () => { if (reading) reading.abort(); });
  // Delete asks twice: the first press says what it will do.
  del.addEventListener('click', async () => {
    if (!del.dataset.armed) {
      del.dataset.armed = '1';
      del.textContent = 'Delete it: press again';
      result.className = 'action-result';
      result.textContent = `Deletes Pod ${podNamespace}/${pod}; its workload, if any, makes another.`;
      announce(result.textContent);
      return;
    }
    delete del.dataset.armed;
    del.textContent = 'Delete Pod';
    del.disabled = true;
    result.className = 'action-result busy';
    result.textContent = 'Delete…';
    try {
      const r = await api.post(api.objectPath(kind, namespace, name, '/resources/delete'), { id });
      result.className = 'action-result ok';
      result.textContent = (r && r.done) || 'Deleted';
    } catch (err) {
      result.className = 'action-result failed';
      result.textContent = err.status === 403 ? 'Delete: not allowed' : `Delete failed: ${err.message}`;
      del.disabled = false;
    } finally {
      announce(result.textContent);
    }
  });

  load();
  return {
    onChange(ev) { if (ev.resync) load(); },
    destroy() { alive = false; if (reading) reading.abort(); },
  };
}

function fact(term, ...value) {
  return [h('dt', {}, term), h('dd', {}, ...value)];
}

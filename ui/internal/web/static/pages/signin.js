// The sign-in page (token mode): a Kubernetes bearer token for POST
// /api/login. The token goes to the server only; the browser keeps the
// session cookie, not the token.

import * as api from '../api.js';
import { h, fill } from '../dom.js';

export function mount(main, { message, done }) {
  const token = h('input', { id: 'token', name: 'token', type: 'password', autocomplete: 'off', required: true, spellcheck: 'false' });
  const status = h('p', { class: 'form-status', role: 'alert' }, message || '');
  const submit = h('button', { type: 'submit' }, 'Sign in');
  const form = h('form', { class: 'signin', 'aria-labelledby': 'signin-title' },
    h('h1', { id: 'signin-title', tabindex: '-1' }, 'Sign in to Plumb'),
    h('p', {}, 'Paste a Kubernetes bearer token: a ServiceAccount token or an OIDC ID token the API server accepts. What you see and may do is what the API server allows that token.'),
    h('label', { for: 'token' }, 'Bearer token'),
    token,
    submit,
    status);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    submit.disabled = true;
    status.textContent = 'Signing in…';
    try {
      const s = await api.login({ token: token.value.trim() });
      token.value = '';
      done(s);
    } catch (err) {
      status.textContent = err.status === 401 || err.status === 403 ? 'The API server did not accept this token.' : 'Sign-in failed: ' + err.message;
      submit.disabled = false;
      token.focus();
    }
  });
  fill(main, form);
  token.focus();
  return {};
}

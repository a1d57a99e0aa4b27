// A virtualised list: rows of one fixed height, absolutely placed in a
// spacer as tall as all of them, and only the rows in view (plus a few
// either side) in the DOM. 1,000 overview rows or a tree of 2,000 objects
// cost the same few dozen elements, and a live update re-fills a row in
// place, so nothing moves.
//
// Keyboard: the list is one tab stop (a roving tabindex on the active row);
// Up/Down/PageUp/PageDown/Home/End move, Enter activates, and onKey gets
// everything else (the tree's Left/Right).

import { h, fill } from './dom.js';

const overscan = 8;

export class VirtualList {
  // opts: rowHeight (px), label (aria-label), role/rowRole (ARIA roles),
  // render(row, item, index) fills a row element (item is undefined while
  // its page is being fetched), onActivate(item, index), onKey(event, item,
  // index) → true when it handled the key, onRange(first, last) when the
  // rows in view change (to fetch what is missing).
  constructor(opts) {
    this.opts = opts;
    this.rowHeight = opts.rowHeight || 32;
    this.size = 0;
    this.getItem = () => undefined;
    this.active = 0;
    this.rows = new Map();
    this.spacer = h('div', { class: 'vlist-spacer', role: 'none' });
    this.el = h('div', { class: 'vlist', role: opts.role || 'list', 'aria-label': opts.label || '' }, this.spacer);
    this.el.style.setProperty('--row-h', this.rowHeight + 'px');
    this.el.addEventListener('scroll', () => this.schedule(), { passive: true });
    this.el.addEventListener('keydown', (e) => this.key(e));
    this.el.addEventListener('click', (e) => this.click(e));
    this.resize = new ResizeObserver(() => this.schedule());
    this.resize.observe(this.el);
  }

  // setData shows size rows, row i being getItem(i). Rows in view are
  // re-filled in place; the scroll position is kept.
  setData(size, getItem) {
    this.size = size;
    this.getItem = getItem;
    this.spacer.style.height = size * this.rowHeight + 'px';
    this.el.style.height = Math.max(size, 1) * this.rowHeight + 'px';
    for (const [i, row] of this.rows) {
      if (i >= size) { row.remove(); this.rows.delete(i); }
    }
    if (this.active >= size) this.active = Math.max(0, size - 1);
    this.refresh();
    this.draw();
  }

  // refresh re-fills the rows in view (for example after a page of items arrived).
  refresh() {
    for (const [i, row] of this.rows) this.fillRow(row, i);
  }

  schedule() {
    if (this.pending) return;
    this.pending = requestAnimationFrame(() => { this.pending = 0; this.draw(); });
  }

  range() {
    const top = this.el.scrollTop;
    const height = this.el.clientHeight || 600;
    const first = Math.max(0, Math.floor(top / this.rowHeight) - overscan);
    const last = Math.min(this.size - 1, Math.ceil((top + height) / this.rowHeight) + overscan);
    return [first, last, Math.floor(top / this.rowHeight), Math.min(this.size - 1, Math.floor((top + height - 1) / this.rowHeight))];
  }

  draw() {
    const [first, last, firstSeen, lastSeen] = this.range();
    for (const [i, row] of this.rows) {
      if (i < first || i > last) { row.remove(); this.rows.delete(i); }
    }
    for (let i = first; i <= last; i++) {
      if (this.rows.has(i)) continue;
      const row = h('div', { class: 'vrow', role: this.opts.rowRole || 'listitem', 'data-index': i });
      row.style.top = i * this.rowHeight + 'px';
      this.fillRow(row, i);
      this.rows.set(i, row);
      this.spacer.appendChild(row);
    }
    if (!this.rows.has(this.active) || this.active < firstSeen || this.active > lastSeen) {
      // The active row scrolled away: the first row in view takes the tab stop,
      // unless focus is on the active row right now.
      const focused = this.rows.get(this.active);
      if (!focused || document.activeElement !== focused) this.active = Math.max(0, firstSeen);
    }
    for (const [i, row] of this.rows) row.setAttribute('tabindex', i === this.active ? '0' : '-1');
    if (this.opts.onRange && this.size > 0) this.opts.onRange(first, last);
  }

  fillRow(row, i) {
    const item = this.getItem(i);
    row.classList.toggle('loading', item === undefined);
    if (item === undefined) {
      row.removeAttribute('aria-expanded');
      fill(row, h('span', { class: 'muted' }, 'Loading…'));
      return;
    }
    this.opts.render(row, item, i);
  }

  indexOf(el) {
    const row = el && el.closest && el.closest('.vrow');
    return row && this.el.contains(row) ? Number(row.dataset.index) : -1;
  }

  // focusIndex scrolls row i into view and focuses it.
  focusIndex(i) {
    if (this.size === 0) return;
    i = Math.max(0, Math.min(this.size - 1, i));
    this.active = i;
    const top = i * this.rowHeight;
    if (top < this.el.scrollTop) this.el.scrollTop = top;
    else if (top + this.rowHeight > this.el.scrollTop + this.el.clientHeight) {
      this.el.scrollTop = top + this.rowHeight - this.el.clientHeight;
    }
    this.draw();
    const row = this.rows.get(i);
    if (row) row.focus({ preventScroll: true });
  }

  key(e) {
    const i = this.indexOf(e.target);
    if (i < 0) return;
    const page = Math.max(1, Math.floor(this.el.clientHeight / this.rowHeight) - 1);
    const moves = { ArrowDown: i + 1, ArrowUp: i - 1, PageDown: i + page, PageUp: i - page, Home: 0, End: this.size - 1 };
    if (e.key in moves) {
      e.preventDefault();
      this.focusIndex(moves[e.key]);
      return;
    }
    const item = this.getItem(i);
    if (item === undefined) return;
    // Enter on a button or link inside the row is that control's own.
    if (e.key === 'Enter' && !e.target.closest('button, a, input')) {
      e.preventDefault();
      if (this.opts.onActivate) this.opts.onActivate(item, i);
      return;
    }
    if (this.opts.onKey && this.opts.onKey(e, item, i)) e.preventDefault();
  }

  click(e) {
    const i = this.indexOf(e.target);
    if (i < 0) return;
    this.active = i;
    if (e.target.closest('button, a, input')) return;
    const item = this.getItem(i);
    if (item !== undefined && this.opts.onActivate) this.opts.onActivate(item, i);
  }

  destroy() {
    this.resize.disconnect();
    if (this.pending) cancelAnimationFrame(this.pending);
  }
}

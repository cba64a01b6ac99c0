// The Stepwise dashboard: a client of the /v1 API, nothing more. Every
// status, count and cost it shows is what the API returned (the same
// event log and final_output as `stepwise show`); the page only lays
// them out. The bearer token stays in sessionStorage and goes in the
// Authorization header, event streams included (read with fetch(), as
// EventSource cannot send that header), never in a URL.

const TOKEN_KEY = 'stepwise.token';
const STATUSES = ['queued', 'running', 'awaiting_approval', 'needs_review', 'ok', 'failed', 'cancelled'];
const LIST_POLL_MS = 1500;

// ------------------------------------------------------------ helpers

/** An element with attributes (`on*` are listeners) and children (text is text, never HTML). */
function h(tag, attrs = {}, ...children) {
  const svg = ['svg', 'g', 'rect', 'path', 'text', 'line', 'title'].includes(tag);
  const el = svg ? document.createElementNS('http://www.w3.org/2000/svg', tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.setAttribute('class', v);
    else if (k in el && !svg && typeof v !== 'string') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** Replaces an element's children (arrays flattened, text as text). */
function put(el, ...children) {
  el.replaceChildren(...children.flat(Infinity)
    .filter((c) => c !== undefined && c !== null && c !== false && c !== '')
    .map((c) => (c instanceof Node ? c : document.createTextNode(String(c)))));
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const token = () => sessionStorage.getItem(TOKEN_KEY);
const now = () => performance.timeOrigin + performance.now();

function age(iso) {
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (s < 60) return `${Math.round(s)} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  if (s < 86400) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

const usd = (v) => (typeof v === 'number' ? `$${v.toFixed(v < 0.01 && v > 0 ? 5 : 4)}` : '—');
const ms = (v) => (v < 1000 ? `${Math.round(v)} ms` : `${(v / 1000).toFixed(2)} s`);

class Unauthorized extends Error {}

/** A request to the API with the signed-in token; JSON in and out. */
async function api(path, { method = 'GET', body, auth = token() } = {}) {
  const headers = { Accept: 'application/json' };
  if (auth) headers.Authorization = `Bearer ${auth}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
  const data = await res.json().catch(() => null);
  if (res.status === 401) throw new Unauthorized(data?.error?.message || 'unauthorized');
  if (!res.ok) {
    const err = new Error(data?.error?.message || `${res.status} ${res.statusText}`);
    err.code = data?.error?.code;
    throw err;
  }
  return data;
}

/**
 * A run's events, live: `text/event-stream` read with fetch() so that the
 * Authorization header goes along. Each reconnect sends Last-Event-ID (the
 * last seq received), so nothing is missed or repeated; a seq already seen
 * is dropped all the same. Ends at the server's `end` event or on abort.
 */
async function follow(run, after, { onEvent, onEnd, onState, signal }) {
  let last = after;
  while (!signal.aborted) {
    try {
      const headers = { Accept: 'text/event-stream', 'Last-Event-ID': String(last) };
      if (token()) headers.Authorization = `Bearer ${token()}`;
      const res = await fetch(`/v1/runs/${encodeURIComponent(run)}/events`, { headers, signal, cache: 'no-store' });
      if (res.status === 401) throw new Unauthorized('unauthorized');
      if (!res.ok || !res.body) throw new Error(`event stream: ${res.status}`);
      onState('live');
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value.replace(/\r/g, '');
        let cut;
        while ((cut = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          const msg = { id: null, event: 'message', data: [] };
          for (const line of block.split('\n')) {
            if (!line || line.startsWith(':')) continue;
            const colon = line.indexOf(':');
            const field = colon < 0 ? line : line.slice(0, colon);
            let val = colon < 0 ? '' : line.slice(colon + 1);
            if (val.startsWith(' ')) val = val.slice(1);
            if (field === 'id') msg.id = val;
            else if (field === 'event') msg.event = val;
            else if (field === 'data') msg.data.push(val);
          }
          if (msg.event === 'end') {
            onEnd(JSON.parse(msg.data.join('\n') || '{}'));
            return;
          }
          if (msg.id === null || !msg.data.length) continue;
          const seq = Number(msg.id);
          if (!(seq > last)) continue;
          last = seq;
          onEvent(JSON.parse(msg.data.join('\n')));
        }
      }
    } catch (e) {
      if (e instanceof Unauthorized) { signOut(e.message); return; }
      if (signal.aborted) return;
    }
    onState('reconnecting');
    await sleep(1000);
  }
}

// ------------------------------------------------------------ sign-in

const main = () => document.getElementById('main');
let noAuth = false;
let teardown = () => {};

function signOut(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  teardown();
  showSignIn(message);
}

function showSignIn(message) {
  document.getElementById('who').textContent = '';
  document.getElementById('signout').hidden = true;
  const input = h('input', { type: 'password', id: 'token', name: 'token', autocomplete: 'current-password', placeholder: 'bearer token', required: true, size: 40 });
  const error = h('p', { class: 'error', id: 'signin-error' }, message && message !== 'unauthorized' ? message : '');
  const form = h('form', { id: 'signin', class: 'card', onsubmit: async (e) => {
    e.preventDefault();
    try {
      await api('/v1/runs?limit=1', { auth: input.value.trim() });
      sessionStorage.setItem(TOKEN_KEY, input.value.trim());
      start();
    } catch (err) {
      error.textContent = err instanceof Unauthorized ? 'This token is not valid here.' : err.message;
    }
  } },
  h('h2', {}, 'Sign in'),
  h('p', { class: 'muted' }, 'A token from the server’s [[serve.tokens]] (or STEPWISE_SERVE_TOKENS). It is kept in this tab only (sessionStorage) and sent as Authorization: Bearer.'),
  h('label', {}, 'Token ', input), ' ', h('button', { type: 'submit' }, 'Sign in'), error);
  put(main(), form);
  input.focus();
}

async function start() {
  try {
    await api('/v1/runs?limit=1');
  } catch (e) {
    if (e instanceof Unauthorized) return showSignIn();
    put(main(), h('p', { class: 'error' }, `Cannot reach the API: ${e.message}`));
    return;
  }
  noAuth = !token();
  document.getElementById('who').textContent = noAuth ? 'no auth (loopback only)' : 'signed in';
  document.getElementById('signout').hidden = noAuth;
  route();
}

// ------------------------------------------------------------ runs list

function runsView() {
  const status = h('select', { id: 'filter-status' }, h('option', { value: '' }, 'any status'), STATUSES.map((s) => h('option', { value: s }, s)));
  const text = h('input', { id: 'filter-goal', type: 'search', placeholder: 'goal or run id contains…' });
  const body = h('tbody', {});
  const more = h('p', { class: 'muted' });
  const health = h('p', { id: 'stats', class: 'muted' });
  const params = new URLSearchParams(location.hash.split('?')[1] || '');
  status.value = params.get('status') || '';
  let cursor = params.get('cursor') || '';
  let timer = null;
  let stopped = false;

  async function load() {
    const q = new URLSearchParams({ limit: '50' });
    if (status.value) q.set('status', status.value);
    if (cursor) q.set('cursor', cursor);
    const list = await api(`/v1/runs?${q}`);
    drawStats(await api('/v1/stats'));
    const needle = text.value.trim().toLowerCase();
    const rows = list.runs.filter((r) => !needle || r.goal.toLowerCase().includes(needle) || r.run_id.includes(needle));
    put(body, ...rows.map((r) => h('tr', { 'data-run': r.run_id, 'data-status': r.status },
      h('td', {}, h('a', { href: `#/runs/${r.run_id}` }, r.run_id)),
      h('td', {}, h('span', { class: `status ${r.status}` }, r.status)),
      h('td', { class: 'goal' }, r.goal),
      h('td', {}, r.strategy || '—'),
      h('td', { class: 'num' }, `${r.steps_done}/${r.steps_total}`),
      h('td', { class: 'num' }, r.replans),
      h('td', { class: 'num' }, r.tokens),
      h('td', { class: 'num' }, usd(r.cost_usd)),
      h('td', { class: 'num', title: r.started_at }, age(r.started_at)),
      h('td', { class: 'muted' }, r.held_by || ''))));
    put(more,
      rows.length ? '' : 'No runs match.',
      cursor ? h('a', { href: '#/', onclick: () => { cursor = ''; } }, ' first page') : '',
      list.next_cursor ? h('a', { href: `#/?cursor=${encodeURIComponent(list.next_cursor)}${status.value ? `&status=${status.value}` : ''}` }, ' next page →') : '');
  }
  // Run health over all the tenant's runs (GET /v1/stats, as `stepwise stats`).
  function drawStats(stats) {
    const a = stats.all;
    if (!a.runs) { put(health, ''); return; }
    const pct = (x) => `${Math.round(x * 100)}%`;
    const secs = (ms) => (ms === null || ms === undefined ? '—' : ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`);
    put(health,
      `${a.runs} runs · ${a.by_status.ok || 0} ok · `,
      h('span', { title: 'ok with no pause and no decision by a person' }, `closed loop ${pct(a.closed_loop_rate)}`),
      ' · ',
      h('span', { title: 'ok after a pause or a crash' }, `recovered ${pct(a.recovered_rate)}`),
      ` · duration mean ${secs(a.duration_mean_ms)}, p95 ${secs(a.duration_p95_ms)}`,
      ` · per run: ${a.model_calls_per_run.toFixed(1)} model calls, ${Math.round(a.tokens_per_run)} tokens, ${a.replans_per_run.toFixed(2)} replans`);
  }
  async function tick() {
    if (stopped) return;
    try { await load(); } catch (e) {
      if (e instanceof Unauthorized) return signOut(e.message);
      more.textContent = `Cannot list runs: ${e.message}`;
    }
    if (!stopped) timer = setTimeout(tick, LIST_POLL_MS);
  }
  status.addEventListener('change', () => { cursor = ''; clearTimeout(timer); tick(); });
  text.addEventListener('input', () => { clearTimeout(timer); tick(); });

  put(main(),
    submitForm(),
    h('section', { class: 'card' },
      h('h2', {}, 'Runs ', h('small', { class: 'muted' }, `(refreshed every ${LIST_POLL_MS / 1000} s)`)),
      health,
      h('div', { class: 'filters' }, status, ' ', text),
      h('table', { id: 'runs' },
        h('thead', {}, h('tr', {}, ['run', 'status', 'goal', 'strategy', 'steps', 'replans', 'tokens', 'cost', 'age', 'held by'].map((c) => h('th', {}, c)))),
        body),
      more));
  tick();
  return () => { stopped = true; clearTimeout(timer); };
}

function submitForm() {
  const field = (name, el, label, help) => h('label', { class: 'field' }, h('span', {}, label), el, help ? h('small', { class: 'muted' }, help) : '');
  const goal = h('textarea', { name: 'goal', id: 'submit-goal', rows: 2, required: true });
  const notes = h('input', { name: 'notes', id: 'submit-notes', required: true, placeholder: 'a folder under the server’s notes_roots' });
  const workspace = h('input', { name: 'workspace', id: 'submit-workspace', placeholder: 'under workspace_root (for write_file)' });
  const strategy = h('input', { name: 'strategy', id: 'submit-strategy', placeholder: 'plan-execute' });
  const model = h('input', { name: 'model', id: 'submit-model', placeholder: 'the server’s default' });
  const approve = h('select', { name: 'approve', id: 'submit-approve' }, h('option', { value: 'never' }, 'wait for a person'), h('option', { value: 'auto' }, 'auto'));
  const constraints = h('textarea', { name: 'constraints', id: 'submit-constraints', rows: 2, placeholder: '{"comparison_dimensions": ["cost"]}' });
  const plan = h('textarea', { name: 'plan', id: 'submit-plan', rows: 4, placeholder: '{"steps": [...]} — instead of planning' });
  const error = h('p', { class: 'error', id: 'submit-error' });
  const json = (el, what) => {
    if (!el.value.trim()) return undefined;
    try { return JSON.parse(el.value); } catch (e) { throw new Error(`${what} is not JSON: ${e.message}`); }
  };
  return h('form', { id: 'submit', class: 'card', onsubmit: async (e) => {
    e.preventDefault();
    error.textContent = '';
    try {
      const body = { goal: goal.value, notes: notes.value.trim(), approve: approve.value };
      if (workspace.value.trim()) body.workspace = workspace.value.trim();
      if (strategy.value.trim()) body.strategy = strategy.value.trim();
      if (model.value.trim()) body.model = model.value.trim();
      const c = json(constraints, 'Constraints');
      if (c !== undefined) body.constraints = c;
      const p = json(plan, 'The plan');
      if (p !== undefined) body.plan = p;
      const run = await api('/v1/runs', { method: 'POST', body });
      location.hash = `#/runs/${run.run_id}`;
    } catch (err) {
      if (err instanceof Unauthorized) return signOut(err.message);
      error.textContent = err.code ? `${err.code}: ${err.message}` : err.message;
    }
  } },
  h('details', {}, h('summary', {}, 'Submit a run'),
    h('div', { class: 'grid' },
      field('goal', goal, 'Goal'), field('notes', notes, 'Notes folder'), field('workspace', workspace, 'Workspace'),
      field('strategy', strategy, 'Strategy'), field('model', model, 'Model'), field('approve', approve, 'Side effects'),
      field('constraints', constraints, 'Constraints (JSON)'), field('plan', plan, 'Plan (JSON, optional)')),
    h('button', { type: 'submit', id: 'submit-button' }, 'Submit'), error));
}

// ------------------------------------------------------------ run page

/** Layers from depends_on: a step sits one column right of its deepest dependency. */
function layers(steps) {
  const byId = new Map(steps.map((s) => [s.id, s]));
  const depth = new Map();
  const visit = (id, trail) => {
    if (depth.has(id)) return depth.get(id);
    if (trail.has(id) || !byId.has(id)) return 0;
    trail.add(id);
    const deps = byId.get(id).depends_on || [];
    const d = deps.length ? 1 + Math.max(...deps.map((x) => visit(x, trail))) : 0;
    trail.delete(id);
    depth.set(id, d);
    return d;
  };
  steps.forEach((s) => visit(s.id, new Set()));
  return depth;
}

function dag(steps, { current }) {
  const W = 170, H = 48, GX = 60, GY = 18;
  const depth = layers(steps);
  const rows = new Map();
  const pos = new Map();
  for (const s of steps) {
    const d = depth.get(s.id) || 0;
    const r = rows.get(d) || 0;
    rows.set(d, r + 1);
    pos.set(s.id, { x: 10 + d * (W + GX), y: 10 + r * (H + GY) });
  }
  const width = 20 + (Math.max(0, ...depth.values()) + 1) * (W + GX) - GX;
  const height = 20 + Math.max(1, ...rows.values()) * (H + GY) - GY;
  const svg = h('svg', { class: 'dag', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': 'plan graph' });
  for (const s of steps) {
    for (const dep of s.depends_on || []) {
      const a = pos.get(dep), b = pos.get(s.id);
      if (!a || !b) continue;
      const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2, mx = (x1 + x2) / 2;
      svg.append(h('path', { class: 'edge', d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}` }));
    }
  }
  for (const s of steps) {
    const p = pos.get(s.id);
    const status = current ? s.status : 'superseded';
    svg.append(h('g', { class: `node ${status}`, 'data-step': s.id, 'data-status': status, transform: `translate(${p.x},${p.y})` },
      h('title', {}, `${s.id}: ${s.description || ''} (${s.tool})${current ? ` — ${s.status}, ${s.attempts} attempt(s)` : ''}`),
      h('rect', { width: W, height: H, rx: 6 }),
      h('text', { x: 8, y: 18, class: 'id' }, s.id.length > 20 ? `${s.id.slice(0, 19)}…` : s.id),
      h('text', { x: 8, y: 36, class: 'sub' }, `${s.tool}${current ? ` · ${s.status}` : ''}`)));
  }
  return svg;
}

/** Each step attempt's span, from step_started to its outcome, in the log's own timestamps. */
function attempts(events) {
  const open = new Map();
  const spans = [];
  for (const ev of events) {
    const t = Date.parse(ev.at);
    if (ev.kind === 'step_started') open.set(ev.step, { step: ev.step, attempt: ev.attempt, start: t });
    else if (['step_succeeded', 'step_failed', 'step_interrupted'].includes(ev.kind) && open.has(ev.step)) {
      const span = open.get(ev.step);
      open.delete(ev.step);
      spans.push({ ...span, end: t, outcome: ev.kind.replace('step_', '') });
    }
  }
  for (const span of open.values()) spans.push({ ...span, end: null, outcome: 'running' });
  return spans;
}

/**
 * The critical path as it happened: from the step that finished last, back
 * through the dependency that finished last before it started, to a root.
 */
function criticalPath(plan, spans) {
  const end = new Map();
  for (const s of spans) if (s.end !== null) end.set(s.step, Math.max(end.get(s.step) || 0, s.end));
  const byId = new Map(plan.map((s) => [s.id, s]));
  let cur = [...end.entries()].sort((a, b) => b[1] - a[1])[0]?.[0];
  const path = new Set();
  while (cur && !path.has(cur)) {
    path.add(cur);
    const deps = (byId.get(cur)?.depends_on || []).filter((d) => end.has(d));
    cur = deps.sort((a, b) => end.get(b) - end.get(a))[0];
  }
  return path;
}

function timeline(plan, events) {
  const spans = attempts(events);
  if (!spans.length) return h('p', { class: 'muted' }, 'No step has started yet.');
  const t0 = Math.min(...spans.map((s) => s.start));
  const tEnd = Math.max(...spans.map((s) => s.end ?? Date.now()));
  const total = Math.max(1, tEnd - t0);
  const critical = criticalPath(plan, spans);
  const W = 600, ROW = 20, LABEL = 150;
  const svg = h('svg', { class: 'timeline', width: LABEL + W + 90, height: spans.length * ROW + 24 });
  spans.forEach((s, i) => {
    const x = LABEL + ((s.start - t0) / total) * W;
    const end = s.end ?? Date.now();
    const w = Math.max(2, ((end - s.start) / total) * W);
    const y = i * ROW + 4;
    const crit = critical.has(s.step) ? ' critical' : '';
    svg.append(h('g', { class: `span ${s.outcome}${crit}`, 'data-step': s.step },
      h('title', {}, `${s.step} attempt ${s.attempt}: ${s.outcome}, ${ms(end - s.start)}${crit ? ' (critical path)' : ''}`),
      h('text', { x: 0, y: y + 13 }, `${s.step}${s.attempt > 1 ? ` #${s.attempt}` : ''}`),
      h('rect', { x, y, width: w, height: ROW - 6, rx: 2 }),
      h('text', { x: x + w + 4, y: y + 13, class: 'sub' }, ms(end - s.start))));
  });
  svg.append(h('text', { x: LABEL, y: spans.length * ROW + 20, class: 'sub' }, `0 — ${ms(total)}; critical path: ${[...critical].reverse().join(' → ') || '—'}`));
  return svg;
}

function eventSummary(ev) {
  const parts = [];
  for (const k of ['step', 'attempt', 'verdict', 'status', 'condition', 'version', 'replan_count', 'role', 'by']) {
    if (ev[k] !== undefined && typeof ev[k] !== 'object') parts.push(`${k} ${ev[k]}`);
  }
  if (ev.plan?.version) parts.push(`plan v${ev.plan.version} (${ev.plan.steps.length} steps)`);
  for (const k of ['reason', 'detail']) if (typeof ev[k] === 'string') parts.push(ev[k].length > 140 ? `${ev[k].slice(0, 139)}…` : ev[k]);
  if (ev.failure?.message) parts.push(ev.failure.message);
  return parts.join(' · ');
}

function usageTable(title, rows) {
  if (!rows.length) return h('p', { class: 'muted' }, `${title}: no model calls.`);
  return h('table', { class: 'usage' },
    h('caption', {}, title),
    h('thead', {}, h('tr', {}, ['', 'model calls', 'input tokens', 'output tokens', 'cost'].map((c) => h('th', {}, c)))),
    h('tbody', {}, rows.map(([name, u]) => h('tr', {}, h('td', {}, name), h('td', { class: 'num' }, u.llm_calls ?? 0),
      h('td', { class: 'num' }, u.input_tokens ?? 0), h('td', { class: 'num' }, u.output_tokens ?? 0), h('td', { class: 'num' }, usd(u.cost_usd))))));
}

/** The report's Markdown (headings, lists, tables, emphasis) as elements — text nodes only, never HTML — with each `[source]` citation linked to the evidence quote it stands for. */
function report(out) {
  const evidence = out.evidence || [];
  const items = evidence.map((e, i) => h('li', { id: `ev-${i}`, class: 'evidence' },
    h('strong', {}, e.source_id), h('span', { class: 'muted' }, ` (step ${e.step})`), h('blockquote', {}, e.quote)));
  const cite = (line, source) => {
    const same = evidence.map((e, i) => [e, i]).filter(([e]) => e.source_id === source);
    const hit = same.find(([e]) => line.includes(e.quote.slice(0, 60))) || same[0];
    return hit ? h('a', { class: 'cite', href: `#ev-${hit[1]}`, title: hit[0].quote }, `[${source}]`) : `[${source}]`;
  };
  // Inline Markdown as elements, never as HTML: **strong**, *em* or _em_,
  // `code`, and each [source] a link to its evidence.
  const inline = (line) => {
    const out = [];
    let at = 0;
    const marks = /\*\*([^*]+)\*\*|(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])|(?<![\w_])_([^_\s][^_]*?)_(?![\w_])|`([^`]+)`|\[([^\][\s]+)\]/g;
    for (const m of line.matchAll(marks)) {
      out.push(line.slice(at, m.index));
      if (m[1] !== undefined) out.push(h('strong', {}, inline(m[1])));
      else if (m[2] !== undefined) out.push(h('em', {}, inline(m[2])));
      else if (m[3] !== undefined) out.push(h('em', {}, inline(m[3])));
      else if (m[4] !== undefined) out.push(h('code', {}, m[4]));
      else out.push(cite(line, m[5]));
      at = m.index + m[0].length;
    }
    out.push(line.slice(at));
    return out;
  };
  const cells = (line) => line.replace(/^\|/, '').replace(/\|$/, '').split('|').map((c) => c.trim());
  const blocks = [];
  let list = null;
  let table = null;
  for (const raw of (out.final_report || '').split('\n')) {
    const line = raw.trimEnd();
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    const bullet = /^\s*[-*]\s+(.*)$/.exec(line);
    if (line.startsWith('|')) {
      list = null;
      if (/^\|[\s|:-]+\|?$/.test(line)) continue; // the header's rule
      if (!table) {
        table = h('tbody', {});
        blocks.push(h('table', { class: 'figures' }, h('thead', {}, h('tr', {}, cells(line).map((c) => h('th', {}, inline(c))))), table));
      } else {
        table.append(h('tr', {}, cells(line).map((c) => h('td', {}, inline(c)))));
      }
      continue;
    }
    table = null;
    if (bullet) {
      if (!list) { list = h('ul', {}); blocks.push(list); }
      list.append(h('li', {}, inline(bullet[1])));
      continue;
    }
    list = null;
    if (heading) blocks.push(h(`h${Math.min(6, heading[1].length + 2)}`, {}, inline(heading[2])));
    else if (line.trim()) blocks.push(h('p', {}, inline(line)));
  }
  return [
    blocks.length ? h('div', { class: 'report', id: 'report' }, blocks) : h('p', { class: 'muted', id: 'report' }, 'No report yet.'),
    items.length ? h('div', {}, h('h3', {}, 'Evidence'), h('ol', { class: 'evidence-list' }, items)) : '',
    out.knowledge_gaps?.length ? h('div', {}, h('h3', {}, 'Unresolved gaps'), h('ul', {}, out.knowledge_gaps.map((g) => h('li', {}, g)))) : '',
  ];
}

function runView(id) {
  const ctl = new AbortController();
  const events = [];
  const seen = new Set();
  let out = null;
  let version = null; // the plan version shown; null: the current one
  let loaded = false; // past the first read: what arrives now is live
  const statusShown = new Map(); // step -> status last drawn
  const latency = (window.__stepwiseLatency = { events: [], steps: [] });
  // What the stream itself delivered (the browser test checks it has no gap
  // and no repeat across reconnects; a read of the output can fill a row
  // first, so the rows alone would not show a gap in the stream).
  const streamed = (window.__stepwiseStream = { after: null, seqs: [] });

  const el = {
    head: h('section', { class: 'card', id: 'run-head' }),
    approvals: h('section', { class: 'card', id: 'approvals', hidden: true }),
    plan: h('section', { class: 'card', id: 'plan' }),
    timeline: h('section', { class: 'card', id: 'timeline' }),
    usage: h('section', { class: 'card', id: 'usage' }),
    report: h('section', { class: 'card', id: 'report-card' }),
    log: h('tbody', { id: 'events' }),
    stream: h('span', { id: 'stream-state', class: 'muted' }, 'connecting…'),
  };
  put(main(), h('p', {}, h('a', { href: '#/' }, '← runs')), el.head, el.approvals, el.plan, el.timeline, el.report, el.usage,
    h('section', { class: 'card' }, h('h2', {}, 'Events ', el.stream),
      h('table', { class: 'events' }, h('thead', {}, h('tr', {}, ['seq', 'at', 'kind', ''].map((c) => h('th', {}, c)))), el.log)));

  const eventRow = (ev) => h('tr', { 'data-seq': ev.seq, class: ev.kind },
    h('td', { class: 'num' }, ev.seq), h('td', { title: ev.at }, ev.at.slice(11, 23)), h('td', {}, ev.kind),
    h('td', {}, h('details', {}, h('summary', {}, eventSummary(ev)), h('pre', {}, JSON.stringify(ev, (k, v) => (k === 'via' ? undefined : v), 2)))));

  // Every event is drawn once, by whichever comes first: the stream or a
  // read of the output. Past the first read, the time from the event's
  // timestamp to its row being drawn is kept (the figure in docs/server.md).
  function addEvent(ev) {
    if (seen.has(ev.seq)) return;
    seen.add(ev.seq);
    events.push(ev);
    el.log.prepend(eventRow(ev));
    if (loaded) latency.events.push({ seq: ev.seq, kind: ev.kind, via: ev.via, lag_ms: now() - Date.parse(ev.at) });
  }

  function drawHead() {
    const cost = out.cost ? `${usd(out.cost.usd)} (${out.cost.model})` : '—';
    const total = (out.usage?.input_tokens || 0) + (out.usage?.output_tokens || 0);
    put(el.head,
      h('h2', {}, 'Run ', h('code', {}, id), ' ', h('span', { class: `status ${out.status}`, id: 'run-status', 'data-status': out.status }, out.status)),
      h('p', { class: 'goal' }, events.find((e) => e.kind === 'run_started')?.input || ''),
      h('dl', { class: 'facts' }, [
        ['strategy', out.strategy], ['plan version', out.plan_version], ['replans', out.replan_count],
        ['steps done', `${out.plan.filter((s) => s.status === 'succeeded').length}/${out.plan.filter((s) => s.status !== 'skipped').length}`],
        ['model calls', out.usage?.llm_calls ?? 0], ['tokens', total], ['cost', cost],
      ].map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])),
      out.blocked_reason ? h('p', { class: 'error' }, out.blocked_reason) : '');
  }

  function drawPlan() {
    const versions = events.filter((e) => e.kind === 'plan_validated').map((e) => e.plan);
    const shown = version === null ? null : versions.find((p) => p.version === version);
    const tabs = versions.map((p) => h('button', {
      class: `tab${(shown ? shown.version : out.plan_version) === p.version ? ' on' : ''}`, 'data-version': p.version,
      onclick: () => { version = p.version === out.plan_version ? null : p.version; drawPlan(); },
    }, `v${p.version}${p.version === out.plan_version ? ' (current)' : ''}`));
    const steps = shown ? shown.steps : out.plan;
    put(el.plan, h('h2', {}, 'Plan ', h('span', { class: 'tabs' }, tabs)),
      steps.length ? h('div', { class: 'scroll' }, dag(steps, { current: !shown })) : h('p', { class: 'muted' }, 'No plan yet.'),
      shown ? h('p', { class: 'muted' }, `Version ${shown.version}, replaced by a replan; statuses are shown for the current version.`) : '');
    if (!shown) {
      const t = now();
      for (const s of out.plan) {
        if (statusShown.get(s.id) === s.status) continue;
        statusShown.set(s.id, s.status);
        const kind = { succeeded: 'step_succeeded', failed: 'step_failed', running: 'step_started' }[s.status];
        const cause = kind && [...events].reverse().find((e) => e.kind === kind && e.step === s.id);
        if (cause && loaded) latency.steps.push({ step: s.id, status: s.status, seq: cause.seq, lag_ms: t - Date.parse(cause.at) });
      }
    }
  }

  async function drawApprovals() {
    if (out.status !== 'awaiting_approval') { el.approvals.hidden = true; put(el.approvals); return; }
    const pending = await api(`/v1/runs/${encodeURIComponent(id)}/approvals`);
    const message = h('p', { class: 'error', id: 'approval-error' });
    const act = async (path, body) => {
      try { await api(`/v1/runs/${encodeURIComponent(id)}/${path}`, { method: 'POST', body }); refresh(); } catch (e) {
        if (e instanceof Unauthorized) return signOut(e.message);
        message.textContent = e.code ? `${e.code}: ${e.message}` : e.message;
        refresh();
      }
    };
    const reason = h('input', { id: 'reject-reason', placeholder: 'why (recorded)', size: 30 });
    el.approvals.hidden = false;
    put(el.approvals, h('h2', {}, 'Waiting for approval'),
      pending.plan_version != null ? h('div', { class: 'pending', 'data-plan-version': pending.plan_version },
        h('p', {}, `Plan version ${pending.plan_version} waits for review.`),
        h('button', { class: 'approve', onclick: () => act('approve', { plan_version: pending.plan_version }) }, `Approve plan v${pending.plan_version}`)) : '',
      pending.steps.map((s) => h('div', { class: 'pending', 'data-step': s.step },
        h('p', {}, 'Step ', h('strong', {}, s.step), ' calls ', h('code', { class: 'tool' }, s.tool),
          s.destructive && h('strong', { class: 'destructive' }, ' (destructive: it may delete or overwrite data)'), ' with:'),
        h('pre', { class: 'args' }, JSON.stringify(s.args, null, 2)),
        h('p', { class: 'muted' }, 'arguments hash ', h('code', {}, s.args_hash)),
        h('button', { class: 'approve', 'data-step': s.step, onclick: () => act('approve', { steps: [{ step: s.step, args_hash: s.args_hash }] }) }, `Approve ${s.step}`))),
      h('p', {}, reason, ' ', h('button', { class: 'reject', onclick: () => act('reject', { reason: reason.value || 'rejected from the dashboard' }) }, 'Reject all')),
      message);
  }

  function drawRest() {
    put(el.timeline, h('h2', {}, 'Timeline'), h('div', { class: 'scroll' }, timeline(out.plan, events)));
    const byStep = Object.entries(out.usage_by_step || {});
    const byRole = Object.entries(out.usage_by_role || {});
    put(el.usage, h('h2', {}, 'Usage'), usageTable('Per step', byStep), usageTable('Per role', byRole));
    put(el.report, h('h2', {}, 'Report'), report(out));
  }

  // The output is read again after events arrive (one read at a time; a
  // burst of events costs one more read, not one each).
  let reading = false, again = false;
  async function refresh() {
    if (reading) { again = true; return; }
    reading = true;
    try {
      do {
        again = false;
        out = await api(`/v1/runs/${encodeURIComponent(id)}`);
        if (ctl.signal.aborted) return;
        for (const ev of out.execution_history) addEvent({ ...ev, via: 'read' });
        drawHead(); drawPlan(); drawRest();
        await drawApprovals();
      } while (again && !ctl.signal.aborted);
    } catch (e) {
      if (e instanceof Unauthorized) return signOut(e.message);
      put(el.head, h('p', { class: 'error' }, `Cannot read run ${id}: ${e.message}`));
    } finally { reading = false; }
  }

  (async () => {
    await refresh();
    if (!out || ctl.signal.aborted) return;
    loaded = true;
    const after = Math.max(0, ...events.map((e) => e.seq));
    streamed.after = after;
    follow(id, after, {
      signal: ctl.signal,
      onState: (s) => { el.stream.textContent = s; },
      onEvent: (ev) => { streamed.seqs.push(ev.seq); addEvent({ ...ev, via: 'stream' }); refresh(); },
      onEnd: (end) => { el.stream.textContent = `ended (${end.status})`; refresh(); },
    });
  })();
  return () => ctl.abort();
}

// ------------------------------------------------------------ routing

function route() {
  const hash = location.hash || '#/';
  if (!hash.startsWith('#/')) return; // an in-page anchor (a citation)
  teardown();
  const m = /^#\/runs\/([^/?]+)/.exec(hash);
  teardown = m ? runView(decodeURIComponent(m[1])) : runsView();
}

window.addEventListener('hashchange', () => { if (noAuth || token()) route(); });
document.getElementById('signout').addEventListener('click', () => signOut());
start();

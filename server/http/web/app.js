// ladder's web dashboard: the coordinator's JSON API (/api/) and its event stream (/api/events), drawn with uPlot.
// Views (by the URL's hash): #/ searches, #/search/ID, #/trial/ID, #/nodes.
'use strict';

const view = document.getElementById('view');
const statusEl = document.getElementById('status');
let csrf = '';
let events = null;   // the EventSource of the current view
let plots = [];      // uPlot instances of the current view
let timers = [];     // intervals of the current view

function esc(s) {
  return String(s ?? '').replace(/[&<>"']/g, c => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'}[c]));
}
function num(v) { return v === undefined || v === null ? '-' : (+v).toPrecision(4).replace(/\.?0+$/, ''); }
function nodeHours(x) { const h = (+x || 0) / 3600; return h < 10 ? h.toFixed(2) : h < 1000 ? h.toFixed(1) : h.toFixed(0); }
// A trial's node-seconds now: what the coordinator counted when it sent it, and the open run's since then.
function nodeSeconds(t) {
  const live = t.state === 'TRIAL_RUNNING' && t.started_unix ? (Date.now() / 1000 - (t.sent_unix || t.started_unix)) : 0;
  return (+t.node_seconds || 0) + Math.max(0, live) * (t.placement || []).length;
}
// asha/hyperband: the rung; pbt: the generation.
function rungLabel(s, t) {
  if (!t.rung) return '-';
  return (s && (s.rungs || []).length ? 'rung ' : 'gen ') + t.rung;
}
// A probe of the extrapolation's climb (ladder promote --probe): a larger batch reached by micro-batches, no
// configuration of the search.
function probeTag(t) {
  return t.probe ? ` <span class="probe" title="probe of the climb: ${+t.micro_batches || 1} micro-batches">probe</span>` : '';
}
// A trial that broke one of its search's constraints (Trial.infeasible): never the best, named with what it broke.
function brokenConstraints(s, t) {
  const cs = (s && s.constraints) || [];
  return (t.constraints || []).map((v, i) => {
    const c = cs[i];
    if (!c || !(v > 0)) return '';
    const max = c.kind === 'max';
    return `${c.metric} ${num(max ? c.bound + v : c.bound - v)} ${max ? '> max' : '< min'} ${num(c.bound)}`;
  }).filter(w => w).join(', ');
}
function infeasibleTag(s, t) {
  return t.infeasible ? ` <span class="infeasible" title="broke ${esc(brokenConstraints(s, t))}">infeasible</span>` : '';
}
function word(state) { return String(state || '').replace(/^(TRIAL|SEARCH|WORKER)_/, ''); }
function since(t0, t1) {
  if (!t0) return '-';
  const s = ((t1 || Date.now() / 1000) - t0);
  return s < 90 ? s.toFixed(0) + 's' : s < 5400 ? (s / 60).toFixed(1) + 'm' : (s / 3600).toFixed(1) + 'h';
}
function params(t) {
  return Object.entries(t.params || {}).sort(([a], [b]) => a < b ? -1 : 1).map(([k, v]) => k + '=' + (v.float_value ?? v.int_value ?? v.string_value)
    .toString().slice(0, 12)).join(' ');
}

async function api(path, options) {
  const res = await fetch('/api/' + path, Object.assign({credentials: 'same-origin'}, options || {}));
  if (res.status === 401) {
    view.innerHTML = '<h1>Log in</h1><p>The dashboard needs the coordinator\'s token. <a href="/login">Log in</a> ' +
      '(or open <code>/login?token=TOKEN</code>; the token is in <code>&lt;db&gt;.token</code>).</p>';
    throw new Error('unauthorized');
  }
  const body = await res.json();
  if (!res.ok) throw new Error(body.error || res.statusText);
  return body;
}

function clearView() {
  if (events) events.close();
  events = null;
  plots.forEach(p => p.destroy());
  plots = [];
  timers.forEach(clearInterval);
  timers = [];
}

// What the live stream brought last, per trial the latest step (for people debugging, and for the tests).
window.ladderLive = {events: 0, steps: {}};

function follow(search, onEvent) {
  events = new EventSource('/api/events' + (search ? '?search=' + search : ''));
  events.onopen = () => { statusEl.textContent = 'live'; statusEl.className = ''; };
  events.onerror = () => { statusEl.textContent = 'disconnected, retrying…'; statusEl.className = 'down'; };
  // The server's last event when the session's token was revoked or expired: no retry, say why.
  events.addEventListener('ended', m => { events.close(); statusEl.textContent = JSON.parse(m.data).error; statusEl.className = 'down'; });
  events.onmessage = m => {
    const ev = JSON.parse(m.data);
    window.ladderLive.events++;
    if (ev.kind === 'TRIAL_METRICS') window.ladderLive.steps[ev.trial.id] = +ev.metrics.step || 0;
    onEvent(ev);
  };
}

// Tick steps of an axis that counts (trial numbers, steps): whole numbers only, never 0.5.
const WHOLE_STEPS = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1e3, 2e3, 2.5e3, 5e3, 1e4, 2e4, 2.5e4, 5e4, 1e5, 2e5,
  2.5e5, 5e5, 1e6, 2e6, 2.5e6, 5e6, 1e7, 1e8, 1e9];

// A uPlot chart with a title on each axis: `o.xlabel` (default 'step') and `o.ylabel` (what the values are: a
// metric's name, seconds per step). The x axis counts (whole-number ticks) unless `o.xvalues` says how to write
// its ticks (node-hours); `o.width` sets its width (default: its card's, 320 to 900 px).
function plot(el, title, series, data, o) {
  const width = o.width || Math.max(320, Math.min(el.clientWidth || 640, 900));
  const xlabel = o.xlabel || 'step';
  const x = o.xvalues ? {label: xlabel, values: o.xvalues} : {label: xlabel, incrs: WHOLE_STEPS};
  const p = new uPlot({title, width, height: 260, scales: {x: {time: false}}, series: [{label: xlabel}].concat(series),
    axes: [x, {label: o.ylabel}]}, data, el);
  plots.push(p);
  return p;
}

// ---------------------------------------------------------------------------------------------------------------
// #/ : every search
async function showSearches() {
  const r = await api('searches');
  const rows = (r.searches || []).slice().reverse().map(s => `<tr class="${word(s.state)}">
    <td><a href="#/search/${s.id}">${esc(s.id)}</a></td><td>${esc(s.name)}</td><td>${word(s.state)}</td>
    <td>${s.completed || 0}/${s.max_trials}</td><td>${s.running || 0}</td><td>${s.pending || 0}</td><td>${s.failed || 0}</td>
    <td>${s.best_trial_id ? esc(s.objective_metric) + ' ' + num(s.best_objective) : '-'}</td><td>${nodeHours(s.node_seconds)}</td></tr>`).join('');
  view.innerHTML = `<h1>Searches</h1><table id="searches"><thead><tr><th>id</th><th>name</th><th>state</th><th>done</th>
    <th>running</th><th>queued</th><th>failed</th><th>best</th><th>node-hours</th></tr></thead><tbody>${rows}</tbody></table>`;
  follow(0, ev => { if (ev.kind === 'SEARCH_UPDATED') debounce(showSearchesAgain); });
}
let pending = null;
function debounce(fn) { if (!pending) pending = setTimeout(() => { pending = null; fn(); }, 500); }
function showSearchesAgain() { if (location.hash === '' || location.hash === '#/') route(); }

// ---------------------------------------------------------------------------------------------------------------
// #/search/ID : its history, the trial table, live; a hero run's page instead leads with its plan (hero.js)
// Every trial of a search: the API answers a page (5,000 by default) and the token of the next.
async function allTrials(id) {
  let trials = [], token = '0';
  do {
    const page = await api('searches/' + id + '/trials?view=table&page_size=50000&page_token=' + token);
    trials = trials.concat(page.trials || []);
    token = page.next_page_token || '0';
  } while (token !== '0');
  return trials;
}
async function showSearch(id) {
  const [{search}, trials] = await Promise.all([api('searches/' + id), allTrials(id)]);
  const plan = planOf(search);
  // The curves' request goes out now; the other charts are drawn while the server reads them.
  const perTrial = Math.max(10, Math.min(1000, Math.floor(150000 / Math.max(1, (trials || []).length))));
  const rungs = (search.rungs || []).length && search.rung_metric !== 'nodes' ?
    '&rung_metric=' + encodeURIComponent(search.rung_metric) + '&rungs=' + search.rungs.join(',') : '';
  const curvesAnswer = plan ? null : api('searches/' + id + '/curves?metric=' + encodeURIComponent(search.objective_metric) +
    '&per_trial=' + perTrial + rungs);
  // The table's answer is as old as its request: a running trial's node-seconds go on from then.
  const asked = Date.now() / 1000;
  (trials || []).forEach(t => { t.sent_unix = asked; });
  const state = {search, trials: new Map((trials || []).map(t => [t.id, t])), sort: 'number', filter: '', page: 0};
  view.innerHTML = `<h1 id="title"></h1>` + (plan ? heroSections() : `
    <div class="cards"><div class="card"><div id="history"></div></div><div class="card"><div id="curves"></div></div>
      <div class="card"><div id="cost"></div></div></div>
    <div id="workflow"></div>
    <h2>Parameters</h2><div class="cards"><div class="card" id="parallel"></div><div class="card" id="importance"></div></div>
    <div class="cards" id="slices"></div>
    <h2>Distribution and contour</h2><div class="cards"><div class="card" id="pareto"></div><div class="card"><div id="edf"></div></div>
      <div class="card" id="contour"></div></div>
    <h2>Timeline</h2><div class="card wide" id="timeline"></div>`) + `
    <h2>Trials</h2><div class="controls">filter <select id="filter"><option value="">all</option>
    ${['RUNNING', 'PENDING', 'COMPLETED', 'FAILED', 'CANCELLED'].map(s => `<option>${s}</option>`).join('')}</select>
    ${ended(search) ? '' : '<button id="cancel">cancel the search</button>'}<span id="msg"></span>
    <button id="prev">&lt;</button><span id="trial-count"></span><button id="next">&gt;</button></div>
    <table id="trials"><thead><tr>${['id', 'number', 'state', 'nodes', 'objective', 'rung', 'attempt', 'elapsed', 'node-h', 'params', 'note']
      .map(h => `<th data-k="${h}">${h}</th>`).join('')}</tr></thead><tbody></tbody></table>
    <h2>Events</h2><div class="log" id="log"></div>`;
  document.getElementById('filter').onchange = e => { state.filter = e.target.value; state.page = 0; drawTable(state); };
  document.getElementById('prev').onclick = () => { state.page = Math.max(0, state.page - 1); drawTable(state); };
  document.getElementById('next').onclick = () => { state.page++; drawTable(state); };
  document.querySelectorAll('#trials th').forEach(th => th.onclick = () => { state.sort = th.dataset.k; drawTable(state); });
  const cancel = document.getElementById('cancel');
  if (cancel) cancel.onclick = async () => {
    if (!confirm('Cancel search ' + id + '? Its running trials are stopped.')) return;
    try {
      await api('searches/' + id + '/cancel', {method: 'POST', headers: {'X-CSRF-Token': csrf}});
      document.getElementById('msg').textContent = 'cancelled';
    } catch (e) { document.getElementById('msg').textContent = e.message; }
  };
  // A hero run's page: its plan, band and extrapolation; any other search's: its history, cost, parameters, curves.
  let hero = null, history = null, cost = null, curves = null, edf = null;
  if (plan) {
    hero = await drawHero(state, plan);
  } else {
    history = drawHistory(state);
    cost = drawCost(state);
    drawParameters(state);
    edf = drawEdf(state);
    drawPareto(state);
    drawContour(state);
    drawTimeline(state);
    drawWorkflow(state);
    curves = await drawCurves(state, curvesAnswer);
  }
  drawTitle(state);
  drawTable(state);
  const log = document.getElementById('log');
  follow(id, ev => {
    if (ev.kind === 'SEARCH_UPDATED') { state.search = ev.search; drawTitle(state); if (!hero) drawPareto(state); }
    if (ev.kind === 'TRIAL_UPDATED') {
      ev.trial.sent_unix = ev.time_unix;
      state.trials.set(ev.trial.id, ev.trial);
      debounce(() => {
        drawTable(state);
        if (hero) return hero.update();
        history.redraw(); cost.redraw(); curves.redraw(); drawParameters(state);
        edf.redraw(); drawPareto(state); drawContour(state); drawTimeline(state);
      });
    }
    if (ev.kind === 'TRIAL_METRICS') (hero || curves).add(ev.trial.id, ev.metrics);
    if (ev.kind === 'JOURNAL') {
      const j = ev.journal, line = document.createElement('div');
      line.textContent = new Date(j.time_unix * 1000).toLocaleTimeString() + ' ' + j.kind +
        (j.trial_id ? ' trial ' + j.trial_id : '') + (j.detail ? ': ' + j.detail : '');
      log.prepend(line);
      while (log.childElementCount > 500) log.lastElementChild.remove();  // a page open for days stays small
    }
  });
}

// A search that has ended (completed, cancelled or failed) has nothing left to cancel.
function ended(s) { return ['SEARCH_COMPLETED', 'SEARCH_CANCELLED', 'SEARCH_FAILED'].includes(s.state); }

function drawTitle(st) {
  const s = st.search;
  if (ended(s)) document.getElementById('cancel')?.remove();
  document.getElementById('title').innerHTML = (planOf(s) ? 'hero run — ' : '') + `search ${esc(s.id)} '${esc(s.name)}' — ${word(s.state)}: ` +
    `${s.completed || 0} completed, ${s.running || 0} running, ${s.pending || 0} queued, ${s.failed || 0} failed` +
    `, ${nodeHours(s.node_seconds)} node-hours` +
    (s.best_trial_id ? `; best ${esc(s.objective_metric)} ${num(s.best_objective)} (trial ${s.best_trial_number || 0})` : '') +
    (s.error ? ` <span class="error">${esc(s.error)}</span>` : '');
}

const PAGE = 200;

function drawTable(st) {
  const key = st.sort, now = Date.now() / 1000;
  const val = t => ({id: +t.id, number: t.number || 0, state: t.state, nodes: (t.placement || []).length,
    objective: t.has_objective ? t.objective : -Infinity, attempt: t.attempt || 0, rung: t.rung || 0,
    elapsed: t.started_unix ? (t.finished_unix || now) - t.started_unix : 0, 'node-h': nodeSeconds(t),
    params: params(t), note: t.error || ''})[key];
  const all = [...st.trials.values()].filter(t => !st.filter || word(t.state) === st.filter)
    .map(t => [val(t), t]).sort((a, b) => a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0).map(p => p[1]);
  // A page of rows at a time: a 10,000-trial search stays quick to draw and to sort.
  const pages = Math.max(1, Math.ceil(all.length / PAGE));
  st.page = Math.min(st.page, pages - 1);
  const rows = all.slice(st.page * PAGE, (st.page + 1) * PAGE);
  const count = document.getElementById('trial-count');
  count.textContent = ` ${all.length ? st.page * PAGE + 1 : 0}–${st.page * PAGE + rows.length} of ${all.length} `;
  count.dataset.total = all.length;
  document.querySelector('#trials tbody').innerHTML = rows.map(t => `<tr class="${word(t.state)}" data-id="${esc(t.id)}">
    <td><a href="#/trial/${esc(t.id)}">${esc(t.id)}</a></td><td>${t.number || 0}${probeTag(t)}</td><td>${word(t.state)}</td>
    <td>${esc((t.placement || []).map(p => p.node_id).join(',') || '-')}</td><td>${t.has_objective ? num(t.objective) : '-'}${infeasibleTag(st.search, t)}</td>
    <td>${rungLabel(st.search, t)}</td><td>${t.attempt || 0}</td><td>${since(t.started_unix, t.finished_unix)}</td>
    <td>${nodeHours(nodeSeconds(t))}</td><td>${esc(params(t))}</td>
    <td class="note">${esc([t.infeasible ? 'broke ' + brokenConstraints(st.search, t) : '', t.error].filter(w => w).join('; '))}</td></tr>`).join('');
}

// The objective of every ended trial by its number, and the best so far.
function drawHistory(st) {
  const el = document.getElementById('history');
  const data = () => {
    const done = [...st.trials.values()].filter(t => t.has_objective).sort((a, b) => (a.number || 0) - (b.number || 0));
    const max = st.search.direction === 'MAXIMIZE';
    let best = null;
    const xs = [], ys = [], bs = [];
    for (const t of done) {
      if (!t.infeasible) best = best === null ? t.objective : max ? Math.max(best, t.objective) : Math.min(best, t.objective);
      xs.push(t.number || 0); ys.push(t.objective); bs.push(best);
    }
    return [xs, ys, bs];
  };
  const p = plot(el, 'optimization history: ' + st.search.objective_metric,
    [{label: 'trial', stroke: 'transparent', points: {show: true, size: 6, fill: '#0b6bcb'}},
     {label: 'best so far', stroke: '#18794e', width: 2}], data(), {xlabel: 'trial number', ylabel: st.search.objective_metric});
  return {redraw: () => p.setData(data())};
}

// The best objective against the node-hours spent: each ended trial adds its node-hours when it ends (a multi-node
// trial costs its nodes times its time; what Optuna's history cannot show).
function drawCost(st) {
  const el = document.getElementById('cost');
  const data = () => {
    const ended = [...st.trials.values()].filter(t => t.finished_unix).sort((a, b) => a.finished_unix - b.finished_unix);
    const max = st.search.direction === 'MAXIMIZE';
    let spent = 0, best = null;
    const xs = [], bs = [];
    for (const t of ended) {
      spent += (+t.node_seconds || 0) / 3600;
      if (t.has_objective && !t.workflow_step && !t.probe && !t.infeasible) {
        best = best === null ? t.objective : max ? Math.max(best, t.objective) : Math.min(best, t.objective);
      }
      if (best !== null) { xs.push(spent); bs.push(best); }
    }
    return [xs, bs];
  };
  const p = plot(el, 'best ' + st.search.objective_metric + ' against node-hours spent',
    [{label: 'best so far', stroke: '#6b3fa0', width: 2}], data(),
    {xlabel: 'node-hours', xvalues: (u, ticks) => ticks.map(v => num(v)), ylabel: 'best ' + st.search.objective_metric});
  return {redraw: () => p.setData(data())};
}

// The ensemble: its members, their weights, its metric against the best single trial.
function drawWorkflow(st) {
  const el = document.getElementById('workflow');
  const e = st.search.ensemble;
  if (!e) return;
  el.innerHTML = e.error ? `<h2>Ensemble</h2><p class="error">${esc(e.error)}</p>` :
    `<h2>Ensemble</h2><p>${esc(e.metric)} <b>${num(e.value)}</b> with ${(e.members || []).length} members, against
     ${num(e.best_single_value)} for the best single trial (${esc(e.best_single_trial_id)}); ${e.candidates || 0} candidates` +
    (e.retrain_trial_id ? `; retrained together by <a href="#/trial/${esc(e.retrain_trial_id)}">trial ${esc(e.retrain_trial_id)}</a>` : '') +
    `</p><table id="ensemble"><thead><tr><th>trial</th><th>number</th><th>weight</th></tr></thead><tbody>` +
    (e.members || []).map(m => `<tr><td><a href="#/trial/${esc(m.trial_id)}">${esc(m.trial_id)}</a></td><td>${m.trial_number || 0}</td>
     <td>${num(m.weight)}</td></tr>`).join('') + '</tbody></table>';
}

// ---------------------------------------------------------------------------------------------------------------
// #/trial/ID
// A command, one element per argument: an argument stays on one line unless it is longer than a line (then it
// breaks where the line ends), so a long command wraps inside the window and still reads argument by argument.
function commandHtml(argv) {
  return '<code class="command">' + (argv || []).map(a => `<span>${esc(a)}</span>`).join(' ') + '</code>';
}

async function showTrial(id) {
  const {trial: t} = await api('trials/' + id + '?metrics=1');
  t.sent_unix = Date.now() / 1000;
  const {search: s} = await api('searches/' + t.search_id);
  const rows = [['search', `<a href="#/search/${esc(t.search_id)}">${esc(t.search_id)}</a>`], ['number', t.number || 0],
    ['state', word(t.state)], ['parameters', esc(params(t))], ['command', commandHtml(t.command)],
    ['node group', esc((t.placement || []).map(p => p.node_id + ' slots ' + (p.slots || []).join(',')).join('; ') || '-')],
    ['attempt', (t.attempt || 0) + 1], ['preemptions', t.preemptions || 0], ['objective', t.has_objective ? num(t.objective) : '-'],
    ['rung', rungLabel(s, t)], ['node-hours', nodeHours(nodeSeconds(t))],
    ['note / error', esc(t.error || '-')], ['checkpoint', esc(t.checkpoint_dir || '-')],
    ['log', 'stderr.log of each rank in the trial directory of ladder-worker on ' + esc((t.placement || [])[0]?.node_id || '-')]];
  const attempts = (t.attempts || []).map(a => `<tr><td>${(a.attempt || 0) + 1}</td><td>${esc((a.nodes || []).join(','))}</td>
    <td>${new Date(a.started_unix * 1000).toLocaleString()}</td><td>${since(a.started_unix, a.ended_unix)}</td>
    <td>${esc(a.outcome || (a.ended_unix ? '' : 'running'))}</td></tr>`).join('');
  const history = (t.history || []).map(j => `<div>${new Date(j.time_unix * 1000).toLocaleTimeString()} ${esc(j.kind)}` +
    `${j.detail ? ': ' + esc(j.detail) : ''}</div>`).join('');
  view.innerHTML = `<h1>trial ${esc(t.id)}</h1><table class="kv">${rows.map(([k, v]) => `<tr><td>${k}</td><td>${v}</td></tr>`).join('')}</table>
    <h2>Runs</h2><table id="attempts"><thead><tr><th>attempt</th><th>nodes</th><th>started</th><th>took</th><th>outcome</th></tr></thead>
    <tbody>${attempts || '<tr><td colspan=5>not started yet</td></tr>'}</tbody></table>
    <h2>Journal</h2><div class="log" id="history">${history || 'nothing yet'}</div>
    <h2>Step time per rank</h2><div id="ranks"></div>
    <h2>Metrics</h2><div class="cards" id="metrics"></div>
    <h2>Log tail (rank 0's stderr)</h2><pre class="log" id="log-tail">${esc(t.log_tail || '(empty)')}</pre>`;
  const names = [...new Set([].concat(...(t.metrics || []).map(p => Object.keys(p.values || {}))))].sort();
  drawRanks(t, names.filter(n => /^step_time_s\/rank\d+$/.test(n)));
  // While it runs, its log tail follows (every 3 s), and a change of state redraws the page.
  if (t.state === 'TRIAL_RUNNING' || t.state === 'TRIAL_PENDING') {
    timers.push(setInterval(async () => {
      const {trial: now} = await api('trials/' + id).catch(() => ({}));
      if (!now) return;
      if (now.state !== t.state) return route();
      document.getElementById('log-tail').textContent = now.log_tail || '(empty)';
    }, 3000));
  }
  for (const name of names.filter(n => !/\/rank\d+$/.test(n))) {
    const pts = (t.metrics || []).filter(p => p.values && name in p.values);
    const card = document.createElement('div');
    card.className = 'card';
    document.getElementById('metrics').append(card);
    plot(card, name, [{label: name, stroke: '#0b6bcb'}], [pts.map(p => +p.step || 0), pts.map(p => p.values[name])],
      {ylabel: name});
  }
}

// A straggler: a rank whose step time is more than 10% above the median of the ranks' (the others wait for it in
// every allreduce). The ranks' step times come from the metrics lines (`step_time_s/rankN`, ladder-train prints them).
const STRAGGLER = 1.10;
function stragglers(values) {
  const sorted = values.filter(isFinite).slice().sort((a, b) => a - b);
  if (sorted.length < 2) return values.map(() => false);
  const median = sorted.length % 2 ? sorted[(sorted.length - 1) / 2] : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
  return values.map(v => isFinite(v) && v > STRAGGLER * median);
}

function drawRanks(t, names) {
  const el = document.getElementById('ranks');
  if (!names.length) {
    el.innerHTML = '<p>No per-rank step times: the trial prints none (ladder-train does with more than one rank: ' +
      '<code>step_time_s/rank0</code>, <code>step_time_s/rank1</code>, …).</p>';
    return;
  }
  names.sort((a, b) => +a.split('rank')[1] - +b.split('rank')[1]);
  const pts = (t.metrics || []).filter(p => p.values && names.some(n => n in p.values));
  const last = pts[pts.length - 1].values;
  const latest = names.map(n => last[n]);
  const slow = stragglers(latest);
  const sorted = latest.filter(isFinite).slice().sort((a, b) => a - b);
  el.innerHTML = `<div class="cards"><div class="card" id="ranks-chart"></div><div class="card"><div class="title">latest (step ${esc(pts[pts.length - 1].step)})</div>
    <table id="rank-table"><thead><tr><th>rank</th><th>s / step</th><th></th></tr></thead><tbody>` +
    names.map((n, i) => `<tr class="${slow[i] ? 'straggler' : ''}"><td>${esc(n.split('/')[1])}</td><td>${num(latest[i])}</td>
      <td>${slow[i] ? 'straggler: ' + num(latest[i] / sorted[Math.floor((sorted.length - 1) / 2)]) + '× the median' : ''}</td></tr>`).join('') +
    `</tbody></table><p class="hint">straggler: more than ${Math.round((STRAGGLER - 1) * 100)}% above the ranks' median</p></div></div>`;
  const palette = ['#0b6bcb', '#18794e', '#c4320a', '#6b3fa0', '#b7791f', '#0f766e', '#9d174d', '#4b5563'];
  plot(document.getElementById('ranks-chart'), 'step time per rank (s, outside allreduce waits)',
    names.map((n, i) => ({label: n.split('/')[1] + (slow[i] ? ' (straggler)' : ''), stroke: palette[i % palette.length],
      width: slow[i] ? 2.5 : 1, dash: slow[i] ? [6, 3] : undefined})),
    [pts.map(p => +p.step || 0)].concat(names.map(n => pts.map(p => n in p.values ? p.values[n] : null))),
    {ylabel: 's / step'});
}

// ---------------------------------------------------------------------------------------------------------------
// #/nodes : the allocation map, by rack
async function showNodes() {
  const r = await api('server');
  const racks = new Map();
  for (const w of r.workers || []) {
    const rack = (w.resources && w.resources.labels && w.resources.labels.rack) || '-';
    if (!racks.has(rack)) racks.set(rack, []);
    racks.get(rack).push(w);
  }
  view.innerHTML = '<h1>Nodes</h1>' + [...racks.entries()].map(([rack, ws]) => `<h2>rack ${esc(rack)}</h2>
    <table id="nodes"><thead><tr><th>node</th><th>state</th><th>busy slots</th><th>gpus</th><th>failures</th><th>why</th></tr></thead>
    <tbody>${ws.map(w => `<tr class="${word(w.state)}"><td>${esc(w.node_id)}</td><td>${word(w.state)}</td>
    <td>${w.busy_slots || 0}/${(w.resources || {}).slots || 0}</td><td>${(w.resources || {}).gpus || 0}</td>
    <td>${w.recent_failures || 0}</td><td>${esc(w.state_reason || '')}</td></tr>`).join('')}</tbody></table>`).join('');
  follow(0, ev => { if (ev.kind === 'WORKER_UPDATED') debounce(() => { if (location.hash === '#/nodes') route(); }); });
}

async function route() {
  clearView();
  const h = location.hash || '#/';
  try {
    let m;
    if ((m = h.match(/^#\/search\/(\d+)$/))) await showSearch(m[1]);
    else if ((m = h.match(/^#\/trial\/(\d+)$/))) await showTrial(m[1]);
    else if (h === '#/nodes') await showNodes();
    else await showSearches();
    document.body.dataset.readyMs = Math.round(performance.now());
    document.body.dataset.ready = h;  // tests wait for this
  } catch (e) {
    if (e.message !== 'unauthorized') view.innerHTML = `<p class="error">${esc(e.message)}</p>`;
    document.body.dataset.ready = 'error';
  }
}

window.addEventListener('hashchange', route);
api('session').then(s => { csrf = s.csrf; }).catch(() => {}).finally(route);

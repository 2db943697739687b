// ladder's web dashboard: three more views of a search (issue 42) — the empirical distribution of its objective
// values, a contour of the objective over two chosen parameters, and the timeline of its trials on the nodes.
// Each view keeps what it drew on its element (el.view) so that a test compares it with the API's numbers.
'use strict';

// The trials a search's views are about: completed, with an objective, not a probe or a workflow step.
function scored(st) {
  return [...st.trials.values()].filter(t => t.has_objective && !t.workflow_step && !t.probe);
}

// The empirical distribution function: the fraction of the completed trials whose objective is at most x (Optuna's
// EDF plot): where a search's values pile up, and how much of it was spent far from the best.
function drawEdf(st) {
  const el = document.getElementById('edf');
  const data = () => {
    const xs = scored(st).map(t => t.objective).sort((a, b) => a - b);
    el.view = {x: xs, y: xs.map((_, i) => (i + 1) / xs.length)};
    return [el.view.x, el.view.y];
  };
  const p = plot(el, 'empirical distribution: ' + st.search.objective_metric,
    [{label: 'fraction of trials ≤ x', stroke: '#0b6bcb', width: 2, paths: uPlot.paths.stepped({align: 1})}], data(),
    {xlabel: st.search.objective_metric, xvalues: (u, ticks) => ticks.map(v => num(v)), ylabel: 'fraction of trials'});
  return {redraw: () => p.setData(data())};
}

// A numeric parameter's axis: log-scaled where every value is positive and they span more than two decades.
function axisOf(values) {
  const f = values.filter(isFinite);
  const lo = Math.min(...f), hi = Math.max(...f);
  const log = lo > 0 && hi / lo > 100;
  const t = v => log ? Math.log10(v) : v;
  return {lo: t(lo), hi: t(hi), t, log};
}

// The objective over two parameters: the completed trials as points coloured by rank (green best), over a field
// interpolated between them (inverse-distance weighting on a 48 × 48 grid, in the axes' own scales, normalised).
function drawContour(st) {
  const el = document.getElementById('contour');
  if (!el) return;
  const {cols, y, maximize} = paramTable(st);
  const numeric = cols.filter(c => !c.cats.length && c.values.some(isFinite));
  el.innerHTML = '<div class="title">contour of ' + esc(st.search.objective_metric) + '</div>';
  el.view = null;
  if (numeric.length < 2 || y.length < 2) { el.append('needs two numeric parameters and two completed trials'); return; }
  const names = numeric.map(c => c.name);
  st.contour = st.contour && names.includes(st.contour[0]) && names.includes(st.contour[1]) ? st.contour : [names[0], names[1]];
  const pick = (i) => `<select data-axis="${i}">${names.map(n => `<option${n === st.contour[i] ? ' selected' : ''}>${esc(n)}</option>`).join('')}</select>`;
  const controls = document.createElement('div');
  controls.className = 'controls';
  controls.innerHTML = 'x ' + pick(0) + ' y ' + pick(1);
  controls.querySelectorAll('select').forEach(s => s.onchange = e => { st.contour[+e.target.dataset.axis] = e.target.value; drawContour(st); });
  el.append(controls);
  const cx = numeric.find(c => c.name === st.contour[0]), cy = numeric.find(c => c.name === st.contour[1]);
  const pts = y.map((z, i) => [cx.values[i], cy.values[i], z]).filter(p => isFinite(p[0]) && isFinite(p[1]));
  const ax = axisOf(pts.map(p => p[0])), ay = axisOf(pts.map(p => p[1]));
  const c = canvasChart(el, 420, 340, {left: 56, right: 12, top: 8, bottom: 34});
  const {X, Y} = c.scale([ax.lo, ax.hi], [ay.lo, ay.hi]);
  const colour = rankColour(pts.map(p => p[2]), maximize);
  const zs = pts.map(p => p[2]), zlo = Math.min(...zs), zhi = Math.max(...zs);
  const u = (v, a) => a.hi === a.lo ? 0.5 : (a.t(v) - a.lo) / (a.hi - a.lo);
  const N = 48, f = c.frame, cw = (f.x1 - f.x0) / N, ch = (f.y1 - f.y0) / N;
  for (let i = 0; i < N; i++) {
    for (let j = 0; j < N; j++) {
      const gx = (i + 0.5) / N, gy = (j + 0.5) / N;
      let sw = 0, sz = 0;
      for (const p of pts) {
        const d2 = (u(p[0], ax) - gx) ** 2 + (u(p[1], ay) - gy) ** 2 + 1e-9, w = 1 / (d2 * d2);
        sw += w; sz += w * p[2];
      }
      let r = zhi === zlo ? 0.5 : (sz / sw - zlo) / (zhi - zlo);
      if (!maximize) r = 1 - r;
      c.ctx.fillStyle = `hsla(${Math.round(120 * r)}, 60%, 55%, 0.35)`;
      c.ctx.fillRect(f.x0 + i * cw, f.y1 - (j + 1) * ch, cw + 0.5, ch + 0.5);
    }
  }
  for (const p of pts) {
    c.ctx.beginPath();
    c.ctx.arc(X(ax.t(p[0])), Y(ay.t(p[1])), 4, 0, 2 * Math.PI);
    c.ctx.fillStyle = colour(p[2]);
    c.ctx.fill();
    c.ctx.strokeStyle = '#fff';
    c.ctx.stroke();
  }
  const label = a => v => a.log ? num(10 ** v) : num(v);
  c.axes([ax.lo, ax.hi], [ay.lo, ay.hi], {x: endLabels(ax.lo, ax.hi, label(ax)), y: endLabels(ay.lo, ay.hi, label(ay))},
    {x: cx.name + (ax.log ? ' (log)' : ''), y: cy.name + (ay.log ? ' (log)' : '')});
  el.view = {x: cx.name, y: cy.name, points: pts};
}

// The timeline: every trial that started as a bar on each of its nodes' slots (a row per node and slot) from its
// start to its end (or now),
// coloured by state; a trial that was requeued (after a preemption, a lost node or a failure) is hatched and
// counts its attempts; a straggler — a completed trial that ran more than twice the median completed trial's
// time, and over a second longer — is outlined in red. How a search used the cluster, which Optuna's timeline (one row per trial) cannot show.
const STATE_COLOUR = {RUNNING: '#0b6bcb', COMPLETED: '#18794e', FAILED: '#c4320a', CANCELLED: '#8a8f98', PENDING: '#c9ced6'};
function drawTimeline(st) {
  const el = document.getElementById('timeline');
  if (!el) return;
  const now = Date.now() / 1000;
  const started = [...st.trials.values()].filter(t => t.started_unix);
  el.innerHTML = '<div class="title">timeline: trials on their nodes over wall time</div>';
  el.view = null;
  if (!started.length) { el.append('no trial has started yet'); return; }
  const times = started.filter(t => word(t.state) === 'COMPLETED').map(t => t.finished_unix - t.started_unix).sort((a, b) => a - b);
  const median = times.length ? times[Math.floor((times.length - 1) / 2)] : Infinity;
  const bars = [];
  for (const t of started) {
    const t1 = t.finished_unix || now;
    const straggler = word(t.state) === 'COMPLETED' && times.length >= 3 && t1 - t.started_unix > 2 * median &&
      t1 - t.started_unix > median + 1;  // a second's jitter of a process start is no straggler
    // One bar per slot it held (a row per node and slot: trials that share a node at once do not overlap).
    const held = (t.placement || []).flatMap(p => ((p.slots || []).length ? p.slots : [0]).map(slot => [p.node_id, slot]));
    for (const [node, slot] of held.length ? held : [['-', 0]]) {
      bars.push({trial: t.id, number: t.number || 0, node, slot, row: node + ' s' + slot, t0: t.started_unix, t1,
        state: word(t.state), attempt: t.attempt || 0, straggler});
    }
  }
  const rows = [...new Map(bars.map(b => [b.row, b])).values()]
    .sort((a, b) => a.node < b.node ? -1 : a.node > b.node ? 1 : a.slot - b.slot).map(b => b.row);
  const tlo = Math.min(...bars.map(b => b.t0)), thi = Math.max(...bars.map(b => b.t1));
  const rowH = 18, width = Math.max(640, Math.min((el.clientWidth || 926) - 26, 1400));
  const c = canvasChart(el, width, 44 + rowH * rows.length, {left: 90, right: 12, top: 6, bottom: 34});
  const {X} = c.scale([0, thi - tlo], [0, 1]);
  const ctx = c.ctx;
  for (const b of bars) {
    const y0 = c.frame.y0 + rows.indexOf(b.row) * rowH + 2, x0 = X(b.t0 - tlo), w = Math.max(2, X(b.t1 - tlo) - x0);
    ctx.fillStyle = STATE_COLOUR[b.state] || '#777';
    ctx.fillRect(x0, y0, w, rowH - 4);
    if (b.attempt > 0) {  // requeued: hatched, with its attempt count
      ctx.strokeStyle = 'rgba(255,255,255,0.7)';
      for (let x = x0 - (rowH - 4); x < x0 + w; x += 6) {
        ctx.beginPath(); ctx.moveTo(Math.max(x, x0), y0 + rowH - 4 - Math.max(0, x0 - x)); ctx.lineTo(Math.min(x + rowH - 4, x0 + w), y0 + Math.max(0, x + rowH - 4 - x0 - w)); ctx.stroke();
      }
    }
    if (b.straggler) { ctx.strokeStyle = '#c4320a'; ctx.lineWidth = 2; ctx.strokeRect(x0, y0, w, rowH - 4); ctx.lineWidth = 1; }
    const text = '#' + b.number + (b.attempt > 0 ? ' ↻' + b.attempt : '');
    if (ctx.measureText(text).width + 4 < w) { ctx.fillStyle = '#fff'; ctx.fillText(text, x0 + 2, y0 + rowH - 8); }
  }
  const seconds = v => v < 1 ? (1000 * v).toFixed(0) + ' ms' : v < 120 ? v.toFixed(v < 10 ? 1 : 0) + ' s' : v < 7200 ? (v / 60).toFixed(1) + ' min' : (v / 3600).toFixed(1) + ' h';
  c.axes([0, thi - tlo], [0, 1], {x: endLabels(0, thi - tlo, seconds), y: []}, {x: 'wall time since the first start', y: ''});
  // The node names, one per row.
  for (let i = 0; i < rows.length; i++) {
    ctx.fillStyle = '#445';
    ctx.fillText(rows[i], 4, c.frame.y0 + i * rowH + rowH - 6);
  }
  const legend = document.createElement('div');
  legend.className = 'legend';
  legend.innerHTML = Object.entries(STATE_COLOUR).map(([s, col]) => `<span class="swatch" style="border-color:${col}"></span>${s.toLowerCase()}`).join(' ') +
    ' · hatched ↻N: requeued N times · red outline: a straggler (over twice the median trial time, and 1 s more)';
  el.append(legend);
  el.view = {rows, bars, median};
}

// Several objectives: every completed trial at its first two objectives' values, the Pareto front the coordinator
// keeps (Search.pareto_front) drawn filled and joined in the order of the first objective; with constraints the
// infeasible trials (never on the front) drawn red; hidden with one objective.
function drawPareto(st) {
  const el = document.getElementById('pareto');
  if (!el) return;
  const objectives = st.search.objectives || [];
  el.style.display = objectives.length >= 2 ? '' : 'none';
  el.view = null;
  if (objectives.length < 2) return;
  const [ox, oy] = objectives;
  const dir = o => (o.direction === 'MAXIMIZE' ? 'max' : 'min');
  el.innerHTML = `<div class="title">Pareto front: ${esc(ox.metric)} (${dir(ox)}) against ${esc(oy.metric)} (${dir(oy)})</div>`;
  const front = (st.search.pareto_front || []).map(String);
  const points = [...st.trials.values()].filter(t => (t.objectives || []).length >= 2)
    .map(t => [t.objectives[0], t.objectives[1], String(t.id), front.includes(String(t.id)), !!t.infeasible]);
  if (!points.length) { el.append('no completed trial yet'); return; }
  const xs = points.map(p => p[0]), ys = points.map(p => p[1]);
  const [xlo, xhi, ylo, yhi] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  const c = canvasChart(el, 420, 320, {left: 56, right: 12, top: 8, bottom: 34});
  const {X, Y} = c.scale([xlo, xhi], [ylo, yhi]);
  const ctx = c.ctx;
  const on = points.filter(p => p[3]).sort((a, b) => a[0] - b[0]);
  ctx.strokeStyle = '#18794e';
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  on.forEach((p, i) => (i ? ctx.lineTo(X(p[0]), Y(p[1])) : ctx.moveTo(X(p[0]), Y(p[1]))));
  ctx.stroke();
  for (const p of points) {
    ctx.beginPath();
    ctx.arc(X(p[0]), Y(p[1]), p[3] ? 5 : 3.5, 0, 2 * Math.PI);
    ctx.fillStyle = p[3] ? '#18794e' : p[4] ? '#c0392b' : '#aab2bf';
    ctx.fill();
  }
  c.axes([xlo, xhi], [ylo, yhi], {x: endLabels(xlo, xhi, num), y: endLabels(ylo, yhi, num)}, {x: ox.metric, y: oy.metric});
  const legend = document.createElement('div');
  legend.className = 'legend';
  const infeasible = points.filter(p => p[4]).length;
  legend.textContent = `${on.length} of ${points.length} completed trials on the front (green)` +
    ((st.search.constraints || []).length ? `, ${infeasible} infeasible (red: never on the front)` : '') +
    `; ladder trials ${st.search.id} --pareto lists them`;
  el.append(legend);
  el.view = {x: ox.metric, y: oy.metric, points, front};
}

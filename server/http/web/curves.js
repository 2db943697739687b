// ladder's web dashboard: a search's learning curves.
'use strict';

// Every trial's learning curve of the objective — one request for all of them (/curves), drawn on one canvas as
// polylines (fast at 10,000 trials and a million points); live points are added as they come, and the title counts
// the curves drawn (a trial that reports while the page is open adds one). Colours: running blue, completed green,
// stopped early grey, failed red.
// `answer`: the /curves request, sent with as many points per curve as a canvas can tell apart (all of them for a
// few trials, fewer for thousands).
async function drawCurves(st, answer) {
  const metric = st.search.objective_metric;
  const {trials: curves, rung_steps: rungSteps} = await answer;
  const byTrial = new Map(Object.entries(curves || {}));
  const marks = new Map(Object.entries(rungSteps || {}));
  const el = document.getElementById('curves');
  el.innerHTML = '<div class="title"></div>';
  const title = el.firstChild;
  const count = () => [...byTrial.values()].filter(pts => pts.some(p => p[1] !== null)).length;
  const setTitle = n => { title.textContent = `learning curves: ${metric} (${n} trial${n === 1 ? '' : 's'})`; };
  setTitle(count());  // the chart is as wide as the card its title makes, 320 px at least
  const width = Math.max(320, Math.min(el.clientWidth || 640, 900)), height = 260;
  const chart = canvasChart(el, width, height, {left: 60, right: 10, top: 10, bottom: 34});
  chart.canvas.id = 'curves-canvas';
  const legend = document.createElement('div');
  legend.className = 'legend';
  legend.innerHTML = '<span style="color:#0b6bcb">running</span> <span style="color:#18794e">completed</span> ' +
    '<span style="color:#888">stopped early</span> <span style="color:#c4320a">failed</span>' +
    (marks.size || (st.search.rungs || []).length ? ` · <b>●</b> where a trial reached a rung (${(st.search.rungs || []).map(num).join(', ')} ${esc(st.search.rung_metric)})` : '');
  el.append(legend);
  const colour = id => {
    const t = st.trials.get(id) || {};
    if (/stopped early/.test(t.error || '')) return 'rgba(120,120,120,.55)';
    return {TRIAL_RUNNING: '#0b6bcb', TRIAL_COMPLETED: '#18794e', TRIAL_FAILED: '#c4320a'}[t.state] || '#999';
  };
  const draw = () => {
    const ctx = chart.ctx;
    ctx.clearRect(0, 0, width, height);
    let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    for (const pts of byTrial.values()) for (const [s, v] of pts) {
      if (v === null) continue;
      x0 = Math.min(x0, s); x1 = Math.max(x1, s); y0 = Math.min(y0, v); y1 = Math.max(y1, v);
    }
    setTitle(count());
    if (!isFinite(x0)) {
      chart.axes([0, 1], [0, 1], {x: [], y: []}, {x: 'step', y: metric});
      ctx.fillStyle = '#445'; ctx.fillText('no points yet', chart.frame.x0 + 10, chart.frame.y0 + 20);
      return;
    }
    const {X, Y} = chart.scale([x0, x1], [y0, y1]);
    chart.axes([x0, x1], [y0, y1], {x: endLabels(x0, x1, String), y: endLabels(y0, y1, num)}, {x: 'step', y: metric});
    for (const [id, pts] of byTrial) {
      ctx.strokeStyle = colour(id); ctx.lineWidth = 1.2; ctx.beginPath();
      let pen = false;
      for (const [s, v] of pts) {
        if (v === null) { pen = false; continue; }
        pen ? ctx.lineTo(X(s), Y(v)) : ctx.moveTo(X(s), Y(v));
        pen = true;
      }
      ctx.stroke();
    }
    // Rungs: a dot on each curve where the trial reached one (the point it was judged at).
    for (const [id, steps] of marks) {
      const pts = byTrial.get(id) || [];
      ctx.fillStyle = colour(id);
      for (const s of steps) {
        const p = pts.find(q => q[0] >= s && q[1] !== null);
        if (!p) continue;
        ctx.beginPath(); ctx.arc(X(p[0]), Y(p[1]), 2.5, 0, 6.3); ctx.fill();
      }
    }
  };
  draw();
  let queued = false;
  return {add: (id, point) => {
    if (!point.values || !(metric in point.values)) return;
    if (!byTrial.has(id)) byTrial.set(id, []);
    byTrial.get(id).push([+point.step || 0, point.values[metric]]);
    if (!queued) { queued = true; setTimeout(() => { queued = false; draw(); }, 250); }
  }, redraw: draw};
}

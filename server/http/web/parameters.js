// ladder's web dashboard: a search's parameters — parallel coordinates, one slice plot per parameter, each
// parameter's importance.
'use strict';

// The parameters of the completed trials: parallel coordinates, one slice plot per parameter, and each
// parameter's importance by a random forest's permutation importance.
function paramValue(v) { return v === undefined ? undefined : v.float_value ?? (v.int_value !== undefined ? +v.int_value : v.string_value); }

function paramTable(st) {
  const done = [...st.trials.values()].filter(t => t.has_objective && !t.workflow_step && !t.probe);
  const names = [...new Set([].concat(...done.map(t => Object.keys(t.params || {}))))].sort();
  const cols = names.map(name => {
    const raw = done.map(t => paramValue((t.params || {})[name]));
    const cats = [...new Set(raw.filter(v => typeof v === 'string'))].sort();
    const values = raw.map(v => v === undefined ? NaN : typeof v === 'string' ? cats.indexOf(v) : +v);
    return {name, values, cats};
  });
  return {cols, y: done.map(t => t.objective), maximize: st.search.direction === 'MAXIMIZE'};
}

function canvasIn(el, width, height) {
  const c = document.createElement('canvas');
  c.width = width; c.height = height;
  el.append(c);
  const ctx = c.getContext('2d');
  ctx.font = '11px sans-serif';
  return ctx;
}

// Colour of an objective value: good (green) to bad (red), by rank.
function rankColour(y, maximize) {
  const sorted = y.slice().sort((a, b) => a - b);
  const rank = new Map();
  sorted.forEach((v, i) => { if (!rank.has(v)) rank.set(v, i); });
  return v => {
    let r = rank.get(v) / Math.max(1, sorted.length - 1);
    if (!maximize) r = 1 - r;
    return `hsl(${Math.round(120 * r)}, 70%, 40%)`;
  };
}

function drawParameters(st) {
  const {cols, y, maximize} = paramTable(st);
  const par = document.getElementById('parallel'), imp = document.getElementById('importance');
  const slices = document.getElementById('slices');
  if (!par) return;
  par.innerHTML = '<div class="title">parallel coordinates</div>';
  imp.innerHTML = '<div class="title">importance (random-forest permutation importance, 30 trees' +
    (y.length > 400 ? ', 400 of the trials' : '') + ')</div>';
  slices.innerHTML = '';
  if (!y.length || !cols.length) { par.append('no completed trial yet'); return; }
  const colour = rankColour(y, maximize);
  // Parallel coordinates: one axis per parameter and the objective.
  const axes = cols.map(c => ({name: c.name, values: c.values, cats: c.cats})).concat([{name: st.search.objective_metric, values: y, cats: []}]);
  const W = Math.max(420, 110 * axes.length), H = 260, T = 24, B = 30;
  const ctx = canvasIn(par, W, H);
  const scale = axes.map(a => { const f = a.values.filter(isFinite); return [Math.min(...f), Math.max(...f)]; });
  const X = i => 40 + i * (W - 80) / Math.max(1, axes.length - 1);
  const Y = (i, v) => { const [lo, hi] = scale[i]; return T + (hi === lo ? 0.5 : (hi - v) / (hi - lo)) * (H - T - B); };
  for (let r = 0; r < y.length; r++) {
    ctx.strokeStyle = colour(y[r]); ctx.globalAlpha = 0.6; ctx.beginPath();
    axes.forEach((a, i) => { const v = a.values[r]; if (!isFinite(v)) return; i ? ctx.lineTo(X(i), Y(i, v)) : ctx.moveTo(X(i), Y(i, v)); });
    ctx.stroke();
  }
  ctx.globalAlpha = 1; ctx.strokeStyle = '#334'; ctx.fillStyle = '#223';
  axes.forEach((a, i) => {
    ctx.beginPath(); ctx.moveTo(X(i), T); ctx.lineTo(X(i), H - B); ctx.stroke();
    ctx.textAlign = 'center';
    ctx.fillText(a.name.slice(0, 16), X(i), H - 10);
    // An axis's values beside it, on its right; the last axis's on its left (inside the canvas).
    const last = i === axes.length - 1, at = last ? X(i) - 3 : X(i) + 3;
    ctx.textAlign = last ? 'right' : 'left';
    ctx.fillText(a.cats.length ? a.cats[a.cats.length - 1] : num(scale[i][1]), at, T + 4);
    ctx.fillText(a.cats.length ? a.cats[0] : num(scale[i][0]), at, H - B);
  });
  ctx.textAlign = 'left';
  for (const c of cols) drawSlice(slices, c, y, colour, st.search.objective_metric);
  // At most 400 trials (every k-th) go into the forest: the ranking settles well before, and the page stays quick.
  const step = Math.max(1, Math.ceil(y.length / 400));
  const pick = arr => arr.filter((_, i) => i % step === 0);
  const scores = forestImportance(cols.map(c => pick(c.values)), pick(y));
  const total = scores.reduce((a, b) => a + Math.max(0, b), 0) || 1;
  imp.insertAdjacentHTML('beforeend', '<table>' + cols.map((c, i) => [c.name, Math.max(0, scores[i]) / total])
    .sort((a, b) => b[1] - a[1]).map(([n, s]) => `<tr><td>${esc(n)}</td><td><div style="background:#0b6bcb;height:.8em;width:${Math.round(200 * s)}px"></div></td><td>${(100 * s).toFixed(0)}%</td></tr>`).join('') + '</table>');
}

// One slice: the objective (y) against one parameter's value (x), a dot per completed trial. A categorical
// parameter's levels are equally spaced, each labelled (the two ends only past 8 levels).
function drawSlice(slices, c, y, colour, metric) {
  const card = document.createElement('div');
  card.className = 'card';
  card.innerHTML = `<div class="title">${esc(c.name)}</div>`;
  slices.append(card);
  const chart = canvasChart(card, 280, 190, {left: 58, right: 8, top: 8, bottom: 34});
  const f = c.values.filter(isFinite), x = [Math.min(...f), Math.max(...f)], ys = [Math.min(...y), Math.max(...y)];
  const xLabels = !c.cats.length ? endLabels(x[0], x[1], num) : c.cats.length > 8 ?
    endLabels(x[0], x[1], i => c.cats[i]) : c.cats.map((name, i) => [i, name]);
  chart.axes(x, ys, {x: xLabels, y: endLabels(ys[0], ys[1], num)}, {x: c.name, y: metric});
  const {X, Y} = chart.scale(x, ys), ctx = chart.ctx;
  c.values.forEach((v, r) => {
    if (!isFinite(v)) return;
    ctx.fillStyle = colour(y[r]); ctx.beginPath(); ctx.arc(X(v), Y(y[r]), 3, 0, 6.3); ctx.fill();
  });
}

// Permutation importance of a random forest (regression trees on bootstrap samples, a random third of the features
// at each split): how much the out-of-bag squared error grows when one feature's values are shuffled.
function forestImportance(features, y) {
  const n = y.length, d = features.length;
  if (n < 4 || d === 0) return features.map(() => 0);
  let seed = 12345;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const row = i => features.map(f => f[i]);
  const build = (idx, depth) => {
    const mean = idx.reduce((a, i) => a + y[i], 0) / idx.length;
    if (depth > 8 || idx.length < 4) return {mean};
    let best = null;
    for (let k = 0; k < d; k++) {
      if (rand() > Math.max(1 / 3, 1 / d) && !(k === d - 1 && !best)) continue;
      const vals = [...new Set(idx.map(i => features[k][i]).filter(isFinite))].sort((a, b) => a - b);
      for (let s = 0; s + 1 < vals.length; s += Math.max(1, Math.floor(vals.length / 8))) {
        const cut = (vals[s] + vals[s + 1]) / 2;
        const L = idx.filter(i => features[k][i] <= cut), R = idx.filter(i => !(features[k][i] <= cut));
        if (!L.length || !R.length) continue;
        const sse = part => { const m = part.reduce((a, i) => a + y[i], 0) / part.length; return part.reduce((a, i) => a + (y[i] - m) ** 2, 0); };
        const cost = sse(L) + sse(R);
        if (!best || cost < best.cost) best = {cost, k, cut, L, R};
      }
    }
    if (!best) return {mean};
    return {k: best.k, cut: best.cut, left: build(best.L, depth + 1), right: build(best.R, depth + 1)};
  };
  const predict = (node, x) => node.mean !== undefined ? node.mean : predict(x[node.k] <= node.cut ? node.left : node.right, x);
  const importance = new Array(d).fill(0);
  for (let t = 0; t < 30; t++) {
    const inBag = Array.from({length: n}, () => Math.floor(rand() * n));
    const bag = new Set(inBag), oob = [...Array(n).keys()].filter(i => !bag.has(i));
    if (!oob.length) continue;
    const tree = build(inBag, 0);
    const err = rows => rows.reduce((a, [x, i]) => a + (predict(tree, x) - y[i]) ** 2, 0) / rows.length;
    const base = err(oob.map(i => [row(i), i]));
    for (let k = 0; k < d; k++) {
      const shuffled = oob.map(i => features[k][i]).sort(() => rand() - 0.5);
      importance[k] += err(oob.map((i, j) => { const x = row(i); x[k] = shuffled[j]; return [x, i]; })) - base;
    }
  }
  return importance;
}


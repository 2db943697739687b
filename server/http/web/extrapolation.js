// ladder's web dashboard: a hero plan's extrapolation — the best learning rate against the global batch on log-log
// axes: each swept batch's best LR with its interval, each law's curve (the plan's own drawn thick), the probes,
// the target's LR interval, the stability edge where it was measured, and the LR the hero run used.
'use strict';

const LAW_COLOURS = {surface_fit: '#0b6bcb', power_fit: '#5b8fd6', lr_fit: '#6b3fa0', joint_fit: '#0f766e',
  noise_fit: '#b7791f', linear: '#888', sqrt: '#b0b0b0',
  // The climb's candidate laws (plan.extrapolation.laws with source "climb").
  power: '#1e40af', saturating: '#047857', surge: '#9d174d', 'power+edge': '#3b82f6', 'saturating+edge': '#10b981'};
const LAW_WORDS = {surface_fit: 'power law fitted to the loss surface', power_fit: 'power law through the best LRs',
  lr_fit: 'ε_max/(1+B_noise/B) through the best LRs', joint_fit: 'ε_max/(1+B_noise/B) tied to the measured noise scale',
  noise_fit: 'ε_max/(1+B_noise/B), B_noise measured', linear: 'linear rule (lr ∝ B)', sqrt: 'square-root rule (lr ∝ √B)',
  power: 'climb: power law on the loss surface', saturating: 'climb: ε_max/(1+B*/B), B* free',
  surge: 'climb: rises as √B, peaks at B_noise, then falls', 'power+edge': 'climb: power law capped at the stability edge',
  'saturating+edge': 'climb: ε_max/(1+B*/B) capped at the stability edge'};

// Labels at data values, lowest first, without two closer than `gap` pixels (the earlier one stays).
function spacedLabels(labels, pixel, gap) {
  const out = [];
  for (const l of labels.slice().sort((a, b) => a[0] - b[0])) {
    if (!out.length || Math.abs(pixel(l[0]) - pixel(out[out.length - 1][0])) >= gap) out.push(l);
  }
  return out;
}

// The climb's verdict at the target in words (plan.extrapolation.verdict; '' without one).
function verdictLine(v) {
  if (!v) return '';
  if (v.error) return `<p class="verdict">the laws were not judged: ${esc(v.error)}</p>`;
  const pct = r => typeof r === 'number' ? num(100 * r) + '%' : '-';
  return `<p class="verdict" id="verdict">${v.flagged ? '<b>flagged</b>: ' + esc(v.why) : 'not flagged'}; ` +
    `the climb's LR at ${esc(v.batch)}: ${num(v.lr)} (80% [${num(v.lr_80[0])}, ${num(v.lr_80[1])}], ` +
    `90% [${num(v.lr_90[0])}, ${num(v.lr_90[1])}]), predicted regret ${pct(v.regret.mean)} (p80 ${pct(v.regret.p80)})` +
    (v.undecided ? `<br>${esc(v.undecided)}` : '') + '</p>';
}

// Draws `x` (the plan's "extrapolation" object) into `el`; `hero`: {lr, loss, position} of the hero run once it
// has reported (null before). What was drawn, in data and pixels, is left in window.ladderExtrapolation.
function drawExtrapolation(el, x, plan, hero) {
  el.innerHTML = '<div class="title">best learning rate against global batch (log-log): the sweep, the laws, the target</div>';
  if (!x || !(x.swept || []).length) {
    el.insertAdjacentHTML('beforeend', '<p class="hint">This plan carries no fit to draw (it was made by a ladder ' +
      'older than the extrapolation view); <code>ladder promote SEARCH --dry-run</code> on the sweep shows it.</p>');
    window.ladderExtrapolation = null;
    return;
  }
  const log2 = Math.log2;
  const ok = v => typeof v === 'number' && v > 0 && isFinite(v);
  const laws = (x.laws || []).filter(l => (l.points || []).length);
  const probes = x.probes || [];
  const tgt = x.target || {}, tlr = tgt.lr || [];
  const edge = x.stability_edge;
  // The ranges: every batch and LR drawn, in log2.
  const bs = [], lrs = [];
  for (const s of x.swept) { bs.push(s.batch); lrs.push(...s.lr.filter(ok)); }
  for (const l of laws) for (const [b, v] of l.points) { bs.push(b); if (ok(v)) lrs.push(v); }
  for (const p of probes) { bs.push(p.batch); lrs.push(...(p.lrs || []).filter(ok)); }
  if (ok(tgt.batch)) bs.push(tgt.batch);
  lrs.push(...tlr.filter(ok));
  if (hero && ok(hero.lr)) lrs.push(hero.lr);
  if (edge && ok(edge[0])) lrs.push(edge[0]);
  // Padded (a third of an octave of batch, a twentieth of the LRs' span), so that no point sits on the frame.
  const lx0 = log2(Math.min(...bs)), lx1 = log2(Math.max(...bs)), ly0 = log2(Math.min(...lrs)), ly1 = log2(Math.max(...lrs));
  const pad = Math.max(0.05 * (ly1 - ly0), 0.1);
  const bx = [lx0 - 1 / 3, lx1 + 1 / 3], ly = [ly0 - pad, ly1 + pad];
  const width = Math.max(480, Math.min((el.clientWidth || 900) - 24, 1400)), height = 440;
  const chart = canvasChart(el, width, height, {left: 64, right: 16, top: 14, bottom: 36});
  chart.canvas.id = 'extrapolation-canvas';
  const {X, Y} = chart.scale(bx, ly);
  const px = b => X(log2(b)), py = v => Y(log2(v));
  // Axes labelled at the data: the swept batches, the target's and the axis's end; the lowest and highest LR
  // drawn and the plan's.
  const xl = spacedLabels(x.swept.map(s => [log2(s.batch), String(s.batch)])
    .concat(ok(tgt.batch) ? [[log2(tgt.batch), String(tgt.batch)]] : []), X, 40);
  if (X(lx1) - X(xl[xl.length - 1][0]) >= 40) xl.push([lx1, String(Math.round(2 ** lx1))]);
  const yl = spacedLabels([[ly0, num(2 ** ly0)], [ly1, num(2 ** ly1)]]
    .concat(ok(tlr[0]) ? [[log2(tlr[0]), num(tlr[0])]] : []), v => -Y(v), 16);
  chart.axes(bx, ly, {x: xl, y: yl}, {x: 'global batch (log scale)', y: 'peak learning rate (log scale)'}, true);
  const ctx = chart.ctx;
  // Text over the curves, readable: a white halo under each letter.
  const say = (text, tx, ty, colour) => {
    ctx.lineWidth = 4; ctx.strokeStyle = 'rgba(255,255,255,.9)'; ctx.lineJoin = 'round';
    ctx.strokeText(text, tx, ty); ctx.fillStyle = colour; ctx.fillText(text, tx, ty);
  };
  const drawn = {swept: [], laws: [], probes: [], target: null, edge: null, hero: null,
    xlabels: xl.map(l => l[1]), ylabels: yl.map(l => l[1]), width, height, frame: chart.frame};
  // The stability edge: a dashed line across.
  if (edge && ok(edge[0])) {
    ctx.strokeStyle = '#c4320a'; ctx.setLineDash([2, 4]); ctx.lineWidth = 1;
    ctx.beginPath(); ctx.moveTo(chart.frame.x0, py(edge[0])); ctx.lineTo(chart.frame.x1, py(edge[0])); ctx.stroke();
    ctx.setLineDash([]); ctx.textAlign = 'left';
    say('stability edge ' + num(edge[0]), chart.frame.x0 + 6, py(edge[0]) - 4, '#c4320a');
    drawn.edge = {lr: edge[0], y: py(edge[0])};
  }
  // The laws: the plan's own on top, thick.
  for (const l of laws.slice().sort((a, b) => a.chosen - b.chosen)) {
    ctx.strokeStyle = LAW_COLOURS[l.name] || '#445'; ctx.lineWidth = l.chosen ? 2.5 : 1.2;
    ctx.setLineDash(/^(linear|sqrt)$/.test(l.name) ? [6, 4] : l.consistent === false ? [2, 3] : []);
    ctx.beginPath();
    l.points.forEach(([b, v], i) => i ? ctx.lineTo(px(b), py(v)) : ctx.moveTo(px(b), py(v)));
    ctx.stroke();
    drawn.laws.push({name: l.name, chosen: !!l.chosen, points: l.points.length,
      first: [px(l.points[0][0]), py(l.points[0][1])], last: [px(l.points.at(-1)[0]), py(l.points.at(-1)[1])]});
  }
  ctx.setLineDash([]);
  // An interval: a vertical bar with caps.
  const bar = (b, lo, hi, colour, w) => {
    if (!ok(lo) || !ok(hi)) return;
    ctx.strokeStyle = colour; ctx.lineWidth = w;
    ctx.beginPath(); ctx.moveTo(px(b), py(lo)); ctx.lineTo(px(b), py(hi));
    ctx.moveTo(px(b) - 5, py(lo)); ctx.lineTo(px(b) + 5, py(lo)); ctx.moveTo(px(b) - 5, py(hi)); ctx.lineTo(px(b) + 5, py(hi));
    ctx.stroke();
  };
  // The swept optima: a dot with its interval; hollow where the optimum is at the edge of the LRs swept.
  for (const s of x.swept) {
    const [v, lo, hi] = s.lr;
    bar(s.batch, lo, hi, '#1d2430', 1.2);
    ctx.beginPath(); ctx.arc(px(s.batch), py(v), 4, 0, 2 * Math.PI);
    ctx.fillStyle = s.at_edge ? '#fff' : '#1d2430'; ctx.fill(); ctx.strokeStyle = '#1d2430'; ctx.lineWidth = 1.5; ctx.stroke();
    drawn.swept.push({batch: s.batch, lr: s.lr, x: px(s.batch), y: py(v)});
  }
  // The probes: their LRs as open squares at their batch, the best LR measured there filled.
  for (const p of probes) {
    ctx.strokeStyle = '#b7791f'; ctx.lineWidth = 1.5;
    for (const v of (p.lrs || []).filter(ok)) ctx.strokeRect(px(p.batch) - 4, py(v) - 4, 8, 8);
    if (ok(p.best_lr)) { ctx.fillStyle = '#b7791f'; ctx.fillRect(px(p.batch) - 4, py(p.best_lr) - 4, 8, 8); }
    drawn.probes.push({batch: p.batch, lrs: p.lrs, best_lr: p.best_lr, x: px(p.batch)});
  }
  // The hero run: the LR it used (a ring, under the target's diamond), and the loss it reached against its band.
  if (hero && ok(hero.lr) && ok(tgt.batch)) {
    const hx = px(tgt.batch), hy = py(hero.lr);
    ctx.strokeStyle = '#18794e'; ctx.lineWidth = 2.5;
    ctx.beginPath(); ctx.arc(hx, hy, 9, 0, 2 * Math.PI); ctx.stroke();
    const text = 'hero run: LR ' + num(hero.lr) + (hero.loss !== null && hero.loss !== undefined ?
      ', val_loss ' + num(hero.loss) + (hero.position ? ' (' + hero.position + ')' : '') : ', no val_loss yet');
    const right = hx + 16 + ctx.measureText(text).width < chart.frame.x1;
    ctx.textAlign = right ? 'left' : 'right';
    say(text, right ? hx + 16 : hx - 16, hy - 12, '#18794e');
    drawn.hero = {lr: hero.lr, loss: hero.loss, x: hx, y: hy};
  }
  // The target: its interval and the plan's LR as a diamond, said beside it.
  if (ok(tgt.batch) && ok(tlr[0])) {
    const tx = px(tgt.batch), ty = py(tlr[0]);
    bar(tgt.batch, tlr[1], tlr[2], '#c4320a', 2);
    ctx.fillStyle = '#c4320a';
    ctx.beginPath(); ctx.moveTo(tx, ty - 7); ctx.lineTo(tx + 7, ty); ctx.lineTo(tx, ty + 7); ctx.lineTo(tx - 7, ty); ctx.fill();
    const text = 'plan at ' + tgt.batch + ': ' + num(tlr[0]) + (ok(tlr[1]) ? ` [${num(tlr[1])}, ${num(tlr[2])}]` : '');
    const right = tx + 12 + ctx.measureText(text).width < chart.frame.x1;
    ctx.textAlign = right ? 'left' : 'right';
    say(text, right ? tx + 12 : tx - 12, ok(tlr[1]) ? py(tlr[1]) + 14 : ty + 18, '#c4320a');
    drawn.target = {batch: tgt.batch, lr: tlr, x: tx, y: ty};
  }
  ctx.textAlign = 'left';
  const legend = document.createElement('div');
  legend.className = 'legend';
  legend.innerHTML = '<b>●</b> best LR of a swept batch with its ' + Math.round((x.interval_level || 0.9) * 100) +
    '% interval (○: at the edge of the LRs swept) · <span style="color:#c4320a">◆ the plan\'s LR at the target, ' +
    'its interval</span>' + (hero ? ' · <span style="color:#18794e">○ the LR the hero run used</span>' : '') +
    (probes.length ? ' · <span style="color:#b7791f">□ probes</span>' : ' · no probes yet') +
    '<table class="laws"><thead><tr><th>law</th><th>form</th><th>its LR at the target (bootstrap interval)</th><th>the data</th></tr></thead><tbody>' +
    laws.map(l => `<tr class="${l.chosen ? 'chosen' : ''}"><td><span class="swatch" style="border-color:${LAW_COLOURS[l.name] || '#445'}` +
      `${/^(linear|sqrt)$/.test(l.name) ? ';border-top-style:dashed' : ''}"></span>${esc(l.name)}${l.chosen ? ' (the plan\'s rule)' : ''}</td>` +
      `<td>${esc(LAW_WORDS[l.name] || '')}</td><td>${l.at_target && ok(l.at_target[0]) ? num(l.at_target[0]) +
      (ok(l.at_target[1]) ? ` [${num(l.at_target[1])}, ${num(l.at_target[2])}]` : '') : '-'}</td>` +
      `<td>${l.consistent === false ? 'rule it out' : l.consistent === true ? 'allow it' : 'not judged'}</td></tr>`).join('') +
    '</tbody></table>' + verdictLine(x.verdict);
  el.append(legend);
  window.ladderExtrapolation = drawn;
}

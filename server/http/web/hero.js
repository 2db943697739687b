// ladder's web dashboard: a hero run's page (a search with a plan, made by `ladder promote`). It leads with the
// plan — the peak LR and the predicted final loss with their intervals, what the run reached against them, the
// rule and why, the probes run (the best LR each measured) — then the live val_loss inside the predicted band at
// full width, then the extrapolation the plan came from (extrapolation.js). The generic views of a search
// (optimization history, parameters, slices) are left out: a hero run is one trial of one configuration.
'use strict';

// The plan a hero search carries (PlanJson in cli/promote_plan.cc), or null for any other search.
function planOf(s) {
  try { return s.plan_json ? JSON.parse(s.plan_json) : null; } catch (e) { return null; }
}

const ok = v => typeof v === 'number' && isFinite(v);
// "[lo, hi]" of a [value, lo, hi] triple; '' without an interval.
function ivBounds(iv) { return iv && ok(iv[1]) && ok(iv[2]) ? `[${num(iv[1])}, ${num(iv[2])}]` : ''; }

// The band [lo, hi] at a step (linear between the band's points); null before its first point.
function bandAt(band, step) {
  if (!band.length || step < band[0][0]) return null;
  for (let i = 1; i < band.length; i++) {
    if (step <= band[i][0]) {
      const [s0, lo0, hi0] = band[i - 1], [s1, lo1, hi1] = band[i];
      const w = s1 > s0 ? (step - s0) / (s1 - s0) : 1;
      return [lo0 + w * (lo1 - lo0), hi0 + w * (hi1 - hi0)];
    }
  }
  return band[band.length - 1].slice(1);
}

function heroSections() {
  return `<div class="cards"><div class="card wide" id="hero-plan"></div></div>
    <h2>Live val_loss against the predicted band</h2><div class="cards"><div class="card wide" id="band"></div></div>
    <h2>Extrapolation</h2><div class="cards"><div class="card wide" id="extrapolation"></div></div>`;
}

// The learning rate a command runs with (its --lr), or NaN.
function commandLr(argv) {
  const i = (argv || []).findIndex(a => a === '--lr' || a.startsWith('--lr='));
  if (i < 0) return NaN;
  return +(argv[i].includes('=') ? argv[i].split('=')[1] : argv[i + 1]);
}

// Draws the hero page's plan, band and extrapolation; returns {add(trialId, point), update(trial)} for the live
// stream.
async function drawHero(st, plan) {
  const band = (plan.loss_band || []).slice().sort((a, b) => a[0] - b[0]);
  const heroTrial = () => [...st.trials.values()].sort((a, b) => (a.number || 0) - (b.number || 0))[0];
  let pts = [], heroLr = NaN, heroId = heroTrial()?.id;
  // The run's whole val_loss curve as stored (the live stream sends a trial's newest point per commit, not each).
  const fetchCurve = async () => {
    const {trials} = await api('searches/' + st.search.id + '/curves?metric=val_loss');
    return ((trials || {})[heroId] || []).filter(p => p[1] !== null);
  };
  if (heroId) {
    const [curve, {trial}] = await Promise.all([fetchCurve(), api('trials/' + heroId)]);
    pts = curve;
    heroLr = commandLr(trial.command);
  }
  // Where the run stands: its latest val_loss against the band at that step.
  const reached = () => {
    if (!pts.length) return null;
    const [step, loss] = pts[pts.length - 1];
    const b = bandAt(band, step);
    const position = !b ? '' : loss < b[0] ? 'below the band' : loss > b[1] ? 'above the band' : 'inside the band';
    return {step, loss, band: b, position};
  };
  const bandPlot = drawBand(st, plan, band, () => pts);
  const draw = () => {
    const r = reached();
    drawPlan(document.getElementById('hero-plan'), plan, r);
    drawExtrapolation(document.getElementById('extrapolation'), plan.extrapolation, plan,
      heroId ? {lr: ok(heroLr) ? heroLr : [].concat(plan.peak_lr)[0], loss: r ? r.loss : null, position: r ? r.position : ''} : null);
  };
  draw();
  let queued = false;
  const redraw = () => { bandPlot.redraw(); draw(); };
  return {
    // A live point: drawn at once (the chart shows the run moving); the stored curve fills the gaps later.
    add: (id, point) => {
      if (!point.values || !('val_loss' in point.values)) return;
      if (!heroId) heroId = id;
      if (id !== heroId) return;
      pts.push([+point.step || 0, point.values.val_loss]);
      if (!queued) { queued = true; setTimeout(() => { queued = false; redraw(); }, 250); }
    },
    // The trial changed (started, ended, retried): its stored curve replaces what the stream brought.
    update: async () => {
      if (!heroId) heroId = heroTrial()?.id;
      if (!heroId) return;
      if (!ok(heroLr)) heroLr = commandLr((await api('trials/' + heroId)).trial.command);
      pts = await fetchCurve();
      redraw();
    }};
}

// The plan, led by its numbers: peak LR, predicted final loss, what the run reached, the batch; then the rule and
// why, the probes, the schedule, warnings, and every source line.
function drawPlan(el, plan, reached) {
  const level = Math.round((plan.interval_level || 0.9) * 100) + '% interval';
  // [value, lo, hi]; a plan written by hand may give a bare number.
  const triple = v => Array.isArray(v) ? v : ok(v) ? [v, null, null] : [];
  const lr = triple(plan.peak_lr), fl = triple(plan.final_loss);
  const notPredicted = (plan.sources || []).find(s => /^final_loss: not predicted/.test(s));
  const figure = (id, key, value, sub, iv) => `<div class="figure"><div class="k">${key}</div>` +
    `<div class="v" id="${id}"${iv ? ` data-value="${iv[0]}" data-lo="${iv[1]}" data-hi="${iv[2]}"` : ''}>${value}</div>` +
    `<div class="iv">${sub}</div></div>`;
  const x = plan.extrapolation || {};
  const probes = x.probes || [];
  const ramp = (plan.ramp || []).length > 1 ? ', batch ramp ' + plan.ramp.map(r => `${r[1]} from step ${r[0]}`).join(', ') : '';
  const rows = [
    ['rule', `<b>${esc(plan.lr_rule || '-')}</b>: ${esc(plan.lr_rule_why || '')}`],
    ['probes', probes.length ? probes.map(p => `batch ${esc(p.batch)} (${esc(p.micro_batches || 1)} micro-batches), ` +
      `LRs ${(p.lrs || []).map(num).join(', ')} (trials ${(p.trials || []).map(esc).join(', ')}): ` +
      (ok(p.best_lr) ? 'best LR ' + num(p.best_lr) : 'none converged')).join('<br>') :
      'no probes: the plan rests on the sweep alone'],
    ['schedule', `${esc(plan.optimizer)}, warmup ${esc(plan.warmup_steps)} steps, ` +
      `${plan.decay === 'none' ? 'no' : esc(plan.decay)} decay, ` +
      `${esc(plan.steps)} steps${esc(ramp)}`],
    ['baselines', `linear rule ${num(plan.linear_rule_lr)}, square-root rule ${num(plan.sqrt_rule_lr)}` +
      (ok(plan.stability_edge) ? `, stability edge ${num(plan.stability_edge)}` : ', stability edge not measured')]]
    .concat((plan.warnings || []).length ? [['warnings', (plan.warnings || []).map(w => `<div class="error">${esc(w)}</div>`).join('')]] : []);
  el.innerHTML = '<div class="lead">' +
    figure('peak-lr', 'peak learning rate', ok(lr[0]) ? num(lr[0]) : '-', ivBounds(lr) ? ivBounds(lr) + ' ' + level : 'no interval', lr) +
    figure('final-loss', 'predicted final val_loss', ok(fl[0]) ? num(fl[0]) : 'not predicted',
      ok(fl[0]) ? (ivBounds(fl) ? ivBounds(fl) + ' ' + level : 'no interval') : esc((notPredicted || '').replace(/^final_loss: not predicted:? ?/, '')), fl) +
    figure('reached', 'the hero run reached', reached ? num(reached.loss) : 'no val_loss yet',
      reached ? `at step ${reached.step} of ${plan.steps}` + (reached.band ? `: ${reached.position} [${num(reached.band[0])}, ${num(reached.band[1])}]` : '') : '') +
    figure('batch', 'global batch', esc(plan.global_batch), `${esc(plan.nodes)} node(s) × ${esc(plan.ranks_per_node)} rank(s)`) +
    '</div><table class="kv" id="plan-why">' + rows.map(([k, v]) => `<tr><td>${k}</td><td>${v}</td></tr>`).join('') + '</table>' +
    '<details><summary>how each number was chosen</summary><ul class="sources">' +
    (plan.sources || []).map(s => `<li>${esc(s)}</li>`).join('') + '</ul></details>';
  document.getElementById('reached').className = 'v ' + (!reached ? 'none' : reached.position ? reached.position.split(' ')[0] : '');
}

// The live val_loss with the predicted band around it, the width of the page.
function drawBand(st, plan, band, points) {
  const el = document.getElementById('band');
  if (!band.length) {
    el.insertAdjacentHTML('beforeend', '<p class="hint">No band: the plan predicted no final loss; the live val_loss alone.</p>');
  }
  const data = () => {
    const pts = points();
    const steps = [...new Set(band.map(b => b[0]).concat(pts.map(p => p[0])))].sort((a, b) => a - b);
    const at = (arr, s, k) => { const p = arr.find(q => q[0] === s); return p ? p[k] : null; };
    return [steps, steps.map(x => at(band, x, 1)), steps.map(x => at(band, x, 2)), steps.map(x => at(pts, x, 1))];
  };
  const p = plot(el, 'val_loss of the hero run against its predicted band',
    [{label: 'band low', stroke: '#8aa', dash: [4, 4], spanGaps: true}, {label: 'band high', stroke: '#8aa', dash: [4, 4], spanGaps: true},
     {label: 'val_loss', stroke: '#c4320a', width: 2, spanGaps: true, points: {show: true, size: 5}}],
    data(), {ylabel: 'val_loss', width: Math.max(480, Math.min((el.clientWidth || 900) - 24, 1400))});
  return {redraw: () => p.setData(data())};
}

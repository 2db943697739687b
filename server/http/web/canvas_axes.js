// ladder's web dashboard: the axes of the charts it draws on a canvas itself (the learning curves, the slice plots).
// The data goes on the canvas; the frame, each axis's end labels and its title are SVG laid exactly over it — sharp
// at any zoom, and in the page, where a test reads where each label is.
// Rules: a value is at the same pixel as a point and as a label's anchor; the label of an axis's low end starts at
// that end and the label of its high end ends there, so each reads under (beside) the points it names; an axis with
// one value puts it in the middle. A chart whose axes run past the data (`centred`: the extrapolation's, padded so
// that no point sits on the frame) centres every label on its value instead.
'use strict';

const SVG_NS = 'http://www.w3.org/2000/svg';

// A canvas of `width` × `height` in `el` with an SVG layer over it; `margin`: {left, right, top, bottom}, the room
// for labels and titles around the plot area. Returns {ctx, frame: {x0, x1, y0, y1}, scale, axes}.
function canvasChart(el, width, height, margin) {
  const box = document.createElement('div');
  box.className = 'canvas-chart';
  box.style.width = width + 'px';
  box.style.height = height + 'px';
  const canvas = document.createElement('canvas');
  canvas.width = width; canvas.height = height;
  const svg = document.createElementNS(SVG_NS, 'svg');
  svg.setAttribute('width', width); svg.setAttribute('height', height);
  svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
  box.append(canvas, svg);
  el.append(box);
  const frame = {x0: margin.left, x1: width - margin.right, y0: margin.top, y1: height - margin.bottom};
  const ctx = canvas.getContext('2d');
  ctx.font = '11px sans-serif';
  return {canvas, ctx, frame,
    // The pixels of values on axes from x[0] to x[1] and from y[0] to y[1]: {X, Y}.
    scale: (x, y) => ({X: axisPixel(x, frame.x0, frame.x1), Y: axisPixel(y, frame.y1, frame.y0)}),
    // Draws the frame, the labels ({x: [[value, text], ...], y: ...}, by value, lowest first) and the titles.
    axes: (x, y, labels, titles, centred) => {
      svg.innerHTML = axesSvg(frame, width, height, x, y, labels, titles, centred);
    }};
}

// Where a label's text is anchored: the low end's starts at it, the high end's ends at it, the others centre.
function labelAnchor(i, n, one) {
  return one ? 'middle' : i === 0 ? 'start' : i === n - 1 ? 'end' : 'middle';
}

// The pixel of a value on an axis from range[0] (at pixel p0) to range[1] (at p1); the middle when they are equal.
function axisPixel([lo, hi], p0, p1) {
  return v => p0 + (hi === lo ? 0.5 : (v - lo) / (hi - lo)) * (p1 - p0);
}

function axesSvg(f, width, height, x, y, labels, titles, centred) {
  const X = axisPixel(x, f.x0, f.x1), Y = axisPixel(y, f.y1, f.y0);
  const xs = labels.x.map(([v, text], i, all) => `<text class="xtick" x="${X(v)}" y="${f.y1 + 13}" ` +
    `text-anchor="${labelAnchor(i, all.length, centred || x[1] === x[0])}">${esc(text)}</text>`);
  // Vertically the same rule: the lowest value's label sits on the frame's bottom, the highest's hangs from its top.
  const ys = labels.y.map(([v, text], i, all) => {
    const a = labelAnchor(i, all.length, centred || y[1] === y[0]);
    const base = a === 'start' ? 'auto' : a === 'end' ? 'hanging' : 'middle';
    return `<text class="ytick" x="${f.x0 - 4}" y="${Y(v)}" text-anchor="end" dominant-baseline="${base}">${esc(text)}</text>`;
  });
  const midX = (f.x0 + f.x1) / 2, midY = (f.y0 + f.y1) / 2;
  return `<rect class="frame" x="${f.x0}" y="${f.y0}" width="${f.x1 - f.x0}" height="${f.y1 - f.y0}"/>` +
    xs.join('') + ys.join('') +
    `<text class="xtitle" x="${midX}" y="${height - 4}" text-anchor="middle">${esc(titles.x)}</text>` +
    `<text class="ytitle" transform="translate(12 ${midY}) rotate(-90)" text-anchor="middle">${esc(titles.y)}</text>`;
}

// The labels of a numeric axis from lo to hi: its two ends (one when they are equal).
function endLabels(lo, hi, fmt) {
  return lo === hi ? [[lo, fmt(lo)]] : [[lo, fmt(lo)], [hi, fmt(hi)]];
}

// A small SVG time-series chart of our own: one line per series over a time window, an
// optional min/max band, horizontal limit lines (an alarm's setpoint and deadband), time and
// value axes with round ticks. No library, no canvas.

const SVG = "http://www.w3.org/2000/svg";
const PAD = { left: 56, right: 12, top: 10, bottom: 26 };
/** Points up to this many get a marker with a tooltip each. */
const MARKERS = 400;

function el(name, attrs = {}, parent) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (parent) parent.append(node);
  return node;
}

/** About `count` round steps covering [lo, hi]. */
export function ticks(lo, hi, count = 5) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw);
  const out = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) out.push(+t.toPrecision(12));
  return out;
}

function timeLabel(ms, span) {
  const d = new Date(ms);
  const hm = d.toISOString().slice(11, 16);
  return span > 2 * 86_400_000 ? `${d.toISOString().slice(5, 10)} ${hm}` : hm;
}

/**
 * Draws into `svg`: `series` is [{name, points: [{t, v}], band?: [{t, lo, hi}]}], over
 * [start, end] (ms). Numbers only; other values are skipped. `limits` are horizontal lines
 * [{value, label, kind}] (`kind` names their style: `setpoint`, `deadband`); the value axis
 * always takes them in, so a limit far from the values still shows where it lies.
 */
export function draw(svg, series, start, end, limits = []) {
  const width = svg.clientWidth || 800;
  const height = svg.clientHeight || 280;
  svg.replaceChildren();
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  const numeric = (p) => typeof p.v === "number" && Number.isFinite(p.v);
  const values = series.flatMap((s) => [
    ...s.points.filter(numeric).map((p) => p.v),
    ...(s.band ?? []).flatMap((b) => [b.lo, b.hi]),
  ]);
  values.push(...limits.map((l) => l.value).filter(Number.isFinite));
  let lo = Math.min(...values);
  let hi = Math.max(...values);
  if (!values.length) [lo, hi] = [0, 1];
  if (lo === hi) [lo, hi] = [lo - 1, hi + 1];
  const x = (t) => PAD.left + ((t - start) / (end - start)) * (width - PAD.left - PAD.right);
  const y = (v) => height - PAD.bottom - ((v - lo) / (hi - lo)) * (height - PAD.top - PAD.bottom);

  const axes = el("g", { class: "axes" }, svg);
  for (const v of ticks(lo, hi)) {
    el("line", { x1: PAD.left, x2: width - PAD.right, y1: y(v), y2: y(v), class: "grid" }, axes);
    el("text", { x: PAD.left - 6, y: y(v) + 4, "text-anchor": "end" }, axes).textContent = String(v);
  }
  for (let i = 0; i <= 6; i += 1) {
    const t = start + ((end - start) * i) / 6;
    const anchor = i === 0 ? "start" : i === 6 ? "end" : "middle";
    el("text", { x: x(t), y: height - 8, "text-anchor": anchor }, axes).textContent = timeLabel(t, end - start);
  }
  series.forEach((s, i) => {
    const group = el("g", { class: `series series-${i}`, "data-name": s.name }, svg);
    if (s.band?.length) {
      const upper = s.band.map((b) => `${x(b.t)},${y(b.hi)}`);
      const lower = s.band.map((b) => `${x(b.t)},${y(b.lo)}`).reverse();
      el("polygon", { points: [...upper, ...lower].join(" "), class: "band" }, group);
    }
    const points = s.points.filter(numeric);
    el("polyline", { points: points.map((p) => `${x(p.t)},${y(p.v)}`).join(" "), class: "line" }, group);
    if (points.length <= MARKERS) {
      for (const p of points) {
        const dot = el("circle", { cx: x(p.t), cy: y(p.v), r: 3, class: "point" }, group);
        el("title", {}, dot).textContent = `${new Date(p.t).toISOString()} ${p.v}`;
      }
    }
    group.dataset.count = String(points.length);
  });
  const lines = el("g", { class: "limits" }, svg);
  for (const limit of limits.filter((l) => Number.isFinite(l.value))) {
    const at = y(limit.value);
    const line = el("line", { x1: PAD.left, x2: width - PAD.right, y1: at, y2: at, class: `limit ${limit.kind}` }, lines);
    line.dataset.limit = limit.kind;
    line.dataset.value = String(limit.value);
    // Labelled at the left: the newest values, at the right, are the ones being watched.
    el("text", { x: PAD.left + 4, y: at - 4, "text-anchor": "start", class: `limit ${limit.kind}` }, lines)
      .textContent = limit.label;
  }
}

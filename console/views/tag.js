// One tag: its settings, its latest value (live), and its trend from the historian over a
// preset window, with live points appended and the shown range as CSV. Windows up to an
// hour are drawn point by point; longer ones as bucketed means inside their min/max band.

import { call } from "../api.js";
import { stream } from "../sse.js";
import { draw } from "../chart.js";
import { may } from "../rights.js";

export const title = null; // reached from Live tags, not from the navigation

const PRESETS = [
  ["15 min", 15 * 60_000],
  ["1 h", 3_600_000],
  ["24 h", 86_400_000],
  ["7 d", 7 * 86_400_000],
];
const RAW_UP_TO_MS = 3_600_000;
const BUCKETS = 300;

const iso = (ms) => new Date(ms).toISOString();
const point = (p) => ({ t: Date.parse(p.timestamp), v: p.value });

export function render(main, { rest }) {
  const topic = decodeURIComponent(rest.join("/"));
  main.innerHTML = `
    <h1></h1>
    <dl class="facts">
      <dt>Latest</dt><dd id="latest" class="value never">never seen</dd>
      <dt>Received</dt><dd id="at">—</dd>
      <dt>Historized</dt><dd id="historize">…</dd>
      <dt>Unit</dt><dd id="unit">—</dd>
      <dt>Description</dt><dd id="description">—</dd>
    </dl>
    <form id="write" class="row">
      <label>Write a value (JSON) <input name="value" required placeholder="21.5"></label>
      <button class="primary" type="submit">Write</button>
      <span class="status" id="written"></span>
    </form>
    <h2>Trend</h2>
    <div class="row presets" id="presets"></div>
    <svg class="chart" id="chart" role="img"></svg>
    <div class="row"><button type="button" id="csv">Download the shown range as CSV</button>
      <span class="status" id="trend"></span></div>`;
  main.querySelector("h1").textContent = topic;
  const chart = main.querySelector("#chart");
  chart.setAttribute("aria-label", `Trend of ${topic}`);
  const status = main.querySelector("#trend");
  let shown = { start: 0, end: 0, live: false, series: [] };
  let frame = 0;
  const redraw = () => {
    frame = 0;
    draw(chart, shown.series, shown.start, shown.end);
  };

  const load = async (range, button) => {
    for (const b of main.querySelectorAll("#presets button")) b.setAttribute("aria-pressed", String(b === button));
    const end = Date.now();
    const start = end - range;
    status.textContent = "loading…";
    const query = { topic, start_time: iso(start), end_time: iso(end) };
    try {
      if (range <= RAW_UP_TO_MS) {
        const points = await call("PATCH", "/svc/historian", { ...query, limit: 10000 });
        shown = { start, end, live: true, series: [{ name: "value", points: points.map(point) }] };
      } else {
        const bucket = `${Math.ceil(range / BUCKETS / 1000)}s`;
        const [mean, min, max] = await Promise.all(
          ["mean", "min", "max"].map((aggregation) =>
            call("PATCH", "/svc/historian", { ...query, bucket, aggregation }),
          ),
        );
        const band = min.map((p, i) => ({ t: Date.parse(p.timestamp), lo: p.value, hi: max[i]?.value ?? p.value }));
        shown = { start, end, live: false, series: [{ name: "mean", points: mean.map(point), band }] };
      }
      const count = shown.series[0].points.length;
      status.textContent = `${count} ${range <= RAW_UP_TO_MS ? "values" : "buckets"}`;
      redraw();
    } catch (e) {
      status.textContent = e.message;
    }
  };
  const presets = main.querySelector("#presets");
  PRESETS.forEach(([label, range], i) => {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = label;
    button.addEventListener("click", () => load(range, button));
    presets.append(button);
    if (i === 0) load(range, button);
  });

  main.querySelector("#csv").addEventListener("click", () => {
    const rows = shown.series[0]?.points ?? [];
    const text = ["timestamp,value", ...rows.map((p) => `${iso(p.t)},${JSON.stringify(p.v)}`)].join("\n");
    const link = document.createElement("a");
    link.href = URL.createObjectURL(new Blob([text + "\n"], { type: "text/csv" }));
    link.download = `${topic.replaceAll("/", "_")}.csv`;
    link.click();
    setTimeout(() => URL.revokeObjectURL(link.href), 1000);
  });

  const write = main.querySelector("#write");
  if (!may("tags", "*", "write")) {
    for (const control of write.elements) control.disabled = true;
    write.title = "You may read this domain's tags but not write them.";
  }
  write.addEventListener("submit", async (event) => {
    event.preventDefault();
    const said = main.querySelector("#written");
    let value;
    try {
      value = JSON.parse(write.elements.value.value);
    } catch {
      said.textContent = "That is not JSON: quote text, e.g. \"on\".";
      return;
    }
    if (!confirm(`Publish ${JSON.stringify(value)} to ${topic}?`)) return;
    try {
      await call("POST", "/svc/tag/write", { topic, value });
      said.textContent = "written";
    } catch (e) {
      said.textContent = e.message;
    }
  });

  const params = new URLSearchParams({ "filter[path][eq]": topic });
  call("GET", `/svc/tags/all?${params}`)
    .then(([tag]) => {
      if (!tag) return;
      main.querySelector("#historize").textContent = tag.historize ? "yes" : "no";
      main.querySelector("#unit").textContent = tag.unit ?? "—";
      main.querySelector("#description").textContent = tag.description ?? "—";
    })
    .catch(() => {});

  const abort = new AbortController();
  stream(
    `/svc/tag/stream?topic=${encodeURIComponent(topic)}`,
    (event, data) => {
      if (event !== "value") return;
      const value = JSON.parse(data);
      const latest = main.querySelector("#latest");
      latest.textContent = JSON.stringify(value.value);
      latest.className = "value";
      main.querySelector("#at").textContent = value.timestamp;
      const p = point(value);
      const series = shown.series[0];
      if (shown.live && series && p.t >= shown.start && !series.points.some((q) => q.t === p.t)) {
        series.points.push(p);
        shown.end = Math.max(shown.end, Date.now());
        status.textContent = `${series.points.length} values`;
        frame ||= requestAnimationFrame(redraw);
      }
    },
    abort.signal,
  ).catch(() => {});
  return () => {
    abort.abort();
    cancelAnimationFrame(frame);
  };
}

// A tag's trend from the historian: preset windows (15 min … 7 d) or a custom range, other
// historized tags overlaid, live points appended while the window reaches now, and the shown
// range as CSV. Windows up to an hour are drawn point by point; longer ones as bucketed means
// inside their min/max band, so a week stays a few hundred points.

import { call, saveAs } from "../../api.js";
import { draw } from "../../chart.js";

const PRESETS = [
  ["15 min", 15 * 60_000],
  ["1 h", 3_600_000],
  ["24 h", 86_400_000],
  ["7 d", 7 * 86_400_000],
];
const RAW_UP_TO_MS = 3_600_000;
const BUCKETS = 300;
/** A window ending this close to now keeps taking live points. */
const LIVE_SLACK_MS = 5_000;

const iso = (ms) => new Date(ms).toISOString();
const point = (p) => ({ t: Date.parse(p.timestamp), v: p.value });

/** `YYYY-MM-DDTHH:MM` of `ms` in local time, as a `datetime-local` input shows it. */
function localInput(ms) {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 16);
}

/** One topic's series over [start, end]: raw points, or bucketed means with a min/max band. */
async function fetchSeries(topic, start, end) {
  const query = { topic, start_time: iso(start), end_time: iso(end) };
  if (end - start <= RAW_UP_TO_MS) {
    const points = await call("PATCH", "/svc/historian", { ...query, limit: 10000 });
    return { name: topic, raw: true, points: points.map(point) };
  }
  const bucket = `${Math.ceil((end - start) / BUCKETS / 1000)}s`;
  const [mean, min, max] = await Promise.all(
    ["mean", "min", "max"].map((aggregation) => call("PATCH", "/svc/historian", { ...query, bucket, aggregation })),
  );
  const band = min.map((p, i) => ({ t: Date.parse(p.timestamp), lo: p.value, hi: max[i]?.value ?? p.value }));
  return { name: topic, raw: false, points: mean.map(point), band };
}

/** The shown series as CSV: `topic,timestamp,value` (or `…,mean,min,max` when bucketed). */
export function trendCsv(series) {
  const bucketed = series.some((s) => !s.raw);
  const lines = [bucketed ? "topic,timestamp,mean,min,max" : "topic,timestamp,value"];
  for (const s of series) {
    const band = new Map((s.band ?? []).map((b) => [b.t, b]));
    for (const p of s.points) {
      const cells = [JSON.stringify(s.name), iso(p.t), JSON.stringify(p.v)];
      if (bucketed) cells.push(JSON.stringify(band.get(p.t)?.lo ?? ""), JSON.stringify(band.get(p.t)?.hi ?? ""));
      lines.push(cells.join(","));
    }
  }
  return lines.join("\n") + "\n";
}

/**
 * Fills `section` with the trend of `topic`, with `limits` drawn across it (see chart.js; an
 * alarm's setpoint and deadband). Returns `{ live(value), stop() }`: `live` takes a
 * `{topic, value, timestamp}` from the stream.
 */
export function trend(section, topic, { limits = [] } = {}) {
  section.innerHTML = `
    <div class="row presets" id="presets"></div>
    <form class="row" id="range">
      <label>From <input type="datetime-local" name="from" required></label>
      <label>To <input type="datetime-local" name="to" required></label>
      <button type="submit">Show range</button>
    </form>
    <form class="row" id="overlay">
      <label>Overlay a tag <input name="topic" list="historized" placeholder="plant/line1/pressure"></label>
      <datalist id="historized"></datalist>
      <button type="submit">Add</button>
      <span id="legend" class="legend"></span>
    </form>
    <svg class="chart" id="chart" role="img"></svg>
    <div class="row"><button type="button" id="csv">Download the shown range as CSV</button>
      <span class="status" id="trend"></span></div>`;
  const chart = section.querySelector("#chart");
  chart.setAttribute("aria-label", `Trend of ${topic}`);
  const status = section.querySelector("#trend");
  const topics = [topic];
  let window = { start: 0, end: 0, live: false };
  let series = [];
  let frame = 0;
  const redraw = () => {
    frame = 0;
    draw(chart, series, window.start, window.end, limits);
  };
  const legend = () => {
    section.querySelector("#legend").replaceChildren(
      ...topics.map((name, i) => {
        const chip = document.createElement("span");
        chip.className = `chip series-${i}`;
        chip.textContent = name;
        if (i > 0) {
          const remove = document.createElement("button");
          remove.type = "button";
          remove.textContent = "×";
          remove.title = `Remove ${name} from the chart`;
          remove.addEventListener("click", () => {
            topics.splice(topics.indexOf(name), 1);
            load(window.start, window.end, window.live);
          });
          chip.append(remove);
        }
        return chip;
      }),
    );
  };

  const load = async (start, end, live) => {
    window = { start, end, live };
    status.textContent = "loading…";
    legend();
    try {
      series = await Promise.all(topics.map((t) => fetchSeries(t, start, end)));
      const counts = series.map((s) => s.points.length).join(" + ");
      status.textContent = `${counts} ${series[0].raw ? "values" : "buckets"}`;
      redraw();
    } catch (e) {
      status.textContent = e.message;
    }
  };
  const presets = section.querySelector("#presets");
  const pressed = (button) => {
    for (const b of presets.querySelectorAll("button")) b.setAttribute("aria-pressed", String(b === button));
  };
  PRESETS.forEach(([label, span], i) => {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = label;
    button.addEventListener("click", () => {
      pressed(button);
      const end = Date.now();
      section.querySelector("#range").elements.from.value = localInput(end - span);
      section.querySelector("#range").elements.to.value = localInput(end);
      load(end - span, end, true);
    });
    presets.append(button);
    if (i === 0) button.click();
  });
  section.querySelector("#range").addEventListener("submit", (event) => {
    event.preventDefault();
    const start = new Date(event.target.elements.from.value).getTime();
    const end = new Date(event.target.elements.to.value).getTime();
    if (!(end > start)) {
      status.textContent = "The range must end after it starts.";
      return;
    }
    pressed(null);
    load(start, end, end >= Date.now() - LIVE_SLACK_MS);
  });
  call("GET", "/svc/historian/list")
    .then((list) => section.querySelector("#historized").replaceChildren(...list.map((t) => new Option(t))))
    .catch(() => {});
  section.querySelector("#overlay").addEventListener("submit", (event) => {
    event.preventDefault();
    const name = event.target.elements.topic.value.trim();
    if (!name || topics.includes(name)) return;
    topics.push(name);
    event.target.elements.topic.value = "";
    load(window.start, window.end, window.live);
  });
  section.querySelector("#csv").addEventListener("click", () => {
    saveAs(new Blob([trendCsv(series)], { type: "text/csv" }), `${topic.replaceAll("/", "_")}.csv`);
  });

  return {
    live(value) {
      const s = series[0];
      const p = point(value);
      if (!window.live || !s?.raw || p.t < window.start || s.points.some((q) => q.t === p.t)) return;
      s.points.push(p);
      window.end = Math.max(window.end, Date.now());
      status.textContent = `${s.points.length} values`;
      frame ||= requestAnimationFrame(redraw);
    },
    stop() {
      cancelAnimationFrame(frame);
    },
  };
}

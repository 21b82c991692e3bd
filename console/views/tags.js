// Live tags: every tag of the domain with its latest value and age, updated from the tag
// stream. Updates are coalesced per animation frame, so a tag changing a thousand times a
// second costs one repaint per frame.

import { call } from "../api.js";
import { stream } from "../sse.js";

export const title = "Live tags";

/** A value older than this is marked stale. */
const STALE_MS = 60_000;

export function render(main) {
  main.innerHTML = `
    <h1>Live tags</h1>
    <div class="row">
      <label>Filter <input id="filter" type="search" placeholder="part of a tag path"></label>
      <span class="status" id="status">connecting…</span>
    </div>
    <table>
      <thead><tr><th>Tag</th><th>Value</th><th>Age</th></tr></thead>
      <tbody id="tags"></tbody>
    </table>`;
  const body = main.querySelector("#tags");
  const status = main.querySelector("#status");
  const rows = new Map();
  const pending = new Map();
  let frame = 0;

  const rowOf = (topic) => {
    let row = rows.get(topic);
    if (!row) {
      row = { tr: document.createElement("tr"), at: null };
      row.tr.dataset.topic = topic;
      row.tr.innerHTML = `<td><a></a></td><td class="value never">never seen</td><td class="age"></td>`;
      const link = row.tr.querySelector("a");
      link.textContent = topic;
      link.href = `${location.hash.split("/").slice(0, 2).join("/")}/tag/${encodeURIComponent(topic)}`;
      rows.set(topic, row);
      const after = [...rows.keys()].sort().indexOf(topic);
      body.insertBefore(row.tr, body.children[after] ?? null);
    }
    return row;
  };
  const paint = () => {
    frame = 0;
    for (const [topic, value] of pending) {
      const row = rowOf(topic);
      row.at = Date.parse(value.timestamp);
      const cell = row.tr.cells[1];
      cell.textContent = JSON.stringify(value.value);
      cell.className = "value";
    }
    pending.clear();
    ages();
  };
  const ages = () => {
    const now = Date.now();
    for (const row of rows.values()) {
      if (row.at === null) continue;
      const age = Math.max(0, now - row.at);
      row.tr.cells[2].textContent = age < 1000 ? "now" : `${Math.round(age / 1000)} s`;
      row.tr.cells[2].className = age > STALE_MS ? "age stale" : "age";
    }
  };
  main.querySelector("#filter").addEventListener("input", (event) => {
    const needle = event.target.value.trim().toLowerCase();
    for (const [topic, row] of rows) row.tr.hidden = !topic.toLowerCase().includes(needle);
  });

  const abort = new AbortController();
  call("GET", "/svc/tag/list")
    .then((topics) => topics.forEach(rowOf))
    .catch(() => {});
  stream(
    "/svc/tag/stream?topic=%23",
    (event, data) => {
      if (event === "value") {
        const value = JSON.parse(data);
        pending.set(value.topic, value);
        frame ||= requestAnimationFrame(paint);
      } else if (event === "synced") {
        status.textContent = "live";
      } else if (event === "error") {
        status.textContent = data;
      }
    },
    abort.signal,
  ).then(
    () => (status.textContent = "the stream ended; reload to reconnect"),
    (e) => {
      if (!abort.signal.aborted) status.textContent = e.message;
    },
  );
  const timer = setInterval(ages, 1000);
  return () => {
    abort.abort();
    clearInterval(timer);
    cancelAnimationFrame(frame);
  };
}

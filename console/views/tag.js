// One tag: its latest value (live, with the payload inspector), its settings, writing a
// value, and its trend from the historian.

import { call } from "../api.js";
import { stream } from "../sse.js";
import { may } from "../rights.js";
import { inspector } from "./tag/inspector.js";
import { tagSettings } from "./tag/settings.js";
import { trend } from "./tag/trend.js";

export const title = null; // reached from Live tags, not from the navigation

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
    <h2>Payload</h2>
    <section id="payload"></section>
    <h2>Trend</h2>
    <section id="trend-section"></section>
    <details id="settings-panel"><summary>Settings</summary><form id="settings" class="editor"></form></details>`;
  main.querySelector("h1").textContent = topic;
  const show = inspector(main.querySelector("#payload"));
  const chart = trend(main.querySelector("#trend-section"), topic);
  tagSettings(main.querySelector("#settings"), topic, (tag) => {
    main.querySelector("#historize").textContent = tag.historize ? "yes" : "no";
    main.querySelector("#unit").textContent = tag.unit ?? "—";
    main.querySelector("#description").textContent = tag.description ?? "—";
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

  const abort = new AbortController();
  stream(
    `/svc/tag/stream?topic=${encodeURIComponent(topic)}&payload=raw`,
    (event, data) => {
      if (event !== "value") return;
      const value = JSON.parse(data);
      const latest = main.querySelector("#latest");
      latest.textContent = JSON.stringify(value.value);
      latest.className = "value";
      main.querySelector("#at").textContent = value.timestamp;
      show(value);
      chart.live(value);
    },
    abort.signal,
  ).catch(() => {});
  return () => {
    abort.abort();
    chart.stop();
  };
}

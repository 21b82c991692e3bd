// Live tags as a tree (folder by folder of the topic path) with each tag's latest value and
// age, fed by the tag stream. The tree is virtualized: only the rows in view exist in the
// page, so 10,000 tags scroll as smoothly as ten; updates are coalesced per animation frame.

import { call } from "../api.js";
import { stream } from "../sse.js";
import { sparkplugFolders } from "./tag/sparkplug_nodes.js";

export const title = "Live tags";

/** A value older than this is marked stale. */
const STALE_MS = 60_000;
const ROW_PX = 28;
/** What a raw Sparkplug B message shows instead of its protobuf bytes read as text. */
const SPARKPLUG_PAYLOAD = "Sparkplug B payload (a host decodes it into its metrics' tags)";

/** Whether `topic` carries a protobuf Sparkplug B payload (every spBv1.0 topic but STATE). */
function isSparkplugPayload(topic) {
  return topic.startsWith("spBv1.0/") && !topic.startsWith("spBv1.0/STATE/");
}
const OVERSCAN = 10;

export function render(main) {
  main.innerHTML = `
    <h1>Live tags</h1>
    <div class="row">
      <label>Filter <input id="filter" type="search" placeholder="part of a tag path"></label>
      <span class="status" id="status">connecting…</span>
      <span class="status" id="count"></span>
    </div>
    <div class="tree" id="tree" role="tree" tabindex="0"><div class="spacer" id="spacer"></div></div>`;
  const tree = main.querySelector("#tree");
  const spacer = main.querySelector("#spacer");
  const status = main.querySelector("#status");
  const domainBase = location.hash.split("/").slice(0, 2).join("/");

  /** topic → {value, at}; folders are derived from the topics. */
  const tags = new Map();
  const collapsed = new Set();
  /** Folders of Sparkplug nodes and devices → their state (see tag/sparkplug_nodes.js). */
  let sparkplug = new Map();
  let needle = "";
  let rows = [];
  let structureChanged = true;
  const pending = new Map();
  let frame = 0;

  const ensure = (topic) => {
    if (!tags.has(topic)) {
      tags.set(topic, { value: undefined, at: null });
      structureChanged = true;
    }
    return tags.get(topic);
  };

  /** The visible rows: folders (unless filtering) and tags, depth first, sorted. */
  const flatten = () => {
    const topics = [...tags.keys()].sort();
    rows = [];
    if (needle) {
      for (const topic of topics) if (topic.toLowerCase().includes(needle)) rows.push({ topic, depth: 0, label: topic });
    } else {
      const open = new Set();
      for (const topic of topics) {
        const parts = topic.split("/");
        let hidden = false;
        for (let i = 1; i < parts.length; i += 1) {
          const folder = parts.slice(0, i).join("/");
          if (hidden) break;
          if (!open.has(folder)) {
            open.add(folder);
            rows.push({ folder, depth: i - 1, label: parts[i - 1] });
          }
          if (collapsed.has(folder)) hidden = true;
        }
        if (!hidden) rows.push({ topic, depth: parts.length - 1, label: parts[parts.length - 1] });
      }
    }
    spacer.style.height = `${rows.length * ROW_PX}px`;
    main.querySelector("#count").textContent = `${tags.size} tags`;
    structureChanged = false;
  };

  const paint = () => {
    frame = 0;
    for (const [topic, update] of pending) Object.assign(ensure(topic), update);
    pending.clear();
    if (structureChanged) flatten();
    const first = Math.max(0, Math.floor(tree.scrollTop / ROW_PX) - OVERSCAN);
    const last = Math.min(rows.length, Math.ceil((tree.scrollTop + tree.clientHeight) / ROW_PX) + OVERSCAN);
    const now = Date.now();
    const shown = [];
    for (let i = first; i < last; i += 1) shown.push(rowElement(rows[i], i, now));
    spacer.replaceChildren(...shown);
  };
  const schedule = () => {
    frame ||= requestAnimationFrame(paint);
  };

  const rowElement = (row, index, now) => {
    const div = document.createElement("div");
    div.className = row.folder ? "node folder" : "node";
    div.setAttribute("role", "treeitem");
    div.style.top = `${index * ROW_PX}px`;
    div.style.paddingLeft = `${0.5 + row.depth * 1.25}rem`;
    if (row.folder) {
      const open = !collapsed.has(row.folder);
      div.setAttribute("aria-expanded", String(open));
      div.dataset.folder = row.folder;
      div.tabIndex = 0;
      div.textContent = `${open ? "▾" : "▸"} ${row.label}`;
      const state = sparkplug.get(row.folder);
      if (state) {
        const badge = document.createElement("span");
        badge.className = `sparkplug ${state.online ? "online" : "offline"}`;
        badge.textContent = state.text;
        badge.title = state.title;
        div.append(badge);
      }
      return div;
    }
    const tag = tags.get(row.topic);
    div.dataset.topic = row.topic;
    const link = document.createElement("a");
    link.href = `${domainBase}/tag/${encodeURIComponent(row.topic)}`;
    link.textContent = row.label;
    const value = document.createElement("span");
    const age = document.createElement("span");
    age.className = "age";
    if (tag.at === null) {
      value.className = "value never";
      value.textContent = "never seen";
    } else {
      value.className = "value";
      value.textContent = isSparkplugPayload(row.topic) ? SPARKPLUG_PAYLOAD : JSON.stringify(tag.value);
      const ms = Math.max(0, now - tag.at);
      age.textContent = ms < 1000 ? "now" : `${Math.round(ms / 1000)} s`;
      if (ms > STALE_MS) age.className = "age stale";
    }
    div.append(link, value, age);
    return div;
  };

  const toggle = (folder) => {
    if (collapsed.has(folder)) collapsed.delete(folder);
    else collapsed.add(folder);
    structureChanged = true;
    schedule();
  };
  tree.addEventListener("click", (event) => {
    const folder = event.target.closest("[data-folder]")?.dataset.folder;
    if (folder) toggle(folder);
  });
  tree.addEventListener("keydown", (event) => {
    const folder = document.activeElement?.closest?.("[data-folder]")?.dataset.folder;
    if (folder && (event.key === "Enter" || event.key === " ")) {
      event.preventDefault();
      toggle(folder);
    }
  });
  tree.addEventListener("scroll", schedule, { passive: true });
  main.querySelector("#filter").addEventListener("input", (event) => {
    needle = event.target.value.trim().toLowerCase();
    structureChanged = true;
    tree.scrollTop = 0;
    schedule();
  });

  const abort = new AbortController();
  call("GET", "/svc/tag/list")
    .then((topics) => {
      topics.forEach(ensure);
      schedule();
    })
    .catch(() => {});
  stream(
    "/svc/tag/stream?topic=%23",
    (event, data) => {
      if (event === "value") {
        const value = JSON.parse(data);
        pending.set(value.topic, { value: value.value, at: Date.parse(value.timestamp) });
        schedule();
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
  const timer = setInterval(schedule, 1000);
  const nodes = sparkplugFolders((folders) => {
    sparkplug = folders;
    schedule();
  });
  return () => {
    nodes.stop();
    abort.abort();
    clearInterval(timer);
    cancelAnimationFrame(frame);
  };
}

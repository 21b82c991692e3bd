// The payload inspector: the tag's latest value as a JSON tree, the payload as it was
// published (raw text, and a hex dump of its bytes), and what changed since the value before
// (paths added, removed and changed). Values arrive from the live stream, which carries the
// published bytes when asked (`payload=raw`); the inspector keeps the last two.

const TABS = ["tree", "raw", "hex", "diff"];

/** `{ path: value }` of every leaf (scalars, empty arrays and objects), paths as `a.b[0]`. */
export function leaves(value, path = "", out = {}) {
  if (value !== null && typeof value === "object" && Object.keys(value).length) {
    for (const [key, child] of Object.entries(value)) {
      const next = Array.isArray(value) ? `${path}[${key}]` : path ? `${path}.${key}` : key;
      leaves(child, next, out);
    }
  } else {
    out[path || "(value)"] = value;
  }
  return out;
}

/** The differences from `before` to `after`: `[{ path, change, before, after }]`. */
export function diff(before, after) {
  const was = leaves(before);
  const now = leaves(after);
  const changes = [];
  for (const path of new Set([...Object.keys(was), ...Object.keys(now)])) {
    const a = JSON.stringify(was[path]);
    const b = JSON.stringify(now[path]);
    if (!(path in was)) changes.push({ path, change: "added", after: now[path] });
    else if (!(path in now)) changes.push({ path, change: "removed", before: was[path] });
    else if (a !== b) changes.push({ path, change: "changed", before: was[path], after: now[path] });
  }
  return changes;
}

/** The published bytes of a stream event (`payload` text or `payload_base64`). */
export function payloadBytes(event) {
  if (typeof event.payload === "string") return new TextEncoder().encode(event.payload);
  if (typeof event.payload_base64 === "string") return Uint8Array.from(atob(event.payload_base64), (c) => c.charCodeAt(0));
  return new TextEncoder().encode(JSON.stringify(event.value));
}

/** Lines of `offset  hex bytes  ascii`, 16 bytes a line. */
export function hexDump(bytes) {
  const lines = [];
  for (let at = 0; at < bytes.length; at += 16) {
    const row = [...bytes.slice(at, at + 16)];
    const hex = row.map((b) => b.toString(16).padStart(2, "0")).join(" ");
    const ascii = row.map((b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : ".")).join("");
    lines.push(`${at.toString(16).padStart(8, "0")}  ${hex.padEnd(47)}  ${ascii}`);
  }
  return lines.join("\n");
}

function treeNode(key, value) {
  if (value !== null && typeof value === "object") {
    const details = document.createElement("details");
    details.open = true;
    const summary = document.createElement("summary");
    const count = Object.keys(value).length;
    summary.textContent = `${key} ${Array.isArray(value) ? `[${count}]` : `{${count}}`}`;
    details.append(summary, ...Object.entries(value).map(([k, v]) => treeNode(k, v)));
    return details;
  }
  const leaf = document.createElement("div");
  leaf.className = "leaf";
  const name = document.createElement("span");
  name.className = "muted";
  name.textContent = `${key}: `;
  const shown = document.createElement("span");
  shown.className = `json-${value === null ? "null" : typeof value}`;
  shown.textContent = JSON.stringify(value);
  leaf.append(name, shown);
  return leaf;
}

/**
 * Fills `section` with the inspector; returns `show(event)` for each stream event that
 * arrives (`{value, payload | payload_base64}`).
 * Drawing waits for the next animation frame, so a tag updating 1,000 times a second costs
 * one drawing per frame; the diff still compares the last two values received.
 */
export function inspector(section) {
  section.innerHTML = `
    <div class="row tabs" role="tablist"></div>
    <div class="inspector" id="inspector"><p class="never">no value yet</p></div>`;
  let tab = "tree";
  let previous;
  let current;
  let bytes;
  let seen = 0;
  let frame = 0;
  const body = section.querySelector("#inspector");
  const tabs = section.querySelector(".tabs");
  const draw = () => {
    frame = 0;
    for (const button of tabs.children) button.setAttribute("aria-selected", String(button.dataset.tab === tab));
    if (!seen) return;
    const pre = document.createElement("pre");
    if (tab === "tree") {
      body.replaceChildren(treeNode("value", current));
      return;
    }
    if (tab === "raw") {
      const text = new TextDecoder("utf-8", { fatal: false }).decode(bytes);
      pre.textContent = text;
      pre.title = `${bytes.length} bytes as published`;
    }
    if (tab === "hex") pre.textContent = hexDump(bytes);
    if (tab === "diff") {
      const changes = seen > 1 ? diff(previous, current) : [];
      pre.textContent =
        seen < 2
          ? "no earlier value to compare with"
          : changes.length
            ? changes
                .map((c) =>
                  c.change === "changed"
                    ? `~ ${c.path}: ${JSON.stringify(c.before)} → ${JSON.stringify(c.after)}`
                    : c.change === "added"
                      ? `+ ${c.path}: ${JSON.stringify(c.after)}`
                      : `- ${c.path}: ${JSON.stringify(c.before)}`,
                )
                .join("\n")
            : "the same as the value before";
    }
    body.replaceChildren(pre);
  };
  for (const name of TABS) {
    const button = document.createElement("button");
    button.type = "button";
    button.role = "tab";
    button.dataset.tab = name;
    button.textContent = { tree: "Tree", raw: "Raw payload", hex: "Hex", diff: "Diff to previous" }[name];
    button.addEventListener("click", () => {
      tab = name;
      draw();
    });
    tabs.append(button);
  }
  draw();
  return (event) => {
    previous = current;
    current = event.value;
    bytes = payloadBytes(event);
    seen += 1;
    frame ||= requestAnimationFrame(draw);
  };
}

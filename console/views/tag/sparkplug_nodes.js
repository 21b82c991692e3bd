// The Sparkplug edge nodes and devices the domain's hosts know, for the live tags tree: asked
// every 2 s while the tree is open (only with read rights on `sparkplug`), as a map from the
// tree folder holding a node's or device's tags to what the tree shows beside that folder.

import { call } from "../../api.js";
import { may } from "../../rights.js";

const POLL_MS = 2000;

/** What a folder of a node or device shows: its state and a line of detail. */
function badge(kind, status, node) {
  const detail =
    kind === "node"
      ? `seq ${status.last_seq ?? "–"} · bdSeq ${status.bd_seq ?? "–"} · ${status.rebirths_requested} rebirths asked`
      : `of ${node.node}`;
  const born = status.last_birth ? ` · born ${new Date(status.last_birth).toLocaleTimeString()}` : "";
  return {
    online: status.online,
    text: `Sparkplug ${kind} ${status.online ? "online" : "offline"}`,
    title: `${detail}${born}`,
  };
}

/**
 * Calls `changed(folders)` with a fresh `Map(folder → {online, text, title})` after each
 * answer; `stop()` ends the polling with the page.
 */
export function sparkplugFolders(changed) {
  if (!may("sparkplug", "*", "read")) return { stop() {} };
  let gone = false;
  const poll = async () => {
    const nodes = await call("GET", "/svc/sparkplug/nodes");
    const folders = new Map();
    for (const node of nodes) {
      if (node.folder) folders.set(node.folder, badge("node", node, node));
      for (const device of node.devices) {
        if (device.folder) folders.set(device.folder, badge("device", device, node));
      }
    }
    if (!gone) changed(folders);
  };
  // A refusal or a lost connection leaves the folders as they were: the tree goes on.
  const ask = () => poll().catch(() => {});
  ask();
  const timer = setInterval(ask, POLL_MS);
  return {
    stop() {
      gone = true;
      clearInterval(timer);
    },
  };
}

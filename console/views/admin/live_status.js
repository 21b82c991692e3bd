// The live status of an administration page's links (upstreams, connectors): asked every 2 s
// while the page is open, one ask at a time, each answer handed to its row; a list that no
// longer matches the statuses is read again.

import { call } from "../../api.js";
import { may } from "../../rights.js";

const POLL_MS = 2000;

/**
 * Asks `GET /svc/<feature>/status` for the rows of `rows` (record id → `show(status)`), and
 * says in `polled` when it last asked; `list()` reads the list again, `after()` runs after each
 * answer. Without read rights on `feature` it asks only when `poll()` is called: the first
 * refusal says why, asking again would only repeat it. `stop()` ends it with the page.
 */
export function liveStatus({ feature, rows, polled, list, fail, after = async () => {} }) {
  let gone = false;
  let polling = false;
  const poll = async () => {
    if (polling || gone) return;
    polling = true;
    try {
      const statuses = await call("GET", `/svc/${feature}/status`);
      const known = statuses.every((s) => rows.has(s.id)) && statuses.length === rows.size;
      for (const status of statuses) rows.get(status.id)?.(status);
      polled.textContent = `status: live, asked at ${new Date().toLocaleTimeString()}`;
      if (!known && !gone) setTimeout(() => list().catch(fail));
      await after();
    } finally {
      polling = false;
    }
  };
  const timer = may(feature, "*", "read") ? setInterval(() => poll().catch(fail), POLL_MS) : null;
  return {
    poll,
    stop() {
      gone = true;
      clearInterval(timer);
    },
  };
}

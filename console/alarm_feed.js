// The domain's standing alarms, live, for every part of the console that shows them (the
// navigation's badge and the Alarms view): one `GET /svc/alarms/stream` per domain, opened when
// the domain is chosen and kept while it stays chosen, so the badge counts on every page and
// opening the Alarms view costs no request.
//
// The stream opens with a snapshot (full AlarmStatus records), then sends changes, which carry
// the state, value and message but not the shelve's expiry, the out-of-service note or the
// setpoint. A change is shown at once from the event; the full records are then read again
// (`GET /svc/alarms/active`) and taken only if no change arrived while they were being read, so
// an older answer never overwrites a newer event.

import { call } from "./api.js";
import { may } from "./rights.js";
import { stream } from "./sse.js";

/** Priorities, most urgent first: the summary's order, as the server sorts. */
export const PRIORITIES = ["critical", "high", "medium", "low"];
/** States in which an operator must still act (the server's "unacknowledged"). */
export const NEEDS_ACK = new Set(["active_unacknowledged", "returned_unacknowledged", "latched"]);
/** Reconnect delays after the stream fails or ends: doubling up to the last. */
const RETRY_MS = [500, 1000, 2000, 5000, 10000];
/** How long a burst of changes is waited out before the full records are read again. */
const DETAILS_AFTER_MS = 300;

const listeners = new Set();
const alarms = new Map();
let domain = null;
let abort = null;
/** `off` (no rights or no domain), `connecting`, `live`, or why it is retrying. */
let status = "off";
/** Counts change events: a details read that raced with one is dropped. */
let changes = 0;
let detailsTimer = 0;

/** Follows the alarms of `name` (a no-op when already following it). */
export function start(name) {
  if (name === domain && abort) return;
  stop();
  domain = name;
  if (!may("alarms", "*")) {
    status = "off";
    notify();
    return;
  }
  abort = new AbortController();
  follow(abort.signal);
}

/** Stops following (log-out, another domain). */
export function stop() {
  abort?.abort();
  abort = null;
  domain = null;
  clearTimeout(detailsTimer);
  alarms.clear();
  status = "off";
  notify();
}

/** Calls `listener({list, unacknowledged, status, changes})` now and on every change; returns
 * the function that stops it. */
export function subscribe(listener) {
  listeners.add(listener);
  listener(view());
  return () => listeners.delete(listener);
}

/** The standing alarm `name`, if it is standing. */
export function get(name) {
  return alarms.get(name);
}

/** Most urgent first, then newest first, then by name. */
export function sorted(list) {
  const rank = (a) => PRIORITIES.indexOf(a.priority);
  return [...list].sort(
    (a, b) => rank(a) - rank(b) || Date.parse(b.since) - Date.parse(a.since) || a.name.localeCompare(b.name),
  );
}

function view() {
  const list = sorted(alarms.values());
  return {
    list,
    unacknowledged: list.filter((a) => NEEDS_ACK.has(a.state)).length,
    status,
    changes,
  };
}

function notify() {
  const now = view();
  for (const listener of listeners) listener(now);
}

async function follow(signal) {
  for (let attempt = 0; !signal.aborted; attempt += 1) {
    status = "connecting";
    notify();
    try {
      await stream("/svc/alarms/stream", (event, data) => {
        if (signal.aborted) return;
        if (event === "snapshot") {
          attempt = 0;
          replace(JSON.parse(data));
          status = "live";
        } else if (event === "change") {
          apply(JSON.parse(data));
        } else if (event === "error") {
          status = data;
        }
        notify();
      }, signal);
      if (signal.aborted) return;
      status = "the stream ended; reconnecting…";
    } catch (e) {
      if (signal.aborted) return;
      status = `${e.message}; retrying…`;
    }
    notify();
    await new Promise((done) => setTimeout(done, RETRY_MS[Math.min(attempt, RETRY_MS.length - 1)]));
  }
}

function replace(list) {
  alarms.clear();
  for (const alarm of list) alarms.set(alarm.name, alarm);
}

/** Applies a change event to the alarm it names, then asks for the full records. */
function apply(event) {
  changes += 1;
  if (event.state === "normal") {
    alarms.delete(event.alarm);
  } else {
    const before = alarms.get(event.alarm);
    alarms.set(event.alarm, {
      name: event.alarm,
      description: null,
      setpoint: null,
      deadband: 0,
      condition: true,
      raised: null,
      shelved: null,
      out_of_service: null,
      ...before,
      tag: event.tag,
      kind: event.kind,
      priority: event.priority,
      state: event.state,
      value: event.value,
      quality: event.quality,
      unit: event.unit,
      message: event.message,
      since: before?.state === event.state ? before.since : event.at,
      ...(event.cause === "raised" ? { raised: event.at } : {}),
      // What a state change leaves behind is not carried over (the read that follows fills in
      // a new shelve's or maintenance's details).
      ...(event.state !== "shelved" ? { shelved: null } : {}),
      ...(event.state !== "out_of_service" ? { out_of_service: null } : {}),
    });
  }
  clearTimeout(detailsTimer);
  detailsTimer = setTimeout(details, DETAILS_AFTER_MS);
}

async function details() {
  const seen = changes;
  const following = abort;
  try {
    const list = await call("GET", "/svc/alarms/active");
    if (following !== abort || !abort) return;
    if (seen !== changes) return; // a newer change came meanwhile; its own read follows
    replace(list);
    notify();
  } catch {
    // The events already shown stand; the next change reads again.
  }
}

/** How many standing alarms wait for acknowledgement now. */
export function unacknowledgedNow() {
  return view().unacknowledged;
}

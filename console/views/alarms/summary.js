// The alarm summary's rows, and the ways the alarm pages write states, values and times. A row
// is one standing alarm: priority, name (to its page), tag (to its tag page), state, value with
// its unit, message, since, and the operator's buttons. Rows waiting for acknowledgement are
// marked (`unack`: bold, tinted by priority) so they stand out from those already seen.

import { NEEDS_ACK } from "../../alarm_feed.js";
import { actionButtons } from "./actions.js";

/** `active_unacknowledged` → `active, unacknowledged`. */
export function stateLabel(state) {
  return {
    normal: "normal",
    active_unacknowledged: "active, unacknowledged",
    active_acknowledged: "active, acknowledged",
    returned_unacknowledged: "returned, unacknowledged",
    latched: "latched",
    shelved: "shelved",
    suppressed: "suppressed",
    out_of_service: "out of service",
  }[state] ?? state;
}

/** A value as JSON text with its unit; its quality when it is not good. */
export function valueText(value, unit, quality) {
  let text = value === undefined || value === null ? "—" : typeof value === "string" ? value : JSON.stringify(value);
  if (unit) text += ` ${unit}`;
  if (quality && quality !== "good") text += ` (${quality})`;
  return text;
}

/** A time in the browser's local time (the RFC 3339 text in its tooltip). */
export function timeCell(iso) {
  const td = document.createElement("td");
  td.className = "when";
  if (iso) {
    td.textContent = new Date(iso).toLocaleString();
    td.title = iso;
  } else {
    td.textContent = "—";
  }
  return td;
}

/** What the state column says: the state, and a shelve's or maintenance's details. */
function stateText(alarm) {
  if (alarm.state === "shelved" && alarm.shelved) {
    const until = new Date(alarm.shelved.until).toLocaleString();
    return `shelved until ${until} by ${alarm.shelved.by}: ${alarm.shelved.reason}`;
  }
  if (alarm.state === "out_of_service" && alarm.out_of_service) {
    const { by, comment } = alarm.out_of_service;
    return `out of service (${by}${comment ? `: ${comment}` : ""})`;
  }
  return stateLabel(alarm.state);
}

function cell(text, className) {
  const td = document.createElement("td");
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

function linkCell(text, href, title) {
  const td = document.createElement("td");
  const a = document.createElement("a");
  a.href = href;
  a.textContent = text;
  if (title) a.title = title;
  td.append(a);
  return td;
}

/** A priority as a coloured badge. */
export function priorityBadge(priority) {
  const span = document.createElement("span");
  span.className = `priority prio-${priority}`;
  span.textContent = priority;
  return span;
}

/** The row of `alarm`; `base` is `#/<domain>`, `context` that of `actionButtons`. */
export function summaryRow(alarm, base, context) {
  const tr = document.createElement("tr");
  tr.dataset.alarm = alarm.name;
  tr.dataset.state = alarm.state;
  tr.classList.add(`prio-${alarm.priority}`);
  if (NEEDS_ACK.has(alarm.state)) tr.classList.add("unack");
  const priority = document.createElement("td");
  priority.append(priorityBadge(alarm.priority));
  const actions = document.createElement("td");
  actions.className = "actions";
  actions.append(...actionButtons(alarm, context));
  tr.append(
    priority,
    linkCell(alarm.name, `${base}/alarms/${encodeURIComponent(alarm.name)}`, alarm.description ?? ""),
    linkCell(alarm.tag, `${base}/tag/${encodeURIComponent(alarm.tag)}`),
    cell(stateText(alarm), "state"),
    cell(valueText(alarm.value, alarm.unit, alarm.quality), "value"),
    cell(alarm.message),
    timeCell(alarm.since),
    actions,
  );
  return tr;
}

/** The row of an empty summary, saying why it is empty. */
export function noteRow(text, span = 8) {
  const tr = document.createElement("tr");
  const td = cell(text, "muted");
  td.colSpan = span;
  tr.append(td);
  return tr;
}

// The form of a connector (Administration → Connectors): create one, or edit a stored one.
// Name, kind, enabled and description are fields; settings, reconnect and points are JSON (a
// starter per kind, which the server checks and completes). The password is write-only: never
// shown, sent only when typed (or cleared on purpose). "Test without saving" connects once with
// what the form says, password included; "add as point" from the browser appends to the points.

import { wireRecordForm } from "./record_form.js";

/** A starter per kind: what a new connector of that kind needs, the rest left to defaults. */
export const STARTERS = {
  modbus: {
    settings: { host: "192.168.1.10", port: 502, unit_id: 1, framing: "tcp", timeout: "2s" },
    points: [
      {
        tag: "<namespace>/temperature",
        address: { function: "holding_register", address: 0, type: "int16", poll_interval: "1s" },
        historize: true,
        unit: "degC",
      },
    ],
  },
  opcua: {
    settings: {
      endpoint: "opc.tcp://plc:4840",
      security_policy: "None",
      security_mode: "None",
      identity: { type: "anonymous" },
      publishing_interval: "1s",
    },
    points: [
      { tag: "<namespace>/temperature", address: { node_id: "ns=2;s=Temperature", mode: "subscribe" } },
    ],
  },
};

const FIELDS = `
  <div class="row">
    <label>Name <input name="name" required maxlength="128" placeholder="plc1"></label>
    <label>Kind <select name="kind"><option value="modbus">Modbus TCP</option>
      <option value="opcua">OPC UA</option></select></label>
    <label><input name="enabled" type="checkbox" checked> Enabled</label>
    <label>Description <input name="description" maxlength="256"></label>
  </div>
  <div class="row">
    <label>Password (OPC UA user) <input name="password" type="password" autocomplete="new-password"></label>
    <label class="clear-password" hidden><input name="clear" type="checkbox"> Clear the password</label>
  </div>
  <div class="connector-json">
    <label>Settings (JSON) <textarea name="settings" rows="8" spellcheck="false"></textarea></label>
    <label>Points (JSON array) <textarea name="points" rows="8" spellcheck="false"></textarea></label>
    <label>Reconnect (JSON; empty: 1s doubling to 60s)
      <textarea name="reconnect" rows="2" spellcheck="false" placeholder='{"initial": "1s", "max": "60s", "jitter": 0.2}'></textarea></label>
  </div>
  <div class="row">
    <button class="primary" type="submit">Save connector</button>
    <button type="button" class="test">Test without saving</button>
    <button type="button" class="cancel" hidden>Cancel editing</button>
  </div>`;

const pretty = (value) => JSON.stringify(value, null, 2);

/** The JSON of the textarea `name`, or an error naming it. */
function parsed(el, name, label, empty) {
  const text = el[name].value.trim();
  if (!text) return empty;
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(`${label} is not JSON: ${e.message}`);
  }
}

/**
 * Fills `form` with the connector fields; `saved()` runs after a save, `tested(answer, name)`
 * after a test, `fail(e)` on a refusal. Returns `{ edit(record), addPoint(point), useNamespace(path), editing() }`
 * (`edit(null)`: a new connector).
 */
export function connectorForm(form, { writable, saved, tested, fail }) {
  form.innerHTML = FIELDS;
  form.setAttribute("aria-labelledby", "connector-form-title");
  const el = form.elements;
  const heading = document.createElement("h3");
  heading.id = "connector-form-title";
  form.prepend(heading);
  let editing = null;
  /** What the starters' tags begin with: the domain's namespace once it is known. */
  let namespace = "<namespace>";

  /** The starter's JSON text of `part` (`settings`, `points`) for `kind`. */
  const starterText = (kind, part) => pretty(STARTERS[kind][part]).replaceAll("<namespace>", namespace);
  /** Whether the JSON areas still hold a kind's starter (then a change of kind replaces them). */
  const untouched = () =>
    Object.keys(STARTERS).some(
      (kind) =>
        el.settings.value === starterText(kind, "settings") && el.points.value === starterText(kind, "points"),
    ) || (!el.settings.value.trim() && !el.points.value.trim());
  const starter = (kind) => {
    el.settings.value = starterText(kind, "settings");
    el.points.value = starterText(kind, "points");
  };
  el.kind.addEventListener("change", () => {
    if (untouched()) starter(el.kind.value);
  });

  const edit = (record) => {
    editing = record;
    form.reset();
    heading.textContent = record ? `Edit “${record.name}”` : "New connector";
    form.querySelector(".cancel").hidden = !record;
    form.querySelector(".clear-password").hidden = !record?.password_set;
    el.password.placeholder = record?.password_set ? "set; type to replace" : "";
    form.dataset.editing = record ? record.name : "";
    if (!record) {
      starter(el.kind.value);
      return;
    }
    el.name.value = record.name;
    el.kind.value = record.kind;
    el.enabled.checked = record.enabled;
    el.description.value = record.description ?? "";
    el.settings.value = pretty(record.settings ?? {});
    el.points.value = pretty(record.points ?? []);
    el.reconnect.value = record.reconnect ? JSON.stringify(record.reconnect) : "";
    form.scrollIntoView({ block: "nearest" });
  };

  /** The record the form describes (throws, naming the area, when a JSON area is not JSON). */
  const body = () => {
    const fields = {
      name: el.name.value.trim(),
      kind: el.kind.value,
      enabled: el.enabled.checked,
      settings: parsed(el, "settings", "Settings", {}),
      points: parsed(el, "points", "Points", []),
    };
    const reconnect = parsed(el, "reconnect", "Reconnect", null);
    if (reconnect) fields.reconnect = reconnect;
    const description = el.description.value.trim();
    // An update taking null keeps the stored description: emptying it sends "".
    if (description || editing?.description) fields.description = description;
    if (el.password.value) fields.password = el.password.value;
    else if (el.clear.checked) fields.password = "";
    return fields;
  };

  wireRecordForm(form, {
    table: "connectors",
    body,
    editing: () => editing,
    edit,
    saved,
    tested,
    nameOf: (fields) => fields.name || "the connector",
    fail,
  });

  /** Appends `point` to the points JSON (an area that is not a JSON array is left alone). */
  const addPoint = (point) => {
    const points = parsed(el, "points", "Points", []);
    if (!Array.isArray(points)) throw new Error("Points is not a JSON array: the point was not added.");
    // The starter's example is replaced by the first point added.
    const starters = Object.keys(STARTERS).map((kind) => starterText(kind, "points"));
    const kept = starters.includes(el.points.value) ? [] : points;
    el.points.value = pretty([...kept, point]);
  };

  /** Uses `path` (a namespace of the domain) in the starters' tags. */
  const useNamespace = (path) => {
    if (!path) return;
    const fresh = untouched() && !editing;
    namespace = path;
    if (fresh) starter(el.kind.value);
  };

  for (const control of el) control.disabled = !writable;
  form.hidden = !writable;
  edit(null);
  return { edit, addPoint, useNamespace, editing: () => editing };
}

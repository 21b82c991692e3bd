// The filter builder's controls: one row per condition (field, operator, type, value, and
// whether it belongs to the one-of group), or the raw query text for what rows cannot say.
// It hands the query pairs to `apply` and never judges them: the server does.

import { OPERATORS, TYPES, condition, fromRaw, rawPairs, toPairs, toRaw } from "./filter.js";

function select(name, options, chosen) {
  const el = document.createElement("select");
  el.name = name;
  el.setAttribute("aria-label", name);
  for (const [value, label] of options) el.append(new Option(label, value, false, value === chosen));
  return el;
}

function conditionRow(c, fieldList) {
  const tr = document.createElement("tr");
  tr.className = "condition";
  const field = document.createElement("input");
  field.name = "field";
  field.value = c.field;
  field.placeholder = "field (a.b for nested)";
  field.setAttribute("aria-label", "field");
  field.setAttribute("list", fieldList);
  const value = document.createElement("input");
  value.name = "value";
  value.value = c.value;
  value.placeholder = "value";
  value.setAttribute("aria-label", "value");
  const any = document.createElement("input");
  any.type = "checkbox";
  any.name = "any";
  any.checked = c.any;
  any.setAttribute("aria-label", "one of");
  const remove = document.createElement("button");
  remove.type = "button";
  remove.textContent = "×";
  remove.title = "Remove this condition";
  remove.addEventListener("click", () => tr.remove());
  const ops = OPERATORS.map(([op, meaning]) => [op, `${op} — ${meaning}`]);
  const types = TYPES.map((t) => [t, t || "any type"]);
  for (const control of [field, select("op", ops, c.op), select("type", types, c.type), value, any, remove]) {
    const td = document.createElement("td");
    td.append(control);
    tr.append(td);
  }
  return tr;
}

/**
 * Fills `section` with the builder; `apply(pairs)` runs with the query pairs when the user
 * applies the filter. Returns `{ knownFields(names) }` to offer field names as they appear.
 */
export function filterBuilder(section, apply, fail) {
  section.innerHTML = `
    <div class="row"><strong>Filter</strong>
      <button type="button" class="add">Add condition</button>
      <button type="button" class="mode" aria-pressed="false">Raw query</button>
      <button type="button" class="primary apply">Apply</button>
      <button type="button" class="clear">Clear</button>
      <span class="muted">Conditions marked “one of” form a group of which one must hold.</span></div>
    <table class="conditions"><thead><tr><th>Field</th><th>Operator</th><th>Type</th><th>Value</th>
      <th>One of</th><th></th></tr></thead><tbody></tbody></table>
    <textarea class="raw" rows="4" cols="80" hidden aria-label="Raw query, one key=value per line"
      placeholder="filter[price][gt][number]=5"></textarea>
    <datalist id="record-fields"></datalist>`;
  const rows = section.querySelector("tbody");
  const table = section.querySelector(".conditions");
  const raw = section.querySelector(".raw");
  const mode = section.querySelector(".mode");
  const isRaw = () => !raw.hidden;

  const conditions = () =>
    [...rows.querySelectorAll(".condition")].map((tr) => {
      const get = (name) => tr.querySelector(`[name="${name}"]`);
      return condition(get("field").value.trim(), get("op").value, get("type").value, get("value").value, get("any").checked);
    });
  const pairs = () => (isRaw() ? rawPairs(raw.value) : toPairs(conditions()));
  const showRows = (list) => rows.replaceChildren(...list.map((c) => conditionRow(c, "record-fields")));

  section.querySelector(".add").addEventListener("click", () => {
    rows.append(conditionRow(condition(), "record-fields"));
    rows.lastElementChild.querySelector("input").focus();
  });
  mode.addEventListener("click", () => {
    if (isRaw()) {
      const parsed = fromRaw(raw.value);
      if (!parsed) {
        fail(new Error("This query has parts the builder cannot show; edit it as raw text."));
        return;
      }
      showRows(parsed);
    } else {
      raw.value = toRaw(toPairs(conditions()));
    }
    raw.hidden = isRaw();
    table.hidden = isRaw();
    mode.setAttribute("aria-pressed", String(isRaw()));
  });
  section.querySelector(".apply").addEventListener("click", () => apply(pairs()));
  section.querySelector(".clear").addEventListener("click", () => {
    raw.value = "";
    showRows([]);
    apply([]);
  });
  return {
    knownFields(names) {
      section.querySelector("datalist").replaceChildren(...names.map((n) => new Option(n)));
    },
  };
}

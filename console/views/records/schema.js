// The schema editor: a table's collection definition (description, fields with type,
// required and full-text search, indexes with uniqueness), saved with `POST /svc/collections`
// when the table has none and `PUT` when it has one (the server swaps it in one step), and
// removed with `DELETE` (the records stay).

import { call } from "../../api.js";

export const FIELD_TYPES = ["string", "number", "boolean", "date", "json", "file", "url", "editor", "relation", "record"];

function cell(control) {
  const td = document.createElement("td");
  td.append(control);
  return td;
}

function input(name, value, placeholder = "") {
  const el = document.createElement("input");
  el.name = name;
  el.value = value;
  el.placeholder = placeholder;
  el.setAttribute("aria-label", placeholder || name);
  return el;
}

function checkbox(name, checked, label) {
  const el = document.createElement("input");
  el.type = "checkbox";
  el.name = name;
  el.checked = checked;
  el.setAttribute("aria-label", label);
  return el;
}

function removeButton(tr) {
  const button = document.createElement("button");
  button.type = "button";
  button.textContent = "Remove";
  button.addEventListener("click", () => tr.remove());
  return button;
}

function fieldRow(field = { name: "", type: "string", required: false, searchable: false }) {
  const tr = document.createElement("tr");
  tr.className = "schema-field";
  const type = document.createElement("select");
  type.name = "type";
  type.setAttribute("aria-label", "type");
  for (const t of FIELD_TYPES) type.append(new Option(t, t, false, t === field.type));
  tr.append(
    cell(input("name", field.name, "field name")),
    cell(type),
    cell(checkbox("required", field.required, "required")),
    cell(checkbox("searchable", field.searchable ?? false, "full-text search")),
    cell(removeButton(tr)),
  );
  return tr;
}

function indexRow(index = { fields: [], isUnique: false }) {
  const tr = document.createElement("tr");
  tr.className = "schema-index";
  tr.append(
    cell(input("fields", index.fields.join(", "), "fields, comma separated")),
    cell(checkbox("unique", index.isUnique, "unique")),
    cell(removeButton(tr)),
  );
  return tr;
}

/** The definition the form shows. */
function definition(form, name) {
  const value = (tr, n) => tr.querySelector(`[name=${n}]`);
  return {
    name,
    description: form.elements.description.value,
    fields: [...form.querySelectorAll(".schema-field")]
      .filter((tr) => value(tr, "name").value.trim())
      .map((tr) => ({
        name: value(tr, "name").value.trim(),
        type: value(tr, "type").value,
        required: value(tr, "required").checked,
        searchable: value(tr, "searchable").checked,
      })),
    indexDetails: [...form.querySelectorAll(".schema-index")]
      .map((tr) => ({
        fields: value(tr, "fields").value.split(",").map((f) => f.trim()).filter(Boolean),
        isUnique: value(tr, "unique").checked,
      }))
      .filter((index) => index.fields.length),
  };
}

/**
 * Fills `form` with the editor of `table`'s `schema` (null: none yet); `changed()` runs
 * after the server stored or removed it.
 */
export function schemaEditor(form, { table, domain, schema, writable, changed, fail }) {
  form.innerHTML = `
    <label class="field"><span>Description</span><input name="description"></label>
    <table><thead><tr><th>Field</th><th>Type</th><th>Required</th><th>Full-text</th><th></th></tr></thead>
      <tbody class="fields"></tbody></table>
    <div class="row"><button type="button" class="add-field">Add field</button></div>
    <table><thead><tr><th>Index on</th><th>Unique</th><th></th></tr></thead><tbody class="indexes"></tbody></table>
    <div class="row"><button type="button" class="add-index">Add index</button></div>
    <div class="row"><button type="submit" class="primary">Save schema</button>
      <button type="button" class="drop">Remove schema</button>
      <span class="status"></span></div>`;
  form.elements.description.value = schema?.description ?? "";
  const fields = form.querySelector(".fields");
  const indexes = form.querySelector(".indexes");
  fields.append(...(schema?.fields ?? []).map(fieldRow));
  indexes.append(...(schema?.indexDetails ?? []).map(indexRow));
  if (!schema) fields.append(fieldRow());
  form.querySelector(".add-field").addEventListener("click", () => fields.append(fieldRow()));
  form.querySelector(".add-index").addEventListener("click", () => indexes.append(indexRow()));
  const drop = form.querySelector(".drop");
  drop.hidden = !schema;
  const status = form.querySelector(".status");
  const path = `/svc/${encodeURIComponent(`${domain}.collections:${table}`)}`;

  form.onsubmit = async (event) => {
    event.preventDefault();
    try {
      const body = definition(form, table);
      if (schema) await call("PUT", path, body);
      else await call("POST", "/svc/collections", body);
      status.textContent = "saved";
      changed();
    } catch (e) {
      fail(e);
    }
  };
  drop.addEventListener("click", async () => {
    if (!confirm(`Remove the schema of ${table}? Its records stay.`)) return;
    try {
      await call("DELETE", path);
      changed();
    } catch (e) {
      fail(e);
    }
  });
  for (const control of form.querySelectorAll("input, select, button")) control.disabled = !writable;
}

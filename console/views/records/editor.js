// The record editor: with a collection schema, one typed input per field (text, number,
// true/false, date, JSON, files) plus a JSON box for fields the schema does not name; without
// one, the record as JSON and a file picker for any field. It creates (`POST /svc/<table>`)
// or updates (`PUT /svc/<id>`), as multipart when files are attached.

import { call, callForm } from "../../api.js";

/** Field types whose value is text typed into a one-line input, with the input's type. */
const LINE_INPUTS = { string: "text", url: "url", relation: "text", record: "text", date: "text" };

function labelled(text, control) {
  const label = document.createElement("label");
  label.className = "field";
  const name = document.createElement("span");
  name.textContent = text;
  label.append(name, control);
  return label;
}

function textArea(name, value, rows = 3) {
  const area = document.createElement("textarea");
  area.name = name;
  area.rows = rows;
  area.cols = 50;
  area.value = value;
  return area;
}

/** The input of one schema field, filled with `value`. */
function inputFor(field, value) {
  if (field.type === "boolean") {
    const select = document.createElement("select");
    select.name = field.name;
    for (const [label, v] of [["—", ""], ["true", "true"], ["false", "false"]]) {
      select.append(new Option(label, v, false, String(value ?? "") === v));
    }
    return select;
  }
  if (field.type === "json" || field.type === "editor") {
    const text = value === undefined ? "" : field.type === "json" ? JSON.stringify(value) : String(value);
    return textArea(field.name, text);
  }
  const input = document.createElement("input");
  input.name = field.name;
  if (field.type === "file") {
    input.type = "file";
    input.multiple = true;
    return input;
  }
  input.type = field.type === "number" ? "number" : LINE_INPUTS[field.type] ?? "text";
  if (field.type === "number") input.step = "any";
  if (field.type === "date") input.placeholder = "2026-01-31T08:00:00.000Z";
  input.value = value === undefined || value === null ? "" : String(value);
  return input;
}

/** The typed value of a schema field's input; `undefined` when left empty. */
function valueOf(field, control) {
  const text = control.value;
  if (text === "") return undefined;
  switch (field.type) {
    case "number":
      return Number(text);
    case "boolean":
      return text === "true";
    case "json":
      try {
        return JSON.parse(text);
      } catch {
        throw new Error(`${field.name} is not JSON: quote text, e.g. "on".`);
      }
    default:
      return text;
  }
}

function parseObject(text, what) {
  let value;
  try {
    value = JSON.parse(text || "{}");
  } catch {
    throw new Error(`${what} is not JSON.`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new Error(`${what} must be a JSON object.`);
  }
  return value;
}

/**
 * Fills `form` with an editor for `record` (null: a new one) of `table` under `schema`
 * (a collection or null); `saved(record)` runs after the server stored it.
 */
export function recordEditor(form, { table, schema, record, writable, saved, fail }) {
  const fields = (schema?.fields ?? []).filter((f) => f.name !== "id");
  const known = new Set(["id", "created_dt", "updated_dt", ...fields.map((f) => f.name)]);
  const extra = Object.fromEntries(Object.entries(record ?? {}).filter(([k]) => !known.has(k)));
  form.replaceChildren();
  for (const field of fields) {
    const control = inputFor(field, record?.[field.name]);
    control.required = field.required && !record && field.type !== "file";
    const label = labelled(`${field.name}${field.required ? " *" : ""} (${field.type})`, control);
    if (field.type === "file" && record?.[field.name]) {
      const current = document.createElement("span");
      current.className = "muted";
      current.textContent = `now: ${[record[field.name]].flat().join(", ")}`;
      label.append(current);
    }
    form.append(label);
  }
  const rest = textArea("rest", JSON.stringify(extra, null, 1), fields.length ? 2 : 5);
  form.append(labelled(fields.length ? "Other fields (JSON)" : "Record (JSON)", rest));
  // Without a schema, any field may carry files.
  const fileField = document.createElement("input");
  const files = document.createElement("input");
  if (!fields.length) {
    fileField.name = "file_field";
    fileField.placeholder = "field name";
    files.type = "file";
    files.multiple = true;
    files.name = "files";
    const row = document.createElement("div");
    row.className = "row";
    row.append(labelled("Files in field", fileField), files);
    form.append(row);
  }
  const submit = document.createElement("button");
  submit.type = "submit";
  submit.className = "primary";
  submit.textContent = record ? "Save" : "Create";
  form.append(submit);
  for (const control of form.elements) control.disabled = !writable;

  form.onsubmit = async (event) => {
    event.preventDefault();
    try {
      const body = parseObject(rest.value, fields.length ? "Other fields" : "The record");
      const parts = [];
      for (const field of fields) {
        const control = form.elements[field.name];
        if (field.type === "file") {
          for (const file of control.files) parts.push([field.name, file]);
          continue;
        }
        const value = valueOf(field, control);
        // Emptying a field of a stored record clears it; a new record just leaves it out.
        if (value !== undefined) body[field.name] = value;
        else if (record && record[field.name] !== undefined) body[field.name] = null;
      }
      if (!fields.length && files.files.length) {
        if (!fileField.value) throw new Error("Name the field the files go in.");
        for (const file of files.files) parts.push([fileField.value, file]);
      }
      const [method, path] = record
        ? ["PUT", `/svc/${encodeURIComponent(record.id)}`]
        : ["POST", `/svc/${encodeURIComponent(table)}`];
      let stored;
      if (parts.length) {
        const multipart = new FormData();
        multipart.append("record", JSON.stringify(body));
        for (const [name, file] of parts) multipart.append(name, file, file.name);
        stored = await callForm(method, path, multipart);
      } else {
        stored = await call(method, path, body);
      }
      saved(stored);
    } catch (e) {
      fail(e);
    }
  };
}

// CSV with typed columns, the same format `svc records export` writes and `svc records
// import` reads, so a file moves between the console and the CLI unchanged. A header is
// `name` or `name:type` (`string number boolean json`); an empty cell means the field is
// absent; an untyped cell is a number if it reads as one, `true`/`false` a boolean, else text.
// Export types each column with the narrowest type that holds every value exactly.

const TYPE_WORDS = {
  string: "string",
  date: "string",
  number: "number",
  boolean: "boolean",
  bool: "boolean",
  json: "json",
  object: "json",
};

/** `name:type` → `{ name, type }` (type "" when absent or unknown, as the CLI reads it). */
export function parseHeader(cell) {
  const text = cell.trim();
  const at = text.lastIndexOf(":");
  const type = at > 0 ? TYPE_WORDS[text.slice(at + 1).toLowerCase()] : undefined;
  return type ? { name: text.slice(0, at), type } : { name: text, type: "" };
}

const NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

/** One cell's value; `undefined` when the cell is empty. Throws a sentence on bad input. */
export function parseCell(column, cell) {
  if (cell === "") return undefined;
  switch (column.type) {
    case "string":
      return cell;
    case "number":
      if (!NUMBER.test(cell.trim())) throw new Error(`column ${column.name}: "${cell}" is not a number`);
      return Number(cell.trim());
    case "boolean": {
      const word = cell.trim().toLowerCase();
      if (word !== "true" && word !== "false") throw new Error(`column ${column.name}: "${cell}" is not true or false`);
      return word === "true";
    }
    case "json":
      try {
        return JSON.parse(cell);
      } catch (e) {
        throw new Error(`column ${column.name}: invalid JSON "${cell}": ${e.message}`);
      }
    default:
      if (cell === "true" || cell === "false") return cell === "true";
      return NUMBER.test(cell) ? Number(cell) : cell;
  }
}

/** RFC 4180 text → rows of cells (quoted cells may hold commas, quotes and line breaks). */
export function parseRows(text) {
  const rows = [];
  let row = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i += 1;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") {
      row.push(cell);
      cell = "";
    } else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i += 1;
      row.push(cell);
      rows.push(row);
      row = [];
      cell = "";
    } else cell += c;
  }
  if (quoted) throw new Error("the CSV ends inside a quoted cell");
  if (cell !== "" || row.length) {
    row.push(cell);
    rows.push(row);
  }
  return rows.filter((r) => r.length > 1 || r[0] !== "");
}

/** Typed CSV text → records. */
export function parseRecords(text) {
  const [header, ...rows] = parseRows(text);
  if (!header) return [];
  const columns = header.map(parseHeader);
  return rows.map((cells, n) => {
    if (cells.length > columns.length) throw new Error(`row ${n + 2} has more cells than the header`);
    const record = {};
    cells.forEach((cell, i) => {
      const value = parseCell(columns[i], cell);
      if (value !== undefined) record[columns[i].name] = value;
    });
    return record;
  });
}

function kindOf(value) {
  if (typeof value === "string" && value !== "") return "string";
  if (typeof value === "number") return "number";
  if (typeof value === "boolean") return "boolean";
  return "json";
}

/** Columns (keys in order of first appearance) with the narrowest type per column. */
export function typedColumns(records) {
  const kinds = new Map();
  for (const record of records) {
    for (const [key, value] of Object.entries(record)) {
      const kind = kindOf(value);
      const seen = kinds.get(key);
      kinds.set(key, seen === undefined || seen === kind ? kind : "json");
    }
  }
  return [...kinds].map(([name, type]) => ({ name, type }));
}

function quote(cell) {
  return /[",\r\n]/.test(cell) ? `"${cell.replaceAll('"', '""')}"` : cell;
}

function cellOf(column, value) {
  if (value === undefined) return "";
  if (column.type === "string" && typeof value === "string") return value;
  if (column.type !== "json" && (typeof value === "number" || typeof value === "boolean")) return String(value);
  return JSON.stringify(value);
}

/** Records → typed CSV text. */
export function formatRecords(records) {
  const columns = typedColumns(records);
  const lines = [columns.map((c) => quote(`${c.name}:${c.type}`)).join(",")];
  for (const record of records) lines.push(columns.map((c) => quote(cellOf(c, record[c.name]))).join(","));
  return lines.join("\n") + "\n";
}

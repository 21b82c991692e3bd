// The records filter: a list of conditions (all must hold) plus an optional group of which
// one must hold, edited as rows or as the raw query text, and written out as the exact query
// pairs `GET /svc/<table>/all` takes (`filter[f][op][type]=v`, `filter_or[n][f][op][type]=v`)
// and as the `svc records list` options that send the same pairs.

/** Every list operator the server knows, with what it means to a person. */
export const OPERATORS = [
  ["eq", "equals"],
  ["ne", "does not equal"],
  ["gt", "greater than"],
  ["gte", "at least"],
  ["lt", "less than"],
  ["lte", "at most"],
  ["contains", "contains"],
  ["~", "contains, any case"],
  ["!~", "does not contain, any case"],
  ["in", "is one of (list)"],
  ["nin", "is none of (list)"],
  ["?=", "some element equals"],
  ["*=", "every element equals"],
  ["?~", "some element contains"],
  ["*~", "every element contains"],
  ["CONTAINSNOT", "does not contain"],
  ["CONTAINSALL", "contains all of (list)"],
  ["CONTAINSANY", "contains any of (list)"],
  ["CONTAINSNONE", "contains none of (list)"],
  ["INSIDE", "is inside (list)"],
  ["NOTINSIDE", "is not inside (list)"],
  ["ALLINSIDE", "all inside (list)"],
  ["ANYINSIDE", "any inside (list)"],
  ["NONEINSIDE", "none inside (list)"],
  ["@@", "matches the words"],
];

/** `<type>` words; "" leaves the type out and lets the server infer it. */
export const TYPES = ["", "string", "number", "boolean", "date", "null", "object"];

/** The CLI's symbols for the operators that have one. */
const CLI_SYMBOLS = { eq: "=", ne: "!=", gt: ">", gte: ">=", lt: "<", lte: "<=" };

/** A condition: `{ field, op, type, value, any }` (`any`: part of the one-of group). */
export function condition(field = "", op = "eq", type = "", value = "", any = false) {
  return { field, op, type, value, any };
}

/** The conditions as query pairs, in order: the all-of ones, then the one-of group. */
export function toPairs(conditions) {
  const pairs = [];
  let n = 0;
  for (const c of conditions) {
    if (!c.field) continue;
    const brackets = `[${c.field}][${c.op}]${c.type ? `[${c.type}]` : ""}`;
    pairs.push([c.any ? `filter_or[${n++}]${brackets}` : `filter${brackets}`, c.type === "null" ? "" : c.value]);
  }
  return pairs;
}

const PAIR = /^(filter|filter_or\[\d+\])\[([^\]]+)\]\[([^\]]+)\](?:\[([^\]]+)\])?$/;

/**
 * The raw text — one `key=value` per line, as in a query string but not percent-encoded —
 * as conditions; `null` when a line is not a filter pair the builder can show, in which case
 * the raw text is sent as it is and the server judges it.
 */
export function fromRaw(text) {
  const conditions = [];
  for (const line of rawLines(text)) {
    const [key, value] = splitPair(line);
    const m = PAIR.exec(key);
    if (!m || !OPERATORS.some(([op]) => op === m[3]) || !TYPES.includes(m[4] ?? "")) return null;
    conditions.push(condition(m[2], m[3], m[4] ?? "", value, m[1] !== "filter"));
  }
  return conditions;
}

/** The raw text of some pairs. */
export function toRaw(pairs) {
  return pairs.map(([k, v]) => `${k}=${v}`).join("\n");
}

/** The pairs of raw text, whatever keys it holds. */
export function rawPairs(text) {
  return rawLines(text).map(splitPair);
}

function rawLines(text) {
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
}

/** `key=value`, where the key's `=` is the first one outside its brackets (`[!=]` is inside). */
function splitPair(line) {
  let depth = 0;
  for (let i = 0; i < line.length; i += 1) {
    const c = line[i];
    if (c === "[") depth += 1;
    else if (c === "]") depth = Math.max(0, depth - 1);
    else if (c === "=" && depth === 0) return [line.slice(0, i), line.slice(i + 1)];
  }
  return [line, ""];
}

/** Quotes `text` for a POSIX shell. */
export function shellQuote(text) {
  return /^[A-Za-z0-9_.,:/@%+=-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * `svc records list` options sending the same pairs (`--filter 'price:number > 5'`), or null
 * when a pair has no CLI form.
 */
export function cliOptions(pairs) {
  const options = [];
  for (const [key, value] of pairs) {
    const m = PAIR.exec(key);
    if (!m) return null;
    const [, group, field, op, type] = m;
    const typed = type && type !== "string" ? `${field}:${type}` : field;
    const symbol = CLI_SYMBOLS[op] ?? op;
    // The CLI strips one pair of surrounding quotes: an untyped quoted value is text, a typed
    // one keeps its type. A string is quoted so it stays one, and any value that starts like
    // an operator must be (the CLI refuses it bare; untyped, it is text to the server too).
    const quoted = type === "string" || /^[=!<>~?*@"']/.test(value) || (!type && value === "");
    const shown = type === "null" ? "null" : quoted ? `"${value}"` : value;
    const flag = group === "filter" ? "--filter" : "--or-filter";
    options.push(flag, shellQuote(`${typed} ${symbol} ${shown}`));
  }
  return options;
}

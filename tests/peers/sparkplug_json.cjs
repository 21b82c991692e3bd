// JSON <-> Sparkplug B for the Node.js Sparkplug peers of the tests (sparkplug_edge.cjs,
// sparkplug_listen.cjs): turns the tests' metric JSON into what npm's sparkplug-payload 1.0.3
// (Eclipse Tahu's codec) encodes, and decodes a payload with the protobuf classes that package
// generated, into JSON that loses nothing (64-bit integers as strings, bytes as base64, the raw
// protobuf value field beside the interpreted value). Loaded with NODE_PATH pointing at
// $CARGO_TARGET_DIR/peers-node/node_modules (scripts/test.sh installs it).
//
// Metric JSON in (the tests' shape, snake_case flags):
//   {"name":"Temp","alias":1,"type":"Int32","value":-12,"timestamp":1767225600000,
//    "properties":{"engUnit":{"type":"String","value":"°C"}},
//    "is_historical":false,"is_transient":false,"metadata":{...}}
//   - "name" or "alias" may be left out (alias-only data messages); "value": null sends is_null.
//   - Int64/UInt64/DateTime values may be JSON strings ("18446744073709551615"): they become a
//     `Long` (unsigned for UInt64 and DateTime) so all 64 bits go out exactly.
//   - Bytes and File values are base64 strings.
//   - DataSet: sparkplug-payload's shape {"numOfColumns":2,"columns":["a","b"],
//     "types":["Int32","String"],"rows":[[1,"x"],[2,"y"]]} (row values converted per column type).
//   - Template: {"version":"v1","templateRef":"Motor","isDefinition":false,
//     "metrics":[M...],"parameters":[{"name":"p","type":"Int32","value":3}]}.
//   - PropertySet: {"key":{"type":..,"value":..}}; PropertySetList: [PropertySet...].
//
// Metric JSON out (decode):
//   {"name","alias","timestamp" (each only when on the wire), "type" (Sparkplug type name, or
//    the number when unknown), "value", "is_historical","is_transient","is_null" (booleans),
//    "properties" / "metadata" (when present), "raw":{"<protobuf field>":<wire value>}}
//   - value: Int8/Int16/Int32 narrowed to their width from whichever field carries them (so
//     int_value 244 and 4294967284 both read -12 as Int8: `raw` tells them apart); UInt8..UInt32
//     as numbers, unmasked; Int64, UInt64 and DateTime as decimal strings; Float/Double as
//     numbers ("NaN", "Infinity", "-Infinity" as strings); Bytes/File base64; DataSet, Template
//     and property sets in the shapes above, decoded the same way.
//   - raw: the value field's protobuf name (int_value, long_value, ...) and its wire value
//     (64-bit as a string, bytes as base64, nested messages left out as true).
//   - payload timestamp, seq and metric timestamps/aliases are numbers when they fit 2^53.
"use strict";

const path = require("node:path");
const { createRequire } = require("node:module");

const sparkplug = require("sparkplug-payload").get("spBv1.0");
// sparkplug-payload tests `instanceof Long` against its own copy of `long`: take that copy.
const fromPayload = createRequire(require.resolve("sparkplug-payload"));
const Long = fromPayload("long");
const proto = fromPayload(path.join(path.dirname(require.resolve("sparkplug-payload")), "lib/sparkplugPayloadProto"))
  .org.eclipse.tahu.protobuf;

const TYPES = [
  "Unknown", "Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64", "Float",
  "Double", "Boolean", "String", "DateTime", "Text", "UUID", "DataSet", "Bytes", "File",
  "Template", "PropertySet", "PropertySetList",
];

function typeName(code) {
  return TYPES[code] && code !== 0 ? TYPES[code] : code;
}

// ---- JSON -> sparkplug-payload objects ------------------------------------------------------

function toLong(value, unsigned) {
  if (Long.isLong(value)) return value;
  if (typeof value === "string") return Long.fromString(value, unsigned);
  return Long.fromNumber(value, unsigned);
}

/** A test's JSON value of Sparkplug type `type` as sparkplug-payload's encoder takes it. */
function toValue(type, value) {
  if (value === null || value === undefined) return value;
  switch (String(type).toUpperCase()) {
    case "INT64":
    case "LONG":
      return toLong(value, false);
    case "UINT64":
    case "DATETIME":
      return toLong(value, true);
    case "UINT32":
      return typeof value === "string" ? Number(value) : value;
    case "BYTES":
    case "FILE":
      return typeof value === "string" ? Buffer.from(value, "base64") : Buffer.from(value);
    case "DATASET":
      return {
        ...value,
        numOfColumns: value.numOfColumns ?? value.columns.length,
        rows: (value.rows || []).map((row) => row.map((v, i) => toValue(value.types[i], v))),
      };
    case "TEMPLATE":
      return {
        ...value,
        metrics: value.metrics ? value.metrics.map(toMetric) : undefined,
        parameters: value.parameters
          ? value.parameters.map((p) => ({ ...p, value: toValue(p.type, p.value) }))
          : undefined,
      };
    case "PROPERTYSET":
      return toPropertySet(value);
    case "PROPERTYSETLIST":
      return value.map(toPropertySet);
    default:
      return value;
  }
}

function toPropertySet(set) {
  const out = {};
  for (const [key, p] of Object.entries(set)) out[key] = { type: p.type, value: toValue(p.type, p.value) };
  return out;
}

/** A test's metric JSON as a sparkplug-payload metric. */
function toMetric(m) {
  const out = { type: m.type, value: "value" in m ? toValue(m.type, m.value) : undefined };
  if (m.name !== undefined) out.name = m.name;
  if (m.alias !== undefined && m.alias !== null) out.alias = toLong(m.alias, true);
  if (m.timestamp !== undefined && m.timestamp !== null) out.timestamp = toLong(m.timestamp, true);
  if (m.is_historical !== undefined) out.isHistorical = m.is_historical;
  if (m.is_transient !== undefined) out.isTransient = m.is_transient;
  if (m.properties) out.properties = toPropertySet(m.properties);
  if (m.metadata) out.metadata = m.metadata;
  return out;
}

/** A test's payload JSON ({timestamp, seq, uuid, body (base64), metrics}) for encodePayload. */
function toPayload(p) {
  const out = { timestamp: toLong(p.timestamp ?? Date.now(), true), metrics: (p.metrics || []).map(toMetric) };
  if (p.seq !== undefined && p.seq !== null) out.seq = toLong(p.seq, true);
  if (p.uuid !== undefined) out.uuid = p.uuid;
  if (p.body !== undefined) out.body = Buffer.from(p.body, "base64");
  return out;
}

function encode(p) {
  return Buffer.from(sparkplug.encodePayload(toPayload(p)));
}

// ---- protobuf -> JSON ------------------------------------------------------------------------

/** A Long or number as a JSON number when exact, else a decimal string. */
function num(v) {
  if (Long.isLong(v)) {
    const n = v.toNumber();
    return Number.isSafeInteger(n) ? n : v.toString();
  }
  return v;
}

function float(v) {
  return Number.isFinite(v) ? v : String(v);
}

function has(message, field) {
  return Object.prototype.hasOwnProperty.call(message, field) && message[field] !== null;
}

// The field of a value oneof that is set (intValue, longValue, ...), or undefined.
function setField(holder) {
  return [
    "intValue", "longValue", "floatValue", "doubleValue", "booleanValue", "stringValue",
    "bytesValue", "datasetValue", "templateValue", "propertysetValue", "propertysetsValue",
    "extensionValue",
  ].find((f) => has(holder, f));
}

function snake(field) {
  return field.replace(/[A-Z]/g, (c) => "_" + c.toLowerCase());
}

function rawJson(holder, field) {
  if (!field) return {};
  const v = holder[field];
  let out;
  if (Long.isLong(v)) out = v.toString();
  else if (v instanceof Uint8Array) out = Buffer.from(v).toString("base64");
  else if (typeof v === "number") out = field === "intValue" ? v >>> 0 : float(v);
  else if (typeof v === "object") out = true;
  else out = v;
  return { [snake(field)]: out };
}

// The integer a holder carries, as a Long (from int_value or long_value).
function integer(holder) {
  if (has(holder, "longValue")) return Long.fromValue(holder.longValue);
  if (has(holder, "intValue")) return Long.fromNumber(holder.intValue >>> 0, true);
  return null;
}

/** The interpreted value of `holder` (a Metric, DataSetValue, Parameter or PropertyValue). */
function valueOf(code, holder) {
  const int = integer(holder);
  switch (code) {
    case 1: return int && ((int.low << 24) >> 24);
    case 2: return int && ((int.low << 16) >> 16);
    case 3: return int && (int.low | 0);
    case 5: case 6: case 7: return int && num(int.toUnsigned());
    case 4: return int && int.toSigned().toString();
    case 8: case 13: return int && int.toUnsigned().toString();
    case 9: return has(holder, "floatValue") ? float(holder.floatValue) : null;
    case 10: return has(holder, "doubleValue") ? float(holder.doubleValue) : null;
    case 11: return has(holder, "booleanValue") ? holder.booleanValue : null;
    case 12: case 14: case 15: return has(holder, "stringValue") ? holder.stringValue : null;
    case 16: return has(holder, "datasetValue") ? dataSetJson(holder.datasetValue) : null;
    case 17: case 18:
      return has(holder, "bytesValue") ? Buffer.from(holder.bytesValue).toString("base64") : null;
    case 19: return has(holder, "templateValue") ? templateJson(holder.templateValue) : null;
    case 20: return has(holder, "propertysetValue") ? propertySetJson(holder.propertysetValue) : null;
    case 21:
      return has(holder, "propertysetsValue")
        ? (holder.propertysetsValue.propertyset || []).map(propertySetJson)
        : null;
    default: return null;
  }
}

function dataSetJson(ds) {
  const types = ds.types || [];
  return {
    numOfColumns: num(ds.numOfColumns),
    columns: ds.columns || [],
    types: types.map(typeName),
    rows: (ds.rows || []).map((row) => (row.elements || []).map((e, i) => valueOf(types[i], e))),
  };
}

function templateJson(t) {
  const out = {};
  if (has(t, "version")) out.version = t.version;
  if (has(t, "templateRef")) out.templateRef = t.templateRef;
  if (has(t, "isDefinition")) out.isDefinition = t.isDefinition;
  out.metrics = (t.metrics || []).map(metricJson);
  out.parameters = (t.parameters || []).map((p) => ({
    name: p.name,
    type: typeName(p.type),
    value: valueOf(p.type, p),
    raw: rawJson(p, setField(p)),
  }));
  return out;
}

function propertySetJson(set) {
  const out = {};
  (set.keys || []).forEach((key, i) => {
    const p = set.values[i];
    out[key] = { type: typeName(p.type), value: p.isNull ? null : valueOf(p.type, p) };
  });
  return out;
}

function metadataJson(md) {
  const out = {};
  for (const f of ["isMultiPart", "contentType", "size", "seq", "fileName", "fileType", "md5", "description"]) {
    if (has(md, f)) out[f] = num(md[f]);
  }
  return out;
}

/** A decoded protobuf Metric as the tests' JSON (see the header). */
function metricJson(m) {
  const out = {};
  if (has(m, "name")) out.name = m.name;
  if (has(m, "alias")) out.alias = num(m.alias);
  if (has(m, "timestamp")) out.timestamp = num(m.timestamp);
  out.type = typeName(m.datatype);
  out.value = m.isNull ? null : valueOf(m.datatype, m);
  out.is_historical = !!m.isHistorical;
  out.is_transient = !!m.isTransient;
  out.is_null = !!m.isNull;
  if (has(m, "properties")) out.properties = propertySetJson(m.properties);
  if (has(m, "metadata")) out.metadata = metadataJson(m.metadata);
  out.raw = rawJson(m, setField(m));
  return out;
}

/** A Sparkplug payload (bytes) as JSON; throws when it is not one. */
function decode(bytes) {
  const p = proto.Payload.decode(bytes);
  const out = {};
  if (has(p, "timestamp")) out.timestamp = num(p.timestamp);
  if (has(p, "seq")) out.seq = num(p.seq);
  if (has(p, "uuid")) out.uuid = p.uuid;
  if (has(p, "body")) out.body = Buffer.from(p.body).toString("base64");
  out.metrics = (p.metrics || []).map(metricJson);
  return out;
}

/** What sparkplug-payload's own decoder made of a value, as JSON (Longs as strings, bytes base64). */
function libJson(v) {
  if (v === null || v === undefined) return v === undefined ? null : v;
  if (Long.isLong(v)) return v.toString();
  if (v instanceof Uint8Array) return Buffer.from(v).toString("base64");
  if (typeof v === "number") return float(v);
  if (Array.isArray(v)) return v.map(libJson);
  if (typeof v === "object") {
    const out = {};
    for (const [k, x] of Object.entries(v)) out[k] = libJson(x);
    return out;
  }
  return v;
}

module.exports = { sparkplug, Long, toMetric, toPayload, encode, decode, libJson, typeName };

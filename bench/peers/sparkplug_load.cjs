// The load of bench/sparkplug.sh: N edge nodes of M Double metrics each, every metric changing
// at a fixed rate, published to svc's MQTT broker either as Sparkplug B (what svc's host
// decodes into tags) or as plain JSON on the tags svc's host gives those metrics (what svc
// takes in without Sparkplug). Node.js with npm's mqtt 4.3.8 and sparkplug-payload 1.0.3
// (Eclipse Tahu's codec); NODE_PATH names their node_modules.
//
//   node sparkplug_load.cjs --mode sparkplug|json|birth --port N --username U --password P
//       [--group Bench] [--nodes 20] [--metrics 500] [--rate-hz 1] [--warmup 20]
//       [--duration 60] [--tail 3] [--prefix bench/plant/sp/Bench] [--qos 0]
//       [--json-writer batch|publish] [--max-buffer-mb 8]
//
// One MQTT connection per edge node `node<i>` (i = 1..N; MQTT 3.1.1, clean session, keep-alive
// 60 s, no reconnect), metrics `m<j>` (j = 1..M, alias j):
//   - sparkplug: will = NDEATH (bdSeq 0); on connect an NBIRTH (seq 0, bdSeq, every metric with
//     its name, alias, datatype Double and a value), then every period an NDATA of all M metrics
//     by alias only (datatype, value, metric timestamp = the tick's time), seq + 1 mod 256. An
//     NCMD `Node Control/Rebirth = true` (svc asks when it saw a gap) is counted and answered
//     with a new NBIRTH (seq 0), as a node would.
//   - json: every period the same M values, one message each, `{"value":v,"timestamp":ms}` on
//     `<prefix>/node<i>/m<j>` (QoS --qos), the topic svc's host gives metric j of node i. With
//     --json-writer batch (the default) the M PUBLISH packets of a tick are encoded here and
//     written to the node's socket in one write (a gateway flushing one scan); `publish` calls
//     mqtt.js's client.publish() once per value (costs this process about 3× the CPU: 4.2
//     against 1.35 µs per value at 5 Hz).
//   - birth: the NBIRTHs only (svc declares the metrics' tags from them), then each node's
//     NDEATH and DISCONNECT; exits.
// Value of metric j at time ts (epoch ms): ts + j, so a stored point is checked by
// value - timestamp = j.
//
// Pacing: ticks of period P = 1000 / rate ms. Node i publishes its tick k at
// t0 + k·P + (i-1)·P/N: the nodes are spread evenly over the period (independent edge nodes
// with their own scan clocks), each publishing its whole scan at once. t0 is the second after
// connecting; ticks run for warmup + duration + tail seconds, or until SIGTERM. The measured window is
// [t0 + warmup, t0 + warmup + duration) in tick time: values "in the window" are those whose
// timestamp lies in it. A tick that comes late (this process behind) is still stamped with its
// scheduled time and counted in `late_ticks` (> P/2 late) and `max_lag_ms`. When a node's
// socket holds more than --max-buffer-mb unsent (svc not reading), its tick is skipped and
// counted in `skipped_values` rather than buffered without bound. (The JSON batch writer goes
// past mqtt.js, which then sends a PINGREQ every keep-alive and closes the connection when no
// PINGRESP came back within the next: a PINGREQ behind 32 MB of unread publishes, ~30 s of
// svc's intake at 40 Hz, was not answered in time; 8 MB is ~8 s.)
//
// Prints `ready {"t0","from","to","end"}` (epoch ms) once every node is connected (and born),
// `done {...}` (counts: values sent, in the window, skipped, late ticks, max lag, rebirth
// requests, bytes, max socket backlog) once the last tick is written (at `end`, or at once on
// SIGTERM) and every connection closed cleanly, then exits 0; exits 1 on a connection error or a connection closed by svc.
"use strict";

const mqtt = require("mqtt");
const { parseArgs } = require("node:util");

const { values: args } = parseArgs({
  options: {
    mode: { type: "string" },
    port: { type: "string" },
    host: { type: "string", default: "127.0.0.1" },
    username: { type: "string", default: "bench" },
    password: { type: "string" },
    group: { type: "string", default: "Bench" },
    nodes: { type: "string", default: "20" },
    metrics: { type: "string", default: "500" },
    "rate-hz": { type: "string", default: "1" },
    warmup: { type: "string", default: "20" },
    duration: { type: "string", default: "60" },
    tail: { type: "string", default: "3" },
    prefix: { type: "string", default: "bench/plant/sp/Bench" },
    qos: { type: "string", default: "0" },
    "json-writer": { type: "string", default: "batch" },
    "max-buffer-mb": { type: "string", default: "8" },
  },
});

const MODE = args.mode;
if (!["sparkplug", "json", "birth"].includes(MODE)) {
  console.error("sparkplug_load: --mode sparkplug|json|birth");
  process.exit(2);
}
const N = Number(args.nodes);
const M = Number(args.metrics);
const PERIOD = 1000 / Number(args["rate-hz"]);
const WARMUP_MS = Number(args.warmup) * 1000;
const DURATION_MS = Number(args.duration) * 1000;
const TAIL_MS = Number(args.tail) * 1000;
const GROUP = args.group;
const QOS = Number(args.qos);
const MAX_BUFFER = Number(args["max-buffer-mb"]) * 1024 * 1024;
const BATCH = args["json-writer"] === "batch";

// sparkplug-payload only when Sparkplug is spoken (it pulls protobufjs).
const spb = MODE === "json" ? null : require("sparkplug-payload").get("spBv1.0");

const stats = {
  mode: MODE,
  nodes: N,
  metrics: M,
  period_ms: PERIOD,
  values_sent: 0,
  values_in_window: 0,
  messages_sent: 0,
  bytes_sent: 0,
  skipped_values: 0,
  ticks: 0,
  late_ticks: 0,
  max_lag_ms: 0,
  rebirth_requests: 0,
  births: 0,
  max_backlog_bytes: 0,
};

function fail(why) {
  console.error(`sparkplug_load: ${why}`);
  process.stdout.write(`failed ${JSON.stringify({ error: why, ...stats })}\n`);
  process.exit(1);
}

const topic = (verb, node) => `spBv1.0/${GROUP}/${verb}/node${node}`;

function deathPayload() {
  return spb.encodePayload({
    timestamp: Date.now(),
    metrics: [{ name: "bdSeq", type: "UInt64", value: 0 }],
  });
}

// One node's connection and Sparkplug state.
class Node {
  constructor(index) {
    this.index = index;
    this.seq = 0;
    this.closing = false;
    const options = {
      clientId: `bench-${MODE}-${GROUP}-node${index}`,
      username: args.username,
      password: args.password,
      protocolVersion: 4,
      clean: true,
      keepalive: 60,
      reconnectPeriod: 0,
      connectTimeout: 30000,
    };
    if (MODE !== "json") {
      options.will = { topic: topic("NDEATH", index), payload: deathPayload(), qos: 0, retain: false };
    }
    this.client = mqtt.connect(`mqtt://${args.host}:${args.port}`, options);
    this.client.on("error", (e) => fail(`node${index}: ${e.message}`));
    this.client.on("close", () => {
      if (!this.closing) fail(`node${index}: the connection closed`);
    });
    this.client.on("message", (t, payload) => this.command(payload));
  }

  connected() {
    return new Promise((resolve) => {
      if (this.client.connected) resolve();
      else this.client.once("connect", resolve);
    });
  }

  async start() {
    await this.connected();
    if (MODE === "sparkplug") {
      await new Promise((resolve, reject) =>
        this.client.subscribe(topic("NCMD", this.index), { qos: 0 }, (e) => (e ? reject(e) : resolve())));
    }
    if (MODE !== "json") this.birth(Date.now());
  }

  // NBIRTH: bdSeq, then every metric with its name, alias, datatype and value at `ts`.
  birth(ts) {
    const metrics = [{ name: "bdSeq", type: "UInt64", value: 0 }];
    for (let j = 1; j <= M; j++) {
      metrics.push({ name: `m${j}`, alias: j, type: "Double", value: ts + j, timestamp: ts });
    }
    this.seq = 0;
    this.send(topic("NBIRTH", this.index), spb.encodePayload({ timestamp: ts, seq: 0, metrics }), 0);
    stats.births++;
    stats.values_sent += M;
    if (inWindow(ts)) stats.values_in_window += M;
  }

  command(payload) {
    let decoded;
    try {
      decoded = spb.decodePayload(payload);
    } catch (e) {
      console.error(`node${this.index}: an NCMD that does not decode: ${e.message}`);
      return;
    }
    const rebirth = (decoded.metrics || []).some((m) => m.name === "Node Control/Rebirth" && m.value === true);
    if (!rebirth) return;
    stats.rebirth_requests++;
    console.error(`node${this.index}: svc asked for a rebirth at ${new Date().toISOString()}`);
    this.birth(Date.now());
  }

  send(t, payload, qos) {
    this.client.publish(t, payload, { qos, retain: false });
    stats.messages_sent++;
    stats.bytes_sent += payload.length;
  }

  backlog() {
    const stream = this.client.stream;
    return stream ? stream.writableLength : 0;
  }

  // The node's scan at tick time `ts`.
  tick(ts) {
    const backlog = this.backlog();
    if (backlog > stats.max_backlog_bytes) stats.max_backlog_bytes = backlog;
    if (backlog > MAX_BUFFER) {
      stats.skipped_values += M;
      return;
    }
    if (MODE === "sparkplug") {
      const metrics = new Array(M);
      for (let j = 1; j <= M; j++) {
        metrics[j - 1] = { alias: j, type: "Double", value: ts + j, timestamp: ts };
      }
      this.seq = (this.seq + 1) % 256;
      this.send(topic("NDATA", this.index), spb.encodePayload({ timestamp: ts, seq: this.seq, metrics }), 0);
    } else if (BATCH) {
      const packets = new Array(M);
      for (let j = 1; j <= M; j++) {
        packets[j - 1] = publishPacket(`${args.prefix}/node${this.index}/m${j}`,
          `{"value":${ts + j},"timestamp":${ts}}`, this);
      }
      const buffer = Buffer.concat(packets);
      this.client.stream.write(buffer);
      stats.messages_sent += M;
      stats.bytes_sent += buffer.length;
    } else {
      for (let j = 1; j <= M; j++) {
        this.send(`${args.prefix}/node${this.index}/m${j}`, `{"value":${ts + j},"timestamp":${ts}}`, QOS);
      }
    }
    stats.values_sent += M;
    if (inWindow(ts)) stats.values_in_window += M;
  }

  // A clean end: Sparkplug nodes publish their NDEATH first (as sparkplug-client's stop()).
  end() {
    this.closing = true;
    if (MODE !== "json") this.send(topic("NDEATH", this.index), deathPayload(), 0);
    return new Promise((resolve) => this.client.end(false, {}, resolve));
  }
}

// MQTT 3.1.1 PUBLISH, QoS 0 or 1 (QoS 1: packet ids of this node's own counter; mqtt.js ignores
// the PUBACKs, which match nothing it sent, and a lost connection fails the run anyway).
function publishPacket(t, payload, node) {
  const topicBytes = Buffer.byteLength(t);
  const payloadBytes = Buffer.byteLength(payload);
  const idBytes = QOS > 0 ? 2 : 0;
  let remaining = 2 + topicBytes + idBytes + payloadBytes;
  const header = [QOS > 0 ? 0x32 : 0x30];
  do {
    let byte = remaining % 128;
    remaining = Math.floor(remaining / 128);
    if (remaining > 0) byte |= 0x80;
    header.push(byte);
  } while (remaining > 0);
  const packet = Buffer.allocUnsafe(header.length + 2 + topicBytes + idBytes + payloadBytes);
  let at = 0;
  for (const b of header) packet[at++] = b;
  packet.writeUInt16BE(topicBytes, at);
  at += 2;
  at += packet.write(t, at);
  if (QOS > 0) {
    node.packetId = ((node.packetId || 0) % 65535) + 1;
    packet.writeUInt16BE(node.packetId, at);
    at += 2;
  }
  packet.write(payload, at);
  return packet;
}

let t0 = 0;
let from = 0;
let to = 0;
let end = 0;
function inWindow(ts) {
  return ts >= from && ts < to;
}

async function main() {
  const nodes = [];
  for (let i = 1; i <= N; i++) nodes.push(new Node(i));
  await Promise.all(nodes.map((n) => n.start()));
  if (MODE === "birth") {
    await Promise.all(nodes.map((n) => n.end()));
    process.stdout.write(`done ${JSON.stringify(stats)}\n`);
    return;
  }
  t0 = Math.ceil((Date.now() + 1000) / 1000) * 1000;
  from = t0 + WARMUP_MS;
  to = from + DURATION_MS;
  end = to + TAIL_MS;
  process.stdout.write(`ready ${JSON.stringify({ t0, from, to, end })}\n`);
  // Event e: node (e mod N) + 1, tick floor(e / N), at t0 + e·P/N.
  const step = PERIOD / N;
  let e = 0;
  let stop = false;
  let timer = null;
  await new Promise((resolve) => {
    const run = () => {
      const now = Date.now();
      for (;;) {
        const at = t0 + e * step;
        if (at >= end || stop) return resolve();
        if (at > now) break;
        const lag = now - at;
        if (lag > stats.max_lag_ms) stats.max_lag_ms = lag;
        if (lag > PERIOD / 2) stats.late_ticks++;
        stats.ticks++;
        nodes[e % N].tick(Math.floor(at));
        e++;
      }
      timer = setTimeout(run, Math.max(0, t0 + e * step - Date.now()));
    };
    process.on("SIGTERM", () => {
      stop = true;
      clearTimeout(timer);
      run();
    });
    run();
  });
  stats.stopped_early = stop;
  // Let the sockets drain before the clean ends (a DISCONNECT after unsent data is fine: the
  // stream writes in order), then report.
  await Promise.all(nodes.map((n) => n.end()));
  process.stdout.write(`done ${JSON.stringify(stats)}\n`);
}

main().then(
  () => process.exit(0),
  (e) => fail(e.stack || String(e)),
);

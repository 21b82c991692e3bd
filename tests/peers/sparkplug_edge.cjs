// A Sparkplug B edge node for the tests of svc's host-application role: Eclipse Tahu's reference
// Node.js edge node, npm's sparkplug-client 3.2.4 (on mqtt 4.3.8, sparkplug-payload 1.0.3),
// installed by scripts/test.sh into $CARGO_TARGET_DIR/peers-node; run with NODE_PATH pointing at
// its node_modules. Driven by tests/it/common/sparkplug_peer.rs.
//
//   node sparkplug_edge.cjs --url mqtt://127.0.0.1:1883 --username U --password P
//                           --group G --node N [--client-id ID] [--bd-seq 0]
//
// Connects (MQTT 3.1.1, clean session, keepalive 5 s, no automatic reconnect), prints `ready 1`
// once connected and subscribed, then takes one JSON command a line on stdin and answers each with
// `{"ok":"<cmd>", "topic":.., "seq":..}` once sparkplug-client has written the message to the
// socket, or `{"error":"..."}`. Exits when stdin closes. Logs go to stderr.
//
// What sparkplug-client does by itself (and what the tests must expect):
//   - It does NOT publish NBIRTH on connect: it emits "birth" and leaves it to the application;
//     here the test sends `nbirth`.
//   - bdSeq: the client keeps one number (0 unless --bd-seq) and never increments it. The NDEATH
//     will is encoded once, at construction: topic spBv1.0/G/NDEATH/N, QoS 0, not retained,
//     payload {timestamp: construction time, metrics: [bdSeq (UInt64)]}, no seq. publishNodeBirth
//     appends the metric bdSeq (UInt64) to the NBIRTH metrics. --bd-seq N rewrites the will
//     before the CONNECT packet goes out (see below), so a second peer can stand for the node's
//     next session.
//   - seq: NBIRTH resets it to 0; every DBIRTH, NDATA, DDATA and DDEATH takes the next one,
//     0..255 then 0 again. NDEATH carries none.
//   - All messages QoS 0, not retained. Payload timestamps are set here (now, or the command's
//     "timestamp").
//
// Commands (metric JSON M as in sparkplug_json.cjs: 64-bit values as strings, bytes base64,
// DataSet/Template in sparkplug-payload's shapes):
//   {"cmd":"nbirth","metrics":[M...]}          NBIRTH (+ bdSeq)
//   {"cmd":"dbirth","device":"D","metrics":[M...]}
//   {"cmd":"ndata","metrics":[M...]}   {"cmd":"ddata","device":"D","metrics":[M...]}
//   {"cmd":"ddeath","device":"D"}
//   {"cmd":"skip_seq"}   the next message's seq is one higher than it should be (a gap)
//   {"cmd":"stop"}       sparkplug-client's stop(): publishes NDEATH, then DISCONNECT
//   {"cmd":"drop"}       the TCP connection is destroyed without DISCONNECT: the broker
//                        publishes the NDEATH will
// Any command may carry "timestamp" (payload timestamp, ms).
//
// Events printed:
//   {"event":"ncmd","topic":..,"seq":..,"timestamp":..,"metrics":[...]}
//   {"event":"dcmd","device":"D",...}   metrics decoded as sparkplug_json.cjs's decode does
//                        ("value" interpreted, "raw" the wire field), each with "lib_value": what
//                        sparkplug-payload's own decoder, the one sparkplug-client hands an
//                        application, made of it ("lib_error" on the event when it failed). Only
//                        informative: that decoder reads Int8..Int32 by sign-extending 32 bits
//                        (int_value 244 stays 244 as Int8), and in peers-node, where node-opcua's
//                        newer `long` is hoisted, its `instanceof Long` tests fail, so a negative
//                        Int64 comes out unsigned and UInt32 as its raw Long.
//   {"event":"rebirth"}  after an NCMD carrying Node Control/Rebirth = true; the peer does not
//                        rebirth by itself, the test decides
//   {"event":"state","topic":..,"payload":"<text>"}  a message on spBv1.0/STATE/+
//   {"event":"closed"}   the connection closed (after stop or drop, or by the broker)
"use strict";

const readline = require("node:readline");
const { newClient } = require("sparkplug-client");
const spb = require("./sparkplug_json.cjs");

function arg(name, fallback) {
  const i = process.argv.indexOf("--" + name);
  if (i >= 0 && i + 1 < process.argv.length) return process.argv[i + 1];
  if (fallback === undefined) {
    console.error(`sparkplug_edge: --${name} is required`);
    process.exit(2);
  }
  return fallback;
}

const url = arg("url");
const group = arg("group");
const node = arg("node");
const clientId = arg("client-id", `tahu-${group}-${node}`);
const bdSeq = Number(arg("bd-seq", "0"));

function out(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

const client = newClient({
  serverUrl: url,
  username: arg("username"),
  password: arg("password"),
  groupId: group,
  edgeNode: node,
  clientId,
  version: "spBv1.0",
  publishDeath: true, // stop() publishes NDEATH before DISCONNECT
  // A dropped connection stays down: a test that wants the node back starts a new peer.
  mqttOptions: { reconnectPeriod: 0 },
});
const mqtt = client.client; // sparkplug-client's underlying mqtt.js client

if (bdSeq !== 0) {
  // sparkplug-client has no bdSeq option: the field is public and read at NBIRTH, but the will was
  // encoded in the constructor. mqtt.js sends CONNECT only once the socket is up, after this
  // synchronous code, so rewriting the will in its options here is what it sends.
  client.bdSeq = bdSeq;
  mqtt.options.will.payload = Buffer.from(client.encodePayload(client.getDeathPayload()));
}

// sparkplug-client decodes every message it receives with sparkplug-payload and would throw out of
// mqtt.js's handler on a payload that is not Sparkplug (a STATE message is JSON) or one that
// sparkplug-payload cannot decode (a DataSet with an Int32 column): give it an empty payload
// instead. The events below come from the raw bytes.
const libDecode = client.decodePayload.bind(client);
client.decodePayload = (bytes) => {
  try {
    return libDecode(bytes);
  } catch (e) {
    return { metrics: [] };
  }
};

let ready = false;
client.on("birth", () => {
  // Nagle's algorithm would hold a message back while an earlier segment is unacknowledged, so a
  // message answered `ok` could reach the broker after one another client sent later.
  if (mqtt.stream.setNoDelay) mqtt.stream.setNoDelay(true);
  // sparkplug-client subscribed NCMD and DCMD on connect; STATE is ours, to report it.
  mqtt.subscribe(["spBv1.0/STATE/+"], { qos: 1 }, (err) => {
    if (err) {
      out({ error: `subscribe: ${err.message}` });
      process.exit(1);
    }
    if (!ready) {
      ready = true;
      console.error(`sparkplug_edge: ${clientId} connected to ${url} as ${group}/${node}`);
      process.stdout.write("ready 1\n");
    }
  });
});
client.on("error", (e) => {
  // Emitted while connecting (refused, unreachable): the harness sees the exit.
  out({ error: `connect: ${e.message}` });
  process.exit(1);
});
client.on("close", () => out({ event: "closed" }));

mqtt.on("message", (topic, bytes) => {
  const parts = topic.split("/");
  if (parts[1] === "STATE") {
    out({ event: "state", topic, payload: bytes.toString("utf8") });
    return;
  }
  const kind = parts[2];
  if (kind !== "NCMD" && kind !== "DCMD") return;
  const event = { event: kind === "NCMD" ? "ncmd" : "dcmd" };
  if (kind === "DCMD") event.device = parts[4];
  event.topic = topic;
  let decoded;
  try {
    decoded = spb.decode(bytes);
  } catch (e) {
    out({ ...event, error: `not a Sparkplug payload: ${e.message}` });
    return;
  }
  Object.assign(event, decoded);
  try {
    const lib = libDecode(bytes);
    (lib.metrics || []).forEach((m, i) => {
      if (event.metrics[i]) event.metrics[i].lib_value = spb.libJson(m.value);
    });
  } catch (e) {
    event.lib_error = e.message;
  }
  out(event);
  if (
    kind === "NCMD" &&
    event.metrics.some((m) => m.name === "Node Control/Rebirth" && m.value === true)
  ) {
    out({ event: "rebirth" });
  }
});

// Runs `action` (a sparkplug-client publish) and resolves once mqtt.js wrote the packet:
// sparkplug-client publishes QoS 0 without a callback, so the one publish it makes gets ours.
function published(action) {
  return new Promise((resolve, reject) => {
    if (!mqtt.connected) {
      reject(new Error("not connected"));
      return;
    }
    const original = mqtt.publish;
    let topic;
    mqtt.publish = function (t, message, opts, cb) {
      mqtt.publish = original;
      topic = t;
      return original.call(mqtt, t, message, opts || {}, (err) => {
        if (cb) cb(err);
        if (err) reject(err);
        else resolve(topic);
      });
    };
    try {
      action();
    } catch (e) {
      mqtt.publish = original;
      reject(e);
    }
  });
}

function payload(cmd) {
  return {
    timestamp: spb.Long.fromValue(cmd.timestamp ?? Date.now()),
    metrics: (cmd.metrics || []).map(spb.toMetric),
  };
}

function device(cmd) {
  if (typeof cmd.device !== "string") throw new Error(`${cmd.cmd} needs "device"`);
  return cmd.device;
}

async function run(cmd) {
  let p;
  if ((cmd.cmd === "stop" || cmd.cmd === "drop") && !mqtt.connected) {
    throw new Error("not connected"); // no close event would come to answer it
  }
  switch (cmd.cmd) {
    case "nbirth":
      p = payload(cmd);
      return { topic: await published(() => client.publishNodeBirth(p)), seq: Number(p.seq), bdSeq: client.bdSeq };
    case "dbirth":
      p = payload(cmd);
      return { topic: await published(() => client.publishDeviceBirth(device(cmd), p)), seq: Number(p.seq) };
    case "ndata":
      p = payload(cmd);
      return { topic: await published(() => client.publishNodeData(p)), seq: Number(p.seq) };
    case "ddata":
      p = payload(cmd);
      return { topic: await published(() => client.publishDeviceData(device(cmd), p)), seq: Number(p.seq) };
    case "ddeath":
      p = { timestamp: spb.Long.fromValue(cmd.timestamp ?? Date.now()) };
      return { topic: await published(() => client.publishDeviceDeath(device(cmd), p)), seq: Number(p.seq) };
    case "skip_seq":
      // sparkplug-client's counter is a public field advanced by incrementSeqNum (which wraps at
      // 256): taking one number here leaves a gap before the next message, and the messages after
      // it go on from there, as from a node that lost one.
      return { skipped: client.incrementSeqNum() };
    case "stop":
      // stop() publishes NDEATH (publishDeath) and ends the client: mqtt.js flushes the NDEATH,
      // then sends DISCONNECT, so the broker drops the will.
      await new Promise((resolve) => {
        mqtt.once("close", resolve);
        client.stop();
      });
      return {};
    case "drop":
      // Destroying the socket ends the TCP connection with no DISCONNECT: the broker publishes
      // the will. reconnectPeriod 0 keeps mqtt.js from coming back.
      await new Promise((resolve) => {
        mqtt.once("close", resolve);
        mqtt.stream.destroy();
      });
      return {};
    default:
      throw new Error(`unknown command ${JSON.stringify(cmd.cmd)}`);
  }
}

// One command at a time, in order, so each answer follows its command.
let queue = Promise.resolve();
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  if (!line.trim()) return;
  queue = queue.then(async () => {
    let cmd;
    try {
      cmd = JSON.parse(line);
      out({ ok: cmd.cmd, ...(await run(cmd)) });
    } catch (e) {
      out({ error: `${cmd ? cmd.cmd : line}: ${e.message}` });
    }
  });
}).on("close", () => {
  // The test is over (or died): go without a goodbye, as a killed node would.
  queue.then(() => process.exit(0));
});

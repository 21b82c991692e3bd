// A Sparkplug B decoder for the tests of svc's edge-node role: an MQTT subscriber (npm's mqtt
// 4.3.8) that decodes every message with the protobuf classes of npm's sparkplug-payload 1.0.3
// (Eclipse Tahu's codec) and prints it as JSON, and that can encode and publish a Sparkplug
// message (an NCMD asking svc's edge node to rebirth, a DCMD writing a value). Installed by
// scripts/test.sh into $CARGO_TARGET_DIR/peers-node; run with NODE_PATH pointing at its
// node_modules. Driven by tests/it/common/sparkplug_peer.rs.
//
//   node sparkplug_listen.cjs --url mqtt://127.0.0.1:1883 --username U --password P
//                             [--topic spBv1.0/#] [--client-id ID]
//
// Subscribes --topic (QoS 1), prints `ready 1` once subscribed, then one line per message:
//   {"topic":"spBv1.0/G/NBIRTH/N","retain":false,"qos":0,
//    "payload":{"timestamp":..,"seq":..,"metrics":[...]}}
// with the payload and metrics as sparkplug_json.cjs's decode gives them (64-bit integers as
// strings, bytes base64, each metric's wire field under "raw"), plus "lib_error" when
// sparkplug-payload's own decoder (what a Tahu host would run) fails on it. A payload that is not
// Sparkplug (a STATE message's JSON) is printed as "text":"..." instead of "payload".
//
// Commands on stdin, one JSON object a line, each answered `{"ok":"publish"}` once written, or
// `{"error":"..."}`:
//   {"cmd":"publish","topic":"spBv1.0/G/NCMD/N","payload_json":{"timestamp":..,"metrics":[M...]},
//    "qos":0,"retain":false}
// (metric JSON M as in sparkplug_json.cjs; "payload_text" instead of "payload_json" publishes the
// text as it is). Exits when stdin closes.
"use strict";

const readline = require("node:readline");
const mqttLib = require("mqtt");
const spb = require("./sparkplug_json.cjs");

function arg(name, fallback) {
  const i = process.argv.indexOf("--" + name);
  if (i >= 0 && i + 1 < process.argv.length) return process.argv[i + 1];
  if (fallback === undefined) {
    console.error(`sparkplug_listen: --${name} is required`);
    process.exit(2);
  }
  return fallback;
}

const url = arg("url");
const filter = arg("topic", "spBv1.0/#");
const clientId = arg("client-id", `spb-listen-${process.pid}`);

function out(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

const mqtt = mqttLib.connect(url, {
  username: arg("username"),
  password: arg("password"),
  clientId,
  clean: true,
  reconnectPeriod: 0,
});

let ready = false;
mqtt.on("connect", () => {
  // Without Nagle's delay a published command reaches the broker when it is answered `ok`.
  if (mqtt.stream.setNoDelay) mqtt.stream.setNoDelay(true);
  mqtt.subscribe(filter, { qos: 1 }, (err, granted) => {
    if (err || !granted || granted.some((g) => g.qos === 128)) {
      out({ error: `subscribe ${filter}: ${err ? err.message : "refused"}` });
      process.exit(1);
    }
    if (!ready) {
      ready = true;
      console.error(`sparkplug_listen: ${clientId} subscribed ${filter} on ${url}`);
      process.stdout.write("ready 1\n");
    }
  });
});
mqtt.on("error", (e) => {
  out({ error: `mqtt: ${e.message}` });
  if (!ready) process.exit(1);
});
mqtt.on("close", () => {
  if (ready) out({ event: "closed" });
});

mqtt.on("message", (topic, bytes, packet) => {
  const line = { topic, retain: !!packet.retain, qos: packet.qos };
  // STATE (spBv1.0/STATE/<host>) is JSON by the specification; anything else should be protobuf.
  const isState = topic.split("/")[1] === "STATE";
  let decoded = null;
  if (!isState) {
    try {
      decoded = spb.decode(bytes);
    } catch (e) {
      decoded = null;
    }
  }
  if (decoded) {
    line.payload = decoded;
    try {
      spb.sparkplug.decodePayload(bytes);
    } catch (e) {
      line.lib_error = e.message;
    }
  } else {
    line.text = bytes.toString("utf8");
  }
  out(line);
});

function publish(cmd) {
  return new Promise((resolve, reject) => {
    if (typeof cmd.topic !== "string") throw new Error(`publish needs "topic"`);
    const body =
      cmd.payload_json !== undefined ? spb.encode(cmd.payload_json) : Buffer.from(String(cmd.payload_text ?? ""), "utf8");
    mqtt.publish(cmd.topic, body, { qos: cmd.qos ?? 0, retain: !!cmd.retain }, (err) =>
      err ? reject(err) : resolve()
    );
  });
}

// One command at a time, in order, so each answer follows its command.
let queue = Promise.resolve();
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  if (!line.trim()) return;
  queue = queue.then(async () => {
    let cmd;
    try {
      cmd = JSON.parse(line);
      if (cmd.cmd !== "publish") throw new Error(`unknown command ${JSON.stringify(cmd.cmd)}`);
      await publish(cmd);
      out({ ok: "publish", topic: cmd.topic });
    } catch (e) {
      out({ error: `${cmd ? cmd.cmd : line}: ${e.message}` });
    }
  });
}).on("close", () => {
  queue.then(() => {
    mqtt.end(false, {}, () => process.exit(0));
    setTimeout(() => process.exit(0), 1000).unref();
  });
});

// The write round trip of bench/connectors.sh: `POST /svc/tag/write` on a connector point's
// tag, timed until svc answers (the device acknowledged the write) and until the new value is
// back in the tag (the connector read it from the device and published it: seen by an MQTT
// subscriber of the tag on svc's broker). Node.js with the `mqtt` package (NODE_PATH: the
// Node-RED install, which has it).
//
//   node write_rtt.cjs --http http://127.0.0.1:N --token JWT --mqtt-port N --key API_KEY \
//       --tag bench/plant/mb/w0 [--count 200] [--pause-ms 20] [--first 1]
//
// Writes --first, --first+1, … (each value differs from the last one, so each comes back as a
// change) one at a time, --pause-ms apart. Prints one JSON line: counts, and p50/p99/max in ms
// of `ack` (request → 200) and `back` (request → the value in the tag).
const mqtt = require("mqtt");
const { parseArgs } = require("node:util");

const { values: args } = parseArgs({
    options: {
        http: { type: "string" },
        token: { type: "string" },
        "mqtt-port": { type: "string" },
        key: { type: "string" },
        tag: { type: "string" },
        count: { type: "string", default: "200" },
        "pause-ms": { type: "string", default: "20" },
        first: { type: "string", default: "1" },
        "timeout-ms": { type: "string", default: "5000" },
    },
});
const count = Number(args.count);

function quantile(sorted, q) {
    if (!sorted.length) return null;
    return Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] * 100) / 100;
}

async function main() {
    const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${args["mqtt-port"]}`, {
        username: "bench",
        password: args.key,
        clean: true,
        reconnectPeriod: 0,
    });
    // Resolves the pending write's `back` when its value shows in the tag.
    let waiting = null;
    client.on("message", (_topic, payload) => {
        if (!waiting) return;
        let value;
        try {
            value = JSON.parse(payload.toString()).value;
        } catch {
            return;
        }
        if (value === waiting.value) {
            const resolve = waiting.resolve;
            waiting = null;
            resolve(performance.now());
        }
    });
    await client.subscribeAsync(args.tag, { qos: 0 });
    const ack = [];
    const back = [];
    let failed = 0;
    let lost = 0;
    const errors = [];
    for (let k = 0; k < count; k++) {
        const value = Number(args.first) + k;
        const seen = new Promise((resolve) => {
            waiting = { value, resolve };
            setTimeout(() => resolve(null), Number(args["timeout-ms"]));
        });
        const start = performance.now();
        const response = await fetch(`${args.http}/svc/tag/write`, {
            method: "POST",
            headers: { authorization: `Bearer ${args.token}`, "content-type": "application/json" },
            body: JSON.stringify({ topic: args.tag, value }),
        });
        const answered = performance.now();
        const body = await response.text();
        if (!response.ok) {
            failed++;
            if (errors.length < 3) errors.push(`${response.status} ${body}`);
            waiting = null;
            continue;
        }
        ack.push(answered - start);
        const at = await seen;
        if (at === null) lost++;
        else back.push(at - start);
        await new Promise((r) => setTimeout(r, Number(args["pause-ms"])));
    }
    await client.endAsync();
    ack.sort((a, b) => a - b);
    back.sort((a, b) => a - b);
    console.log(JSON.stringify({
        tag: args.tag,
        writes: count,
        acknowledged: ack.length,
        failed,
        back: back.length,
        not_back: lost,
        ack_p50_ms: quantile(ack, 0.5),
        ack_p99_ms: quantile(ack, 0.99),
        ack_max_ms: quantile(ack, 1),
        back_p50_ms: quantile(back, 0.5),
        back_p99_ms: quantile(back, 0.99),
        back_max_ms: quantile(back, 1),
        errors,
    }));
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});

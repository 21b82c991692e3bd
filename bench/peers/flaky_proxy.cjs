// A TCP proxy for the reconnect soak of bench/connectors.sh: forwards each connection to
// --target host:port and closes both sides --hold-ms after it was accepted, so a connector
// behind it connects, reads for a while, loses its connection and reconnects, over and over.
// Node.js alone, no package.
//
//   node flaky_proxy.cjs --target 127.0.0.1:4840 [--port 0] [--hold-ms 200]
//
// Prints `ready <port>` once listening, then `accepted <n>` on every connection it accepts and
// `cut <n>` on every one it closes (the soak counts the forced reconnects from these).
const net = require("node:net");
const { parseArgs } = require("node:util");

const { values: args } = parseArgs({
    options: {
        port: { type: "string", default: "0" },
        target: { type: "string" },
        "hold-ms": { type: "string", default: "200" },
    },
});
const [host, port] = args.target.split(":");
const holdMs = Number(args["hold-ms"]);
let accepted = 0;
let cut = 0;

const server = net.createServer((client) => {
    accepted++;
    console.log(`accepted ${accepted}`);
    const upstream = net.connect(Number(port), host);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    client.pipe(upstream);
    upstream.pipe(client);
    const close = () => {
        client.destroy();
        upstream.destroy();
    };
    // A connection still open when its time is up is cut: one forced reconnect. (An OPC UA
    // client's short GetEndpoints connection ends by itself before that and is not counted.)
    const timer = setTimeout(() => {
        cut++;
        console.log(`cut ${cut}`);
        close();
    }, holdMs);
    client.on("error", close);
    upstream.on("error", close);
    client.on("close", () => {
        clearTimeout(timer);
        upstream.destroy();
    });
    upstream.on("close", () => client.destroy());
});
server.listen(Number(args.port), "127.0.0.1", () => console.log(`ready ${server.address().port}`));
for (const signal of ["SIGTERM", "SIGINT"]) process.on(signal, () => process.exit(0));

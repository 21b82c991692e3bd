// The OPC UA device of bench/connectors.sh (npm node-opcua-server, installed by the script).
//
//   NODE_PATH=<install>/node_modules node opcua_server.cjs [--port 0] [--items 10000] [--writable 10] [--pki DIR]
//
// Serves, without security, `--items` Double variables `ns=1;s=v<i>` (0 ≤ i < items) that each
// change once a second, and `--writable` Double variables `ns=1;s=w<i>` that only clients write.
// The changes are spread over the second in ten slots of 100 ms (variables with i % 10 == slot
// change in that slot) so the server sends a steady stream rather than one burst a second. The
// value of a change is the number of its slot since the epoch (floor(ms / 100)) and its source
// timestamp is that slot's start: a gateway kept the source time iff timestamp_ms == value × 100.
// Prints `ready <port>` once it listens, and every 10 s a `stats {json}` line (changes made,
// slots that ran late) so the run can check the device kept its rate.
// CommonJS so that NODE_PATH (the install under the target dir) finds the package.
const { OPCUAServer } = require("node-opcua-server");
const { Variant, DataType } = require("node-opcua-variant");
const { StatusCodes } = require("node-opcua-status-code");
const { OPCUACertificateManager } = require("node-opcua-certificate-manager");
const { parseArgs } = require("node:util");
const net = require("node:net");

async function main() {

const { values: args } = parseArgs({
    options: {
        port: { type: "string", default: "0" },
        items: { type: "string", default: "10000" },
        writable: { type: "string", default: "10" },
        pki: { type: "string", default: "" },
    },
});
const items = Number(args.items);
const writable = Number(args.writable);

// node-opcua needs a fixed port: take a free one when asked for 0.
async function freePort() {
    return new Promise((resolve, reject) => {
        const s = net.createServer();
        s.once("error", reject);
        s.listen(0, "127.0.0.1", () => {
            const { port } = s.address();
            s.close(() => resolve(port));
        });
    });
}
const port = Number(args.port) || (await freePort());

const pki = args.pki || `${process.env.TMPDIR || "/tmp"}/bench-opcua-pki-${process.pid}`;
const serverCertificateManager = new OPCUACertificateManager({
    automaticallyAcceptUnknownCertificate: true,
    rootFolder: `${pki}/own`,
});
const server = new OPCUAServer({
    port,
    hostname: "127.0.0.1",
    serverCertificateManager,
    securityModes: [1], // MessageSecurityMode.None
    securityPolicies: ["http://opcfoundation.org/UA/SecurityPolicy#None"],
    allowAnonymous: true,
    // Room for 10,000 monitored items in one subscription, from two gateways in turn, and for
    // the reconnect soak: a connection cut every 200 ms leaves its session (and subscription)
    // on the server until the session times out (60 s), and node-opcua's default of 100
    // subscriptions refused svc after ~900 reconnects (bench/connectors-history.md).
    serverCapabilities: {
        maxSessions: 1000,
        maxSubscriptions: 10_000,
        maxMonitoredItems: 1_000_000,
        maxMonitoredItemsPerSubscription: 1_000_000,
        maxMonitoredItemsPerCall: 100_000,
        operationLimits: {
            maxMonitoredItemsPerCall: 100_000,
            maxNodesPerRead: 100_000,
            maxNodesPerWrite: 100_000,
            maxNodesPerBrowse: 100_000,
            maxNodesPerRegisterNodes: 100_000,
            maxNodesPerTranslateBrowsePathsToNodeIds: 100_000,
        },
    },
    maxConnectionsPerEndpoint: 1000,

    buildInfo: { productName: "svc-bench-opcua", softwareVersion: "1" },
});
await server.initialize();
const ns = server.engine.addressSpace.getOwnNamespace();
const folder = ns.addFolder(server.engine.addressSpace.rootFolder.objects, { browseName: "Bench" });

const slotNow = () => Math.floor(Date.now() / 100);
const first = slotNow();
const variables = [];
for (let i = 0; i < items; i++) {
    variables.push(
        ns.addVariable({
            componentOf: folder,
            browseName: `v${i}`,
            nodeId: `s=v${i}`,
            dataType: "Double",
            value: { dataType: DataType.Double, value: 0 },
        }),
    );
}
for (let i = 0; i < writable; i++) {
    ns.addVariable({
        componentOf: folder,
        browseName: `w${i}`,
        nodeId: `s=w${i}`,
        dataType: "Double",
        accessLevel: "CurrentRead | CurrentWrite",
        userAccessLevel: "CurrentRead | CurrentWrite",
        value: { dataType: DataType.Double, value: 0 },
    });
}
// Every variable starts with the value of its last slot before start.
for (let i = 0; i < items; i++) {
    const slot = first - ((first - i) % 10 + 10) % 10;
    variables[i].setValueFromSource(new Variant({ dataType: DataType.Double, value: slot }), StatusCodes.Good, new Date(slot * 100));
}

await server.start();
console.log(`ready ${port}`);

// Each tick runs the slots that have begun since the last one (a late timer catches up, and
// says so in its stats), changing a tenth of the variables per slot.
let done = first;
let changes = 0;
let late = 0;
function tick() {
    const now = slotNow();
    if (now - done > 1) late += now - done - 1;
    for (let slot = done + 1; slot <= now; slot++) {
        const timestamp = new Date(slot * 100);
        const variant = new Variant({ dataType: DataType.Double, value: slot });
        for (let i = ((slot % 10) + 10) % 10; i < items; i += 10) {
            variables[i].setValueFromSource(variant, StatusCodes.Good, timestamp);
            changes++;
        }
    }
    done = now;
    setTimeout(tick, 100 - (Date.now() % 100) + 1);
}
setTimeout(tick, 100 - (Date.now() % 100) + 1);
setInterval(() => console.log(`stats ${JSON.stringify({ changes, late_slots: late, sessions: server.currentSessionCount })}`), 10_000);

for (const signal of ["SIGTERM", "SIGINT"]) {
    process.on(signal, async () => {
        await server.shutdown(0);
        process.exit(0);
    });
}
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});

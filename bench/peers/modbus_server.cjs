// The Modbus TCP device of bench/connectors.sh: Node.js alone, no package.
//
//   node modbus_server.cjs [--port 0] [--registers 2000] [--writable 10] [--change-ms 1000]
//
// Unit id any. Holding registers (function 3; input registers, function 4, read the same)
// 0 ≤ address < registers hold floor(now_ms / change_ms) mod 65536, so each changes every
// change_ms and a gateway's timestamp t of a value v is right iff floor(t / change_ms) mod 65536
// is v (or v + 1 when the value turned while the answer travelled). Registers from `registers`
// to `registers + writable` keep what functions 6 and 16 write (the write round trip's points).
// Other functions answer exception 1, addresses beyond the tables exception 2. A hand-written
// server because a device simulator library's per-request cost (pymodbus: ~1 ms) would be the
// bottleneck at 2 gateways × 16 requests × 10 Hz, and this one costs next to nothing: values
// are computed when read. Prints `ready <port>` once listening and every 10 s `stats {json}`.
const net = require("node:net");
const { parseArgs } = require("node:util");

const { values: args } = parseArgs({
    options: {
        port: { type: "string", default: "0" },
        registers: { type: "string", default: "2000" },
        writable: { type: "string", default: "10" },
        "change-ms": { type: "string", default: "1000" },
    },
});
const registers = Number(args.registers);
const writable = Number(args.writable);
const changeMs = Number(args["change-ms"]);
const stored = new Uint16Array(writable);
const stats = { connections: 0, open: 0, requests: 0, writes: 0, exceptions: 0 };

function register(address) {
    if (address < registers) return Math.floor(Date.now() / changeMs) & 0xffff;
    return stored[address - registers];
}

// The PDU answering `pdu` (function code first).
function answer(pdu) {
    const fc = pdu[0];
    const exception = (code) => {
        stats.exceptions++;
        return Buffer.from([fc | 0x80, code]);
    };
    if (fc === 3 || fc === 4) {
        if (pdu.length < 5) return exception(3);
        const start = pdu.readUInt16BE(1);
        const count = pdu.readUInt16BE(3);
        if (count < 1 || count > 125) return exception(3);
        if (start + count > registers + writable) return exception(2);
        const out = Buffer.alloc(2 + 2 * count);
        out[0] = fc;
        out[1] = 2 * count;
        for (let i = 0; i < count; i++) out.writeUInt16BE(register(start + i), 2 + 2 * i);
        return out;
    }
    if (fc === 6) {
        if (pdu.length < 5) return exception(3);
        const address = pdu.readUInt16BE(1);
        if (address < registers || address >= registers + writable) return exception(2);
        stored[address - registers] = pdu.readUInt16BE(3);
        stats.writes++;
        return pdu.subarray(0, 5);
    }
    if (fc === 16) {
        if (pdu.length < 6) return exception(3);
        const start = pdu.readUInt16BE(1);
        const count = pdu.readUInt16BE(3);
        if (count < 1 || count > 123 || pdu.length < 6 + 2 * count) return exception(3);
        if (start < registers || start + count > registers + writable) return exception(2);
        for (let i = 0; i < count; i++) stored[start - registers + i] = pdu.readUInt16BE(6 + 2 * i);
        stats.writes++;
        return pdu.subarray(0, 5);
    }
    return exception(1);
}

const server = net.createServer((socket) => {
    stats.connections++;
    stats.open++;
    socket.setNoDelay(true);
    let pending = Buffer.alloc(0);
    socket.on("data", (chunk) => {
        pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
        // MBAP header: transaction (2), protocol (2), length (2, unit id + PDU), unit id (1).
        while (pending.length >= 7) {
            const length = pending.readUInt16BE(4);
            if (pending.length < 6 + length) break;
            const header = pending.subarray(0, 7);
            const pdu = answer(pending.subarray(7, 6 + length));
            stats.requests++;
            const out = Buffer.alloc(7 + pdu.length);
            header.copy(out, 0);
            out.writeUInt16BE(pdu.length + 1, 4);
            pdu.copy(out, 7);
            socket.write(out);
            pending = pending.subarray(6 + length);
        }
    });
    socket.on("error", () => {});
    socket.on("close", () => stats.open--);
});
server.listen(Number(args.port), "127.0.0.1", () => {
    console.log(`ready ${server.address().port}`);
});
setInterval(() => console.log(`stats ${JSON.stringify(stats)}`), 10_000);
for (const signal of ["SIGTERM", "SIGINT"]) process.on(signal, () => process.exit(0));

// A second OPC UA server for the opcua connector's tests: node-opcua-server 2.186.4 (npm),
// installed by scripts/test.sh into $CARGO_TARGET_DIR/peers-node; run with NODE_PATH pointing
// at its node_modules. Security None, anonymous. Prints `ready <port>` once it listens.
// Variables under Objects/1:Plant: Int16 = -12, UInt64 = 18446744073709551615, String = "node"
// (read-only), and W.Double (writable, 0).
import { createRequire } from "node:module";
import net from "node:net";
import path from "node:path";

const require = createRequire(path.join(process.env.NODE_PATH || ".", "noop.js"));
const { OPCUAServer } = require("node-opcua-server");
const { Variant, DataType, VariantArrayType } = require("node-opcua-variant");
const { MessageSecurityMode, SecurityPolicy } = require("node-opcua-secure-channel");
const { coerceUInt64 } = require("node-opcua-basic-types");

function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

const port = await freePort();
const server = new OPCUAServer({
  port,
  resourcePath: "/svc",
  hostname: "127.0.0.1",
  securityModes: [MessageSecurityMode.None],
  securityPolicies: [SecurityPolicy.None],
  allowAnonymous: true,
  buildInfo: { productName: "svc node peer", softwareVersion: "2.186.4" },
});
await server.initialize();
const ns = server.engine.addressSpace.getOwnNamespace();
const plant = ns.addFolder(server.engine.addressSpace.rootFolder.objects, { browseName: "Plant", nodeId: "s=Plant" });
const add = (name, dataType, value, writable) => {
  const v = ns.addVariable({
    componentOf: plant,
    browseName: writable ? name.slice(2) : name,
    nodeId: `s=${name}`,
    dataType,
    accessLevel: writable ? "CurrentRead | CurrentWrite" : "CurrentRead",
    userAccessLevel: writable ? "CurrentRead | CurrentWrite" : "CurrentRead",
  });
  v.setValueFromSource(new Variant({ dataType: DataType[dataType], arrayType: VariantArrayType.Scalar, value }));
  return v;
};
add("Int16", "Int16", -12, false);
add("UInt64", "UInt64", coerceUInt64("18446744073709551615"), false);
add("String", "String", "node", false);
add("W.Double", "Double", 0, true);
await server.start();
process.stdout.write(`ready ${port}\n`);
process.on("SIGTERM", async () => {
  await server.shutdown(0);
  process.exit(0);
});

#!/usr/bin/env python3
"""An OPC UA server for the opcua connector's tests (asyncua 2.1.0).

Prints `ready <port>` on stdout once it listens. Variables live under Objects/2:Plant:
read-only ones named after their type (`ns=2;s=Int16`), writable ones under the folder
2:Writable (`ns=2;s=W.Int16`), an array, a matrix, a built-in structure (Range), a custom
structure (Point3), and a counter that changes every --change-every seconds.

  --port 0|N               0 picks a free port
  --security none|basic256sha256
                           the latter: SignAndEncrypt only, with a self-signed certificate made
                           at start in a temporary directory (its DER is printed as `cert <hex>`
                           before `ready`); any client certificate is accepted
  --user name:password     a user; anonymous sessions are then refused
  --change-every SECONDS   the counter's period (default 0.5)
"""

import argparse
import asyncio
import datetime
import logging
import socket
import sys
import tempfile
from pathlib import Path

from asyncua import Server, ua
from asyncua.common.structures104 import new_struct, new_struct_field
from asyncua.crypto.permission_rules import User, UserRole
from asyncua.server.user_managers import UserManager

SOURCE_TIME = datetime.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=datetime.timezone.utc)

VALUES = [
    ("Boolean", True, ua.VariantType.Boolean),
    ("SByte", -8, ua.VariantType.SByte),
    ("Byte", 200, ua.VariantType.Byte),
    ("Int16", -12, ua.VariantType.Int16),
    ("UInt16", 65535, ua.VariantType.UInt16),
    ("Int32", -12, ua.VariantType.Int32),
    ("UInt32", 4294967295, ua.VariantType.UInt32),
    ("Int64", -9007199254740993, ua.VariantType.Int64),
    ("UInt64", 18446744073709551615, ua.VariantType.UInt64),
    ("Float", 1.5, ua.VariantType.Float),
    ("Double", 3.141592653589793, ua.VariantType.Double),
    ("String", "héllo", ua.VariantType.String),
    ("DateTime", SOURCE_TIME, ua.VariantType.DateTime),
    ("ByteString", b"\x00\x01\xfe\xff", ua.VariantType.ByteString),
]


class Users(UserManager):
    def __init__(self, name, password):
        self.name = name
        self.password = password

    def get_user(self, iserver, username=None, password=None, certificate=None):
        if username == self.name and password == self.password:
            return User(role=UserRole.User, name=username)
        return None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def add(parent, idx, node_name, browse_name, value, vtype, writable):
    var = await parent.add_variable(
        ua.NodeId(node_name, idx), ua.QualifiedName(browse_name, idx), ua.Variant(value, vtype)
    )
    await var.write_value(ua.DataValue(ua.Variant(value, vtype), SourceTimestamp=SOURCE_TIME))
    if writable:
        await var.set_writable()
    return var


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--security", choices=["none", "basic256sha256"], default="none")
    parser.add_argument("--user")
    parser.add_argument("--change-every", type=float, default=0.5)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)

    port = args.port or free_port()
    user_manager = None
    if args.user:
        name, _, password = args.user.partition(":")
        user_manager = Users(name, password)
    server = Server(user_manager=user_manager)
    await server.init()
    server.set_endpoint(f"opc.tcp://127.0.0.1:{port}/svc")
    server.set_server_name("svc test peer")
    await server.set_application_uri("urn:svc:test:peer")
    server.product_uri = "urn:svc:test:peer:product"

    if args.security == "basic256sha256":
        from asyncua.crypto.cert_gen import setup_self_signed_certificate
        from cryptography.x509.oid import ExtendedKeyUsageOID

        pki = Path(tempfile.mkdtemp(prefix="opcua-peer-"))
        key, cert = pki / "key.pem", pki / "cert.der"
        await setup_self_signed_certificate(
            key,
            cert,
            "urn:svc:test:peer",
            "127.0.0.1",  # the host the tests connect to (a DNS name entry; clients compare text)
            [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH],
            {"countryName": "CH", "organizationName": "svc", "commonName": "svc test peer"},
        )
        await server.load_certificate(str(cert))
        await server.load_private_key(str(key))
        server.set_security_policy([ua.SecurityPolicyType.Basic256Sha256_SignAndEncrypt])
        print("cert " + cert.read_bytes().hex(), flush=True)
    else:
        server.set_security_policy([ua.SecurityPolicyType.NoSecurity])
    if args.user:
        server.set_identity_tokens([ua.UserNameIdentityToken])

    idx = await server.register_namespace("urn:svc:test")
    objects = server.nodes.objects
    plant = await objects.add_folder(ua.NodeId("Plant", idx), ua.QualifiedName("Plant", idx))
    writable = await plant.add_folder(ua.NodeId("Writable", idx), ua.QualifiedName("Writable", idx))
    for name, value, vtype in VALUES:
        await add(plant, idx, name, name, value, vtype, False)
        await add(writable, idx, "W." + name, name, value, vtype, True)
    await add(plant, idx, "DoubleArray", "DoubleArray", [1.5, 2.5, 3.5], ua.VariantType.Double, False)
    matrix = await plant.add_variable(
        ua.NodeId("Int32Matrix", idx),
        ua.QualifiedName("Int32Matrix", idx),
        ua.Variant([1, 2, 3, 4, 5, 6], ua.VariantType.Int32, Dimensions=[2, 3]),
    )
    await matrix.write_value(
        ua.DataValue(
            ua.Variant([1, 2, 3, 4, 5, 6], ua.VariantType.Int32, Dimensions=[2, 3]),
            SourceTimestamp=SOURCE_TIME,
        )
    )
    await add(plant, idx, "Range", "Range", ua.Range(Low=-1.5, High=99.5), ua.VariantType.ExtensionObject, False)
    await add(writable, idx, "W.DoubleArray", "DoubleArray", [0.0, 0.0], ua.VariantType.Double, True)

    await new_struct(
        server,
        idx,
        "Point3",
        [
            new_struct_field("X", ua.VariantType.Double),
            new_struct_field("Y", ua.VariantType.Double),
            new_struct_field("Label", ua.VariantType.String),
        ],
    )
    await server.load_data_type_definitions()
    point = ua.Point3(X=1.25, Y=-2.5, Label="p")
    await add(plant, idx, "Point", "Point", point, ua.VariantType.ExtensionObject, False)

    counter = await add(plant, idx, "Counter", "Counter", 0, ua.VariantType.Int32, False)

    async with server:
        print(f"ready {port}", flush=True)
        n = 0
        while True:
            await asyncio.sleep(args.change_every)
            n += 1
            await counter.write_value(ua.Variant(n, ua.VariantType.Int32))


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)

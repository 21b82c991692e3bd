"""A Modbus TCP device for the connector tests (pymodbus 3.16.1).

    python modbus_server.py [--port 0] [--unit 1] [--framing tcp|rtu] [--size 10000]
                            [--set hr:100=0xFFF4,0x0001]... [--busy hr:500-509]...
                            [--hang hr:600-609]...

Binds 127.0.0.1 (port 0: a free port), prints `ready <port>` once listening, and serves unit
`--unit` with `--size` coils, discrete inputs, holding registers and input registers, all zero
but for the `--set` values (tables co, di, hr, ir; values in decimal or 0x hex, comma separated,
from the address on). Requests beyond the tables answer exception 2 (illegal data address);
requests touching a `--busy` range answer exception 6 (server device busy); requests touching a
`--hang` range are never answered. `--framing rtu` speaks RTU frames over TCP. Exits when its
standard input closes, so a test that dies leaves no peer behind.
"""

import argparse
import asyncio
import logging
import sys
import warnings

from pymodbus import pymodbus_apply_logging_config
from pymodbus.constants import ExcCodes
from pymodbus.framer import FramerType
from pymodbus.server import ModbusTcpServer
from pymodbus.simulator import DataType, SimData, SimDevice

TABLES = ("co", "di", "hr", "ir")
# Function code -> the table it reads or writes.
FUNCTION_TABLE = {1: "co", 5: "co", 15: "co", 2: "di", 4: "ir"}
FUNCTION_TABLE.update({fc: "hr" for fc in (3, 6, 16, 22, 23)})


def ranges(specs):
    """[(table, first, last)] of `table:first-last` arguments."""
    out = []
    for spec in specs:
        table, span = spec.split(":", 1)
        first, _, last = span.partition("-")
        out.append((table, int(first, 0), int(last or first, 0)))
    return out


def touches(spans, table, address, count):
    return any(
        t == table and address <= last and first < address + max(count, 1)
        for t, first, last in spans
    )


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--unit", type=int, default=1)
    parser.add_argument("--framing", choices=("tcp", "rtu"), default="tcp")
    parser.add_argument("--size", type=int, default=10000)
    parser.add_argument("--set", action="append", default=[])
    parser.add_argument("--busy", action="append", default=[])
    parser.add_argument("--hang", action="append", default=[])
    args = parser.parse_args()

    values = {
        "co": [False] * args.size,
        "di": [False] * args.size,
        "hr": [0] * args.size,
        "ir": [0] * args.size,
    }
    for spec in args.set:
        where, data = spec.split("=", 1)
        table, address = where.split(":", 1)
        if table not in TABLES:
            sys.exit(f"--set {spec}: the table is one of {', '.join(TABLES)}")
        for offset, text in enumerate(data.split(",")):
            value = int(text, 0)
            values[table][int(address, 0) + offset] = bool(value) if table in ("co", "di") else value

    busy, hang = ranges(args.busy), ranges(args.hang)

    async def action(function_code, _start, address, count, _registers, _set_values):
        table = FUNCTION_TABLE.get(function_code)
        if touches(hang, table, address, count):
            await asyncio.sleep(3600)
        if touches(busy, table, address, count):
            return ExcCodes.DEVICE_BUSY
        return None

    bits = DataType.BITS
    regs = DataType.REGISTERS
    device = SimDevice(
        args.unit,
        simdata=(
            [SimData(0, values=values["co"], datatype=bits)],
            [SimData(0, values=values["di"], datatype=bits)],
            [SimData(0, values=values["hr"], datatype=regs)],
            [SimData(0, values=values["ir"], datatype=regs)],
        ),
        action=action,
    )
    framer = FramerType.RTU if args.framing == "rtu" else FramerType.SOCKET
    server = ModbusTcpServer(device, framer=framer, address=("127.0.0.1", args.port))
    await server.serve_forever(background=True)
    port = server.transport.sockets[0].getsockname()[1]
    print(f"ready {port}", flush=True)

    # Serve until standard input closes (the test ended or died).
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)
    await server.shutdown()


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    pymodbus_apply_logging_config(logging.CRITICAL)
    logging.getLogger().setLevel(logging.CRITICAL)
    asyncio.run(main())

"""A real SMTP server for the alarm notification tests (aiosmtpd, installed by scripts/test.sh).

    python smtp_sink.py [--port 0]

Binds 127.0.0.1 (port 0: a free port), prints `ready <port>` once listening, then one JSON line
per message it accepts: {"mail_from": ..., "rcpt_tos": [...], "data": "<the message as sent>"}.
It takes no authentication and offers no STARTTLS (the tests use `tls: "none"`). Exits when its
standard input closes, so a test that dies leaves no server behind.
"""

import argparse
import asyncio
import json
import sys

from aiosmtpd.smtp import SMTP


class Sink:
    async def handle_DATA(self, server, session, envelope):
        data = envelope.content
        if isinstance(data, bytes):
            data = data.decode("utf-8", errors="replace")
        line = {
            "mail_from": envelope.mail_from,
            "rcpt_tos": list(envelope.rcpt_tos),
            "data": data,
        }
        print(json.dumps(line), flush=True)
        return "250 Message accepted for delivery"


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    loop = asyncio.get_running_loop()
    handler = Sink()
    server = await loop.create_server(
        lambda: SMTP(handler, hostname="sink.test"), host="127.0.0.1", port=args.port
    )
    port = server.sockets[0].getsockname()[1]
    print(f"ready {port}", flush=True)
    await loop.run_in_executor(None, sys.stdin.read)
    server.close()


if __name__ == "__main__":
    asyncio.run(main())

"""An OTLP/HTTP sink for bench/run's span export row: reads each export
and answers 200, without decoding (the tests' receiver decodes; this one
must cost the machine as little as a Collector on another core would).
Prints "READY <port>", and on SIGTERM the spans' bytes it took."""

import signal
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

TOTAL = [0, 0]


class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        TOTAL[0] += 1
        TOTAL[1] += len(body)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()


def stop(*_):
    print(f"{TOTAL[0]} {TOTAL[1]}", flush=True)
    sys.exit(0)


signal.signal(signal.SIGTERM, stop)
server = HTTPServer(("127.0.0.1", 0), Sink)
print(f"READY {server.server_address[1]}", flush=True)
server.serve_forever()

#!/usr/bin/env python3
"""A minimal OTLP/HTTP trace receiver for proctrace's tests.

Decodes each POST to /v1/traces with the OpenTelemetry project's own protobuf definitions (the
`opentelemetry-proto` package from PyPI) and appends what it got to OUT as JSON lines: one
`{"request": ...}` line per request, then one `{"span": ...}` line per span. Prints
`listening PORT` on stdout once it accepts connections.

Faults, for the tests that need a bad collector:
  --fail-first N   answer the first N requests 503 with `Retry-After: 1`
  --stall          read each request, then never answer (until the test kills us)
  --tls CERT KEY   serve https with this certificate
  --count-only     decode, but log only the number of spans per request
It exits by itself after --lifetime seconds so a test that forgets it leaves nothing behind.
"""
import argparse
import gzip
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def any_value(v):
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in v.kvlist_value.values}
    if kind is None:
        return None
    return getattr(v, kind)


def attrs(kvs):
    return {kv.key: any_value(kv.value) for kv in kvs}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--fail-first", type=int, default=0)
    ap.add_argument("--stall", action="store_true")
    ap.add_argument("--lifetime", type=float, default=120.0)
    ap.add_argument("--count-only", action="store_true", help="log requests, not spans")
    ap.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"), help="serve https")
    args = ap.parse_args()
    lock = threading.Lock()
    state = {"requests": 0}
    out = open(args.out, "a", encoding="utf-8")

    def write(obj):
        with lock:
            out.write(json.dumps(obj, sort_keys=True) + "\n")
            out.flush()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_POST(self):
            n = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(n)
            with lock:
                state["requests"] += 1
                number = state["requests"]
            enc = self.headers.get("Content-Encoding", "")
            record = {
                "request": number,
                "time": time.time(),
                "path": self.path,
                "gzip": enc == "gzip",
                "content_type": self.headers.get("Content-Type", ""),
                "headers": {k.lower(): v for k, v in self.headers.items()},
            }
            if args.stall:
                record["status"] = "stalled"
                write(record)
                time.sleep(args.lifetime)
                return
            if number <= args.fail_first:
                record["status"] = 503
                write(record)
                self.send_response(503)
                self.send_header("Retry-After", "1")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            try:
                raw = gzip.decompress(body) if enc == "gzip" else body
                req = ExportTraceServiceRequest()
                req.ParseFromString(raw)
            except Exception as e:  # a bad request is the test's finding, not a crash
                record["status"] = 400
                record["error"] = str(e)
                write(record)
                self.send_response(400)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            spans = []
            if args.count_only:
                record["status"] = 200
                record["spans"] = sum(len(ss.spans) for rs in req.resource_spans for ss in rs.scope_spans)
                write(record)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            for rs in req.resource_spans:
                resource = attrs(rs.resource.attributes)
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        spans.append(
                            {
                                "resource": resource,
                                "scope": ss.scope.name,
                                "trace_id": s.trace_id.hex(),
                                "span_id": s.span_id.hex(),
                                "parent_span_id": s.parent_span_id.hex(),
                                "trace_state": s.trace_state,
                                "name": s.name,
                                "kind": s.kind,
                                "start": s.start_time_unix_nano,
                                "end": s.end_time_unix_nano,
                                "attributes": attrs(s.attributes),
                                "status": {"code": s.status.code, "message": s.status.message},
                                "events": [
                                    {
                                        "name": e.name,
                                        "time": e.time_unix_nano,
                                        "attributes": attrs(e.attributes),
                                    }
                                    for e in s.events
                                ],
                            }
                        )
            record["status"] = 200
            record["spans"] = len(spans)
            with lock:
                for s in spans:
                    out.write(json.dumps({"span": s}, sort_keys=True) + "\n")
                out.write(json.dumps(record, sort_keys=True) + "\n")
                out.flush()
            resp = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(resp)))
            self.end_headers()
            self.wfile.write(resp)

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    if args.tls:
        import ssl

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls[0], args.tls[1])
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Timer(args.lifetime, server.shutdown).start()
    print(f"listening {server.server_address[1]}", flush=True)
    server.serve_forever()
    sys.exit(0)


if __name__ == "__main__":
    main()

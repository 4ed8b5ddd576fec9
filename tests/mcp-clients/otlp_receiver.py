"""An OTLP/HTTP trace receiver for tests/traces.rs: every POST to
/v1/traces is read with the official OpenTelemetry protobuf definitions
(pip `opentelemetry-proto`) into an ExportTraceServiceRequest, JSON
encoding as OTLP/HTTP defines it; a body that is not one is answered 400.
Prints `port N` first, then one JSON line per span received (or per refused
body). Runs until stdin closes.
"""

import base64
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

lock = threading.Lock()


def emit(obj):
    with lock:
        print(json.dumps(obj), flush=True)


def value_of(v):
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return [value_of(x) for x in v.array_value.values]
    return getattr(v, kind)


def hex_ids_as_base64(obj):
    """OTLP/HTTP's JSON encoding writes trace and span ids in hex, where the
    protobuf JSON mapping has base64: undo that one difference, as the
    OTLP specification tells a receiver to, and nothing else."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if k in ("traceId", "spanId", "parentSpanId") and isinstance(v, str):
                out[k] = base64.b64encode(bytes.fromhex(v)).decode()
            else:
                out[k] = hex_ids_as_base64(v)
        return out
    if isinstance(obj, list):
        return [hex_ids_as_base64(v) for v in obj]
    return obj


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        if self.path != "/v1/traces" or self.headers.get("content-type") != "application/json":
            emit({"refused": self.path, "content_type": self.headers.get("content-type")})
            self.send_response(404)
            self.end_headers()
            return
        request = ExportTraceServiceRequest()
        try:
            json_format.Parse(json.dumps(hex_ids_as_base64(json.loads(body))), request)
        except (ValueError, json_format.ParseError) as e:
            emit({"refused": str(e)})
            self.send_response(400)
            self.end_headers()
            return
        for rs in request.resource_spans:
            resource = {a.key: value_of(a.value) for a in rs.resource.attributes}
            for ss in rs.scope_spans:
                for s in ss.spans:
                    emit({
                        "service": resource.get("service.name"),
                        "name": s.name,
                        "kind": s.kind,
                        "trace_id": s.trace_id.hex(),
                        "span_id": s.span_id.hex(),
                        "parent_span_id": s.parent_span_id.hex(),
                        "start": s.start_time_unix_nano,
                        "end": s.end_time_unix_nano,
                        "attributes": {a.key: value_of(a.value) for a in s.attributes},
                        "authorization": self.headers.get("authorization"),
                    })
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
emit({"port": server.server_address[1]})
sys.stdin.read()
server.shutdown()

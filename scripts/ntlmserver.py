"""An HTTP server that authenticates with NTLM, for crawlspace's NTLM test.

The NTLM acceptor is pyspnego's (https://github.com/jborean93/pyspnego), checking the
credentials of the file NTLM_USER_FILE names (DOMAIN:USER:PASSWORD lines). Each connection
runs its own handshake, as IIS does: NTLM authenticates a connection, so a 401 with the
challenge keeps it open and the page is served on it once the handshake is complete.

    python3 ntlmserver.py PORT PIDFILE
"""

import base64
import http.server
import os
import sys

import spnego

PAGES = {
    "/ntlm/": b'<!doctype html><html><head><title>ntlm home</title></head><body><a href="page.html">a page</a></body></html>',
    "/ntlm/page.html": b'<!doctype html><html><head><title>ntlm page</title></head><body><a href="/ntlm/">home</a></body></html>',
}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def challenge(self, token=None):
        self.send_response(401)
        self.send_header("WWW-Authenticate", "NTLM" + (" " + base64.b64encode(token).decode() if token else ""))
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        if self.path not in PAGES:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if getattr(self, "user", None) is None:
            auth = self.headers.get("Authorization", "")
            if not auth.startswith("NTLM "):
                self.ctx = None
                return self.challenge()
            token = base64.b64decode(auth[5:])
            if getattr(self, "ctx", None) is None:
                self.ctx = spnego.server(protocol="ntlm")
            try:
                out = self.ctx.step(token)
            except Exception:
                self.ctx = None
                return self.challenge()
            if not self.ctx.complete:
                return self.challenge(out)
            self.user = self.ctx.client_principal
        body = PAGES[self.path]
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


def main():
    port, pidfile = int(sys.argv[1]), sys.argv[2]
    srv = Server(("127.0.0.1", port), Handler)
    with open(pidfile, "w") as f:
        f.write(str(os.getpid()))
    srv.serve_forever()


if __name__ == "__main__":
    main()

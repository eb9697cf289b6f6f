// The HTTP front scripts/tika runs when Maven Central does not serve org.apache.tika:tika-server-standard
// to this machine (its registry serves the parsers but not the server jar): Apache Tika's own
// RecursiveParserWrapper and AutoDetectParser from tika-parsers-standard-package behind the part
// of tika-server's REST API crawlspace uses, answering as tika-server 3.x does:
//
//   GET  /tika                      a greeting (the liveness probe)
//   GET  /version                   "Apache Tika <version>"
//   PUT  /rmeta[/text|xml|html|ignore]
//        the body is the document; the Content-Type, writeLimit and maxEmbeddedResources headers
//        as tika-server reads them; the answer is the JSON list of metadata of the document and each embedded
//        one, content under X-TIKA:content, a parse failure of the document itself recorded under
//        X-TIKA:EXCEPTION:container_exception with status 200, as RecursiveParserWrapper records it.
//
// Usage: java -cp 'classes:lib/*' CrawlspaceTikaServer --host 127.0.0.1 --port 9998
import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Executors;
import org.apache.tika.Tika;
import org.apache.tika.io.TikaInputStream;
import org.apache.tika.metadata.Metadata;
import org.apache.tika.metadata.TikaCoreProperties;
import org.apache.tika.parser.AutoDetectParser;
import org.apache.tika.parser.ParseContext;
import org.apache.tika.parser.Parser;
import org.apache.tika.parser.RecursiveParserWrapper;
import org.apache.tika.sax.BasicContentHandlerFactory;
import org.apache.tika.sax.RecursiveParserWrapperHandler;

class CrawlspaceTikaServer {
    public static void main(String[] args) throws Exception {
        String host = "127.0.0.1";
        int port = 9998;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--host", "-h" -> host = args[++i];
                case "--port", "-p" -> port = Integer.parseInt(args[++i]);
                default -> {
                    System.err.println("usage: CrawlspaceTikaServer [--host H] [--port P]");
                    System.exit(2);
                }
            }
        }
        // Headers and body leave in two writes: with Nagle's algorithm on, the body waits for the
        // client's delayed ACK, 40 ms on every answer.
        System.setProperty("sun.net.httpserver.nodelay", "true");
        Parser parser = new AutoDetectParser();
        String version = new Tika().toString();
        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getByName(host), port), 64);
        server.createContext("/tika", ex -> {
            if (!ex.getRequestMethod().equals("GET")) {
                send(ex, 405, "text/plain", "only GET here; PUT documents to /rmeta/text\n");
                return;
            }
            send(ex, 200, "text/plain", "This is Tika Server (" + version + "). Please PUT\n");
        });
        server.createContext("/version", ex -> send(ex, 200, "text/plain", version));
        server.createContext("/rmeta", ex -> {
            try {
                rmeta(ex, parser);
            } catch (Throwable t) {
                t.printStackTrace();
                send(ex, 500, "text/plain", t.toString());
            }
        });
        // A thread per request in flight, as the crawler's concurrency bounds them: a parser that
        // never returns (Java cannot stop it) costs its thread, never the requests behind it.
        server.setExecutor(Executors.newCachedThreadPool());
        server.start();
        System.err.println("CrawlspaceTikaServer: " + version + " listening on http://" + host + ":" + port + "/");
    }

    static void rmeta(HttpExchange ex, Parser parser) throws IOException {
        if (!ex.getRequestMethod().equals("PUT")) {
            send(ex, 405, "text/plain", "PUT the document\n");
            return;
        }
        String handler = ex.getRequestURI().getPath().replaceFirst("^/rmeta/?", "");
        BasicContentHandlerFactory.HANDLER_TYPE type;
        switch (handler) {
            case "", "xml" -> type = BasicContentHandlerFactory.HANDLER_TYPE.XML;
            case "text" -> type = BasicContentHandlerFactory.HANDLER_TYPE.TEXT;
            case "html" -> type = BasicContentHandlerFactory.HANDLER_TYPE.HTML;
            case "ignore" -> type = BasicContentHandlerFactory.HANDLER_TYPE.IGNORE;
            default -> {
                send(ex, 404, "text/plain", "no such handler: " + handler + "\n");
                return;
            }
        }
        int writeLimit = -1;
        String wl = ex.getRequestHeaders().getFirst("writeLimit");
        if (wl != null) {
            try {
                writeLimit = Integer.parseInt(wl.trim());
            } catch (NumberFormatException e) {
                send(ex, 400, "text/plain", "writeLimit is not a number\n");
                return;
            }
        }
        int maxEmbedded = -1;
        String me = ex.getRequestHeaders().getFirst("maxEmbeddedResources");
        if (me != null) {
            try {
                maxEmbedded = Integer.parseInt(me.trim());
            } catch (NumberFormatException e) {
                send(ex, 400, "text/plain", "maxEmbeddedResources is not a number\n");
                return;
            }
        }
        Metadata metadata = new Metadata();
        String ct = ex.getRequestHeaders().getFirst("Content-Type");
        // As tika-server: a declared type guides detection; octet-stream says nothing.
        if (ct != null && !ct.isBlank() && !ct.startsWith("application/octet-stream")) {
            metadata.set(Metadata.CONTENT_TYPE, ct);
        }
        RecursiveParserWrapper wrapper = new RecursiveParserWrapper(parser);
        RecursiveParserWrapperHandler h =
                new RecursiveParserWrapperHandler(new BasicContentHandlerFactory(type, writeLimit), maxEmbedded);
        try (TikaInputStream tis = TikaInputStream.get(ex.getRequestBody())) {
            wrapper.parse(tis, h, metadata, new ParseContext());
        } catch (Exception e) {
            // RecursiveParserWrapper has recorded it as the container exception; tika-server
            // answers 200 with the list then, and so do we.
        }
        List<Metadata> list = h.getMetadataList();
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        try (JsonGenerator g = new JsonFactory().createGenerator(buf, JsonEncoding.UTF8)) {
            g.writeStartArray();
            for (Metadata m : list) {
                g.writeStartObject();
                String[] names = m.names();
                Arrays.sort(names);
                for (String name : names) {
                    String[] values = m.getValues(name);
                    if (values.length == 1) {
                        g.writeStringField(name, values[0]);
                    } else {
                        g.writeArrayFieldStart(name);
                        for (String v : values) {
                            g.writeString(v);
                        }
                        g.writeEndArray();
                    }
                }
                g.writeEndObject();
            }
            g.writeEndArray();
        }
        send(ex, 200, "application/json", buf.toByteArray());
    }

    static void send(HttpExchange ex, int status, String type, String body) throws IOException {
        send(ex, status, type + "; charset=UTF-8", body.getBytes(StandardCharsets.UTF_8));
    }

    static void send(HttpExchange ex, int status, String type, byte[] body) throws IOException {
        try {
            // What the parser left unread, so the connection can serve the next request.
            ex.getRequestBody().transferTo(OutputStream.nullOutputStream());
        } catch (IOException e) {
            // Closed by the parser once it had read all it wanted: nothing is left.
        }
        ex.getResponseHeaders().set("Content-Type", type);
        ex.sendResponseHeaders(status, body.length == 0 ? -1 : body.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(body);
        }
    }
}

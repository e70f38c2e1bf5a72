// Evaluates flags with the OpenFeature Java SDK and the flagd provider in RPC mode (gRPC,
// flagd.evaluation.v1) against flagpole. Driven by tests/flagd/test_flagd_java.py:
//   java -cp CLASSPATH flagpole.Main INPUT.json OUTPUT.json
// INPUT:  {"port": N, "providers": {NAME: {"key": KEY (optional), "cache", "resolver": "rpc"
//          (default)|"in-process", "port" (optional, the provider's own)}}, "cases": [{"provider",
//          "type": "boolean"|"string"|"integer"|"float"|"object", "flag", "default", "context",
//          "metadata": true (optional)}]}
// OUTPUT: {"results": [{"value", "variant", "reason", "errorCode", and "flagMetadata" when the
//          case asks for it}, ...]}
// Or, as a session (flagd_support.DriverSession): `flagpole.Main --session`, the same port and
// providers as the first line of input, then one line of cases at a time; provider events
// (READY, configuration change) are printed as they happen.
// The Java provider sends no selector in RPC mode: the key rides on a gRPC client interceptor.
package flagpole;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.openfeature.contrib.providers.flagd.Config;
import dev.openfeature.contrib.providers.flagd.FlagdOptions;
import dev.openfeature.contrib.providers.flagd.FlagdProvider;
import dev.openfeature.sdk.Client;
import dev.openfeature.sdk.FlagEvaluationDetails;
import dev.openfeature.sdk.MutableContext;
import dev.openfeature.sdk.OpenFeatureAPI;
import dev.openfeature.sdk.Value;
import io.grpc.Metadata;
import io.grpc.stub.MetadataUtils;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

public class Main {
    static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        if (args[0].equals("--session")) {
            session();
            return;
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> in = JSON.readValue(new File(args[0]), Map.class);
        OpenFeatureAPI api = OpenFeatureAPI.getInstance();
        setProviders(api, in);
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> cases = (List<Map<String, Object>>) in.get("cases");
        List<Map<String, Object>> results = evaluate(api, cases);
        api.shutdown();
        JSON.writeValue(new File(args[1]), Map.of("results", results));
        // The in-process resolver's sync threads outlive shutdown by a minute and keep the JVM up.
        System.exit(0);
    }

    /** One provider per domain, named as in the request's `providers`. */
    static void setProviders(OpenFeatureAPI api, Map<String, Object> in) {
        int port = ((Number) in.get("port")).intValue();
        @SuppressWarnings("unchecked")
        Map<String, Map<String, Object>> providers = (Map<String, Map<String, Object>>) in.get("providers");
        for (Map.Entry<String, Map<String, Object>> p : providers.entrySet()) {
            Map<String, Object> o = p.getValue();
            Object cache = o.get("cache");
            boolean inProcess = "in-process".equals(o.get("resolver"));
            FlagdOptions.FlagdOptionsBuilder options = FlagdOptions.builder()
                    .resolverType(inProcess ? Config.Resolver.IN_PROCESS : Config.Resolver.RPC)
                    .host("127.0.0.1")
                    .port(o.get("port") == null ? port : ((Number) o.get("port")).intValue())
                    .cacheType(cache == null ? "disabled" : (String) cache).deadline(5000);
            // A flag file is served without a key: no selector header then.
            if (o.get("key") != null) {
                Metadata headers = new Metadata();
                headers.put(Metadata.Key.of("flagd-selector", Metadata.ASCII_STRING_MARSHALLER), (String) o.get("key"));
                options.clientInterceptors(List.of(MetadataUtils.newAttachHeadersInterceptor(headers)));
            }
            api.setProviderAndWait(p.getKey(), new FlagdProvider(options.build()));
        }
    }

    static synchronized void print(Object message) {
        try {
            System.out.println(JSON.writeValueAsString(message));
            System.out.flush();
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
    }

    /** Serves flagd_support.DriverSession on standard input and output. */
    static void session() throws Exception {
        BufferedReader lines = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        @SuppressWarnings("unchecked")
        Map<String, Object> in = JSON.readValue(lines.readLine(), Map.class);
        OpenFeatureAPI api = OpenFeatureAPI.getInstance();
        setProviders(api, in);
        @SuppressWarnings("unchecked")
        Map<String, Object> providers = (Map<String, Object>) in.get("providers");
        for (String name : providers.keySet()) {
            Client client = api.getClient(name);
            client.onProviderReady(details -> print(Map.of("event", "ready", "provider", name)));
            client.onProviderConfigurationChanged(details -> print(Map.of("event", "changed", "provider", name,
                    "flags", details.getFlagsChanged() == null ? List.of() : details.getFlagsChanged())));
        }
        print(Map.of("reply", "ready"));
        for (String line = lines.readLine(); line != null; line = lines.readLine()) {
            @SuppressWarnings("unchecked")
            Map<String, Object> req = JSON.readValue(line, Map.class);
            @SuppressWarnings("unchecked")
            List<Map<String, Object>> cases = (List<Map<String, Object>>) req.get("cases");
            print(Map.of("reply", evaluate(api, cases)));
        }
        api.shutdown();
        // A thread the providers leave behind once they have reconnected keeps the JVM alive.
        System.exit(0);
    }

    static List<Map<String, Object>> evaluate(OpenFeatureAPI api, List<Map<String, Object>> cases) {
        List<Map<String, Object>> results = new ArrayList<>();
        for (Map<String, Object> c : cases) {
            Client client = api.getClient((String) c.get("provider"));
            MutableContext ctx = new MutableContext();
            @SuppressWarnings("unchecked")
            Map<String, Object> context = (Map<String, Object>) c.get("context");
            if (context != null) {
                for (Map.Entry<String, Object> e : context.entrySet()) {
                    Object v = e.getValue();
                    if (e.getKey().equals("targetingKey")) {
                        ctx.setTargetingKey((String) v);
                    } else if (v instanceof String s) {
                        ctx.add(e.getKey(), s);
                    } else if (v instanceof Boolean b) {
                        ctx.add(e.getKey(), b);
                    } else if (v instanceof Integer i) {
                        ctx.add(e.getKey(), i);
                    } else if (v instanceof Number n) {
                        ctx.add(e.getKey(), n.doubleValue());
                    } else if (v instanceof List<?> l) {
                        ctx.add(e.getKey(), l.stream().map(Main::value).toList());
                    }
                }
            }
            String flag = (String) c.get("flag");
            Object def = c.get("default");
            FlagEvaluationDetails<?> d;
            Object value;
            switch ((String) c.get("type")) {
                case "boolean" -> { var r = client.getBooleanDetails(flag, (Boolean) def, ctx); d = r; value = r.getValue(); }
                case "string" -> { var r = client.getStringDetails(flag, (String) def, ctx); d = r; value = r.getValue(); }
                case "integer" -> { var r = client.getIntegerDetails(flag, ((Number) def).intValue(), ctx); d = r; value = r.getValue(); }
                case "float" -> { var r = client.getDoubleDetails(flag, ((Number) def).doubleValue(), ctx); d = r; value = r.getValue(); }
                default -> { var r = client.getObjectDetails(flag, new Value(), ctx); d = r; value = plain(r.getValue()); }
            }
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("value", value);
            out.put("variant", d.getVariant());
            out.put("reason", d.getReason());
            out.put("errorCode", d.getErrorCode() == null ? null : d.getErrorCode().name());
            if (Boolean.TRUE.equals(c.get("metadata"))) {
                out.put("flagMetadata", d.getFlagMetadata() == null
                        ? Map.of() : new LinkedHashMap<>(d.getFlagMetadata().asUnmodifiableMap()));
            }
            results.add(out);
        }
        return results;
    }

    /** A scalar or list of a context as a Value (what a list attribute holds). */
    static Value value(Object v) {
        if (v instanceof String s) return new Value(s);
        if (v instanceof Boolean b) return new Value(b);
        if (v instanceof Integer i) return new Value(i);
        if (v instanceof Number n) return new Value(n.doubleValue());
        if (v instanceof List<?> l) return new Value(l.stream().map(Main::value).toList());
        return new Value();
    }

    /** A Value as plain Java (maps, lists, numbers, strings, booleans, null). */
    static Object plain(Value v) {
        if (v == null || v.isNull()) return null;
        if (v.isStructure()) {
            Map<String, Object> m = new LinkedHashMap<>();
            for (String k : v.asStructure().keySet()) m.put(k, plain(v.asStructure().getValue(k)));
            return m;
        }
        if (v.isList()) {
            List<Object> l = new ArrayList<>();
            for (Value item : v.asList()) l.add(plain(item));
            return l;
        }
        return v.asObject();
    }
}

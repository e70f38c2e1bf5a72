// Evaluates flags with the OpenFeature Java SDK and the flagd provider in RPC mode (gRPC,
// flagd.evaluation.v1) against flagpole. Driven by tests/flagd/test_flagd_java.py:
//   java -cp CLASSPATH flagpole.Main INPUT.json OUTPUT.json
// INPUT:  {"port": N, "providers": {NAME: {"key": KEY}}, "cases": [{"provider", "type":
//          "boolean"|"string"|"integer"|"float"|"object", "flag", "default", "context"}]}
// OUTPUT: {"results": [{"value", "variant", "reason", "errorCode"}, ...]}
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
import java.io.File;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

public class Main {
    public static void main(String[] args) throws Exception {
        ObjectMapper json = new ObjectMapper();
        @SuppressWarnings("unchecked")
        Map<String, Object> in = json.readValue(new File(args[0]), Map.class);
        int port = ((Number) in.get("port")).intValue();
        OpenFeatureAPI api = OpenFeatureAPI.getInstance();
        @SuppressWarnings("unchecked")
        Map<String, Map<String, Object>> providers = (Map<String, Map<String, Object>>) in.get("providers");
        for (Map.Entry<String, Map<String, Object>> p : providers.entrySet()) {
            Metadata headers = new Metadata();
            headers.put(Metadata.Key.of("flagd-selector", Metadata.ASCII_STRING_MARSHALLER),
                    (String) p.getValue().get("key"));
            FlagdOptions options = FlagdOptions.builder()
                    .resolverType(Config.Resolver.RPC).host("127.0.0.1").port(port)
                    .cacheType("disabled").deadline(5000)
                    .clientInterceptors(List.of(MetadataUtils.newAttachHeadersInterceptor(headers)))
                    .build();
            api.setProviderAndWait(p.getKey(), new FlagdProvider(options));
        }
        List<Map<String, Object>> results = new ArrayList<>();
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> cases = (List<Map<String, Object>>) in.get("cases");
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
            results.add(out);
        }
        api.shutdown();
        json.writeValue(new File(args[1]), Map.of("results", results));
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

//! The bytes of a filtered `/api/client/features` body: the toggles a scope admits, as the
//! upstream wrote them and in its order, the segments those toggles reference (no other
//! project's segments leak), the upstream's other members (`version`, `meta`, …) unchanged, and
//! a `query` saying which filter produced it, as Unleash Edge writes one. Written from text kept
//! at build time: no JSON is parsed here.

use serde::Serialize;

use crate::features::Features;
use crate::scope::ClientScope;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Query<'a> {
    projects: Vec<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name_prefix: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    environment: Option<&'a str>,
    inline_segment_constraints: bool,
}

impl Features {
    /// The client-features body a request of this scope is served. Prepare it once per body
    /// and distinct scope: it is the same bytes every time.
    pub fn client_body(&self, scope: &ClientScope) -> Vec<u8> {
        let admitted: Vec<_> = self
            .order
            .iter()
            .filter_map(|name| self.toggles.get(name))
            .filter(|toggle| scope.admits(&toggle.name, &toggle.project))
            .collect();
        let mut used: Vec<i32> = admitted
            .iter()
            .flat_map(|t| t.segments.iter().copied())
            .collect();
        used.sort_unstable();
        used.dedup();

        let mut out =
            String::with_capacity(admitted.iter().map(|t| t.raw.len() + 1).sum::<usize>() + 256);
        out.push('{');
        for (key, value) in &self.members {
            push_member(&mut out, key);
            out.push_str(value);
        }
        push_member(&mut out, "features");
        push_list(&mut out, admitted.iter().map(|t| t.raw.as_str()));
        push_member(&mut out, "segments");
        push_list(
            &mut out,
            used.iter()
                .filter_map(|id| self.segments.get(id))
                .map(|(raw, _)| raw.as_str()),
        );
        push_member(&mut out, "query");
        let query = Query {
            projects: scope.projects().to_list(),
            name_prefix: scope.name_prefix(),
            environment: scope.environment(),
            // Segments are sent beside the toggles, not copied into their constraints.
            inline_segment_constraints: false,
        };
        out.push_str(&serde_json::to_string(&query).unwrap_or_else(|_| "null".to_owned()));
        out.push('}');
        out.into_bytes()
    }
}

fn push_member(out: &mut String, key: &str) {
    if !out.ends_with('{') {
        out.push(',');
    }
    out.push_str(&serde_json::Value::String(key.to_owned()).to_string());
    out.push(':');
}

fn push_list<'a>(out: &mut String, items: impl Iterator<Item = &'a str>) {
    out.push('[');
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(item);
    }
    out.push(']');
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::{ClientScope, Features, Projects, Token};

    const BODY: &str = r#"{"version":2,"features":[
        {"name":"web.a","enabled":true,"project":"web","strategies":[{"name":"default","segments":[2]}],"description":"kept"},
        {"name":"api.b","enabled":true,"project":"api","strategies":[{"name":"default","segments":[1]}]},
        {"name":"web.c","enabled":false,"project":"web","variants":[{"name":"v","weight":1000,"payload":{"type":"number","value":"1.50"}}]}
    ],"segments":[{"id":1,"constraints":[]},{"id":2,"name":"two","constraints":[]}],
    "query":{"environment":"upstream"},"meta":{"revisionId":7}}"#;

    fn body(scope: &ClientScope) -> Value {
        let features = Features::from_slice(BODY.as_bytes()).unwrap();
        serde_json::from_slice(&features.client_body(scope)).unwrap()
    }

    fn names(body: &Value) -> Vec<&str> {
        body["features"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["name"].as_str().unwrap())
            .collect()
    }

    #[test]
    fn filters_by_token_projects() {
        let token: Token = "web:production.s".parse().unwrap();
        let out = body(&ClientScope::for_token(&token));
        assert_eq!(names(&out), ["web.a", "web.c"]);
        assert_eq!(
            out["segments"],
            json!([{"id":2,"name":"two","constraints":[]}])
        );
        assert_eq!(out["version"], json!(2));
        assert_eq!(out["meta"], json!({"revisionId":7}));
        assert_eq!(
            out["query"],
            json!({"projects":["web"],"environment":"production","inlineSegmentConstraints":false})
        );
        // Toggles are served as the upstream wrote them: unknown members and number text kept.
        assert_eq!(out["features"][0]["description"], json!("kept"));
        assert!(serde_json::to_string(&out["features"][1])
            .unwrap()
            .contains(r#""1.50""#));
    }

    #[test]
    fn filters_by_query() {
        let token: Token = "*:production.s".parse().unwrap();
        let scope = ClientScope::for_token(&token)
            .with_query_projects(["api", "web"])
            .with_name_prefix(Some("web."));
        let out = body(&scope);
        assert_eq!(names(&out), ["web.a", "web.c"]);
        assert_eq!(out["query"]["namePrefix"], json!("web."));
        assert_eq!(out["query"]["projects"], json!(["api", "web"]));
        let all = body(&ClientScope::for_projects(Projects::All));
        assert_eq!(names(&all), ["web.a", "api.b", "web.c"]);
        assert_eq!(all["segments"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn a_filtered_body_reads_back() {
        let features = Features::from_slice(BODY.as_bytes()).unwrap();
        let bytes = features.client_body(&ClientScope::for_projects(Projects::All));
        let again = Features::from_slice(&bytes).unwrap();
        assert_eq!(again.len(), 3);
        assert!(crate::changed_toggles(&features, &again).is_empty());
    }
}

//! The soak's request mix: `/flags`, `/identities` GET and POST and OFREP bulk in equal parts,
//! each connection cycling through it, over 100,000 distinct identities (a large user base, not
//! one cached caller).

use std::sync::Arc;

use flagpole_http_bench::open_loop::{get, post, Requests};

/// The request mix, in order: each connection cycles through it.
pub(crate) const KINDS: [&str; 4] = ["flags", "identities_get", "identities_post", "ofrep_bulk"];
/// Distinct identities the mix cycles through.
const IDENTITIES: u64 = 100_000;

/// The open-loop driver's request maker for the mix.
pub(crate) fn requests(client_key: &str, server_key: &str) -> Requests {
    const TRAITS: &str = r#"[{"trait_key":"plan","trait_value":"enterprise"},{"trait_key":"age","trait_value":42},{"trait_key":"app_version","trait_value":"2.4.1"}]"#;
    let flags = get("/api/v1/flags/", client_key);
    let (ck, sk) = (client_key.to_owned(), server_key.to_owned());
    Arc::new(move |connection, k| {
        // Spread identities across connections.
        let id = (k * 7919 + connection as u64 * 104_729) % IDENTITIES;
        match KINDS[(k as usize + connection) % KINDS.len()] {
            "flags" => flags.clone(),
            "identities_get" => get(&format!("/api/v1/identities/?identifier=soak-{id}"), &ck),
            "identities_post" => post(
                "/api/v1/identities/",
                "X-Environment-Key",
                &ck,
                &format!(r#"{{"identifier":"soak-{id}","traits":{TRAITS}}}"#),
            ),
            _ => post(
                "/ofrep/v1/evaluate/flags",
                "X-API-Key",
                &sk,
                &format!(
                    r#"{{"context":{{"targetingKey":"soak-{id}","plan":"enterprise","age":42,"app_version":"2.4.1"}}}}"#
                ),
            ),
        }
    })
}

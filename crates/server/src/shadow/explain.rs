//! Why Flagpole gave one feature the value it did, on one line for a log: what decided it
//! (identity override, segment, default; the multivariate option) and every segment that
//! overrides the feature, matched or with the condition that failed and what it saw. Built on
//! the engine's explanation, so it cannot disagree with the evaluation.

use flagpole_engine::explain::{self, Explanation};
use flagpole_engine::{Environment, Identity, Trait};

/// The explanation of `feature` for this identity, or why there is none.
pub(crate) fn feature(
    env: &Environment,
    identifier: &str,
    traits: &[Trait<'_>],
    feature: &str,
) -> String {
    let identity = Identity::new(identifier, traits);
    match explain::explain(env, Some(&identity)) {
        Ok(explanation) => line(env, &explanation, feature),
        Err(e) => format!("the engine raises for this identity: {e}"),
    }
}

fn line(env: &Environment, explanation: &Explanation<'_>, feature: &str) -> String {
    let flags = &explanation.result.flags;
    let Some(at) = flags.iter().position(|f| f.key == feature) else {
        return "not in Flagpole's evaluation".into();
    };
    let mut out = format!("decided by {}", explain::decided_by(env, &flags[at]));
    if let Some(Some(split)) = explanation.variants.get(at) {
        match &split.option {
            Some((option, start, end)) => out.push_str(&format!(
                ", multivariate option {option} (bucket {:.2} in {start:.2} to {end:.2})",
                split.bucket
            )),
            None => out.push_str(&format!(
                ", multivariate control value (bucket {:.2} past {:.2})",
                split.bucket, split.options_end
            )),
        }
    }
    for segment in explanation
        .segments
        .iter()
        .filter(|s| s.overrides.iter().any(|o| o == feature))
    {
        out.push_str(&format!("; segment {:?} ", segment.name));
        if segment.matched {
            out.push_str("matched");
        } else {
            out.push_str("did not match");
            if let Some(at) = &segment.failed_at {
                out.push_str(&format!(" at {at}"));
            }
            if let Some(condition) = &segment.condition {
                out.push_str(&format!(": {condition}"));
            }
            if let Some(saw) = &segment.saw {
                out.push_str(&format!(", saw {saw}"));
            }
        }
        for split in &segment.splits {
            match split.bucket {
                Some(bucket) => out.push_str(&format!(
                    " (split {}%: bucket {bucket:.2})",
                    split.percentage
                )),
                None => out.push_str(&format!(" (split {}%: no bucket)", split.percentage)),
            }
        }
    }
    out
}

//! The frontend API's answer (`/api/frontend`, `/api/proxy`): every toggle of the token's
//! projects that is enabled for the context, sorted by name, each with its variant and
//! `impressionData`, as Unleash Edge answers; and one toggle, enabled or not, for
//! `/api/frontend/features/{name}`. Each toggle is evaluated as the engine's resolve-all does
//! (enabled, then the variant: the same two calls), over the whole body, so a dependency on a toggle of a project
//! the token does not see still counts.

use serde::Serialize;

use crate::context::Context;
use crate::evaluate::VariantPayload;
use crate::features::Features;
use crate::toggle::Toggle;
use crate::token::Projects;

/// One toggle as the frontend API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FrontendToggle {
    /// The toggle's name.
    pub name: String,
    /// Whether it is enabled for the context.
    pub enabled: bool,
    /// Its variant for the context.
    pub variant: FrontendVariant,
    /// Whether the SDK should emit impression events for it.
    pub impression_data: bool,
}

/// A variant as the frontend API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FrontendVariant {
    /// The variant's name; `disabled` when none applies.
    pub name: String,
    /// Whether a variant applies.
    pub enabled: bool,
    /// Its payload, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<VariantPayload>,
}

/// The whole answer: `{"toggles": [...]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FrontendToggles {
    /// The toggles, sorted by name.
    pub toggles: Vec<FrontendToggle>,
}

impl FrontendToggles {
    /// The answer's JSON bytes.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_else(|_| br#"{"toggles":[]}"#.to_vec())
    }
}

impl Features {
    /// Every toggle of `projects` enabled for the context (the frontend API's answer).
    pub fn enabled_toggles(&self, context: &Context, projects: &Projects) -> FrontendToggles {
        // `toggles` is a BTreeMap: the answer comes out sorted by name. A disabled toggle's
        // variant is never chosen.
        let toggles = self
            .toggles
            .values()
            .filter(|toggle| projects.contains(&toggle.project))
            .filter(|toggle| self.engine.is_enabled(&toggle.name, &context.inner, &None))
            .map(|toggle| self.frontend_toggle(toggle, true, context))
            .collect();
        FrontendToggles { toggles }
    }

    /// One toggle of `projects` for the context, enabled or not; `None` when the body holds no
    /// such toggle or it is of another project.
    pub fn frontend_toggle_in(
        &self,
        name: &str,
        context: &Context,
        projects: &Projects,
    ) -> Option<FrontendToggle> {
        let toggle = self.toggles.get(name)?;
        if !projects.contains(&toggle.project) {
            return None;
        }
        let enabled = self.engine.is_enabled(name, &context.inner, &None);
        Some(self.frontend_toggle(toggle, enabled, context))
    }

    fn frontend_toggle(&self, toggle: &Toggle, enabled: bool, context: &Context) -> FrontendToggle {
        let variant = self.engine.get_variant(&toggle.name, &context.inner, &None);
        FrontendToggle {
            name: toggle.name.clone(),
            enabled,
            variant: FrontendVariant {
                name: variant.name,
                enabled: variant.enabled,
                payload: variant.payload.map(VariantPayload::from),
            },
            impression_data: toggle.impression_data,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use serde_json::{json, Value};

    use crate::{Context, Features, Projects};

    const BODY: &str = r#"{"version":1,"features":[
        {"name":"z","enabled":true,"project":"a","impressionData":true,
         "variants":[{"name":"v","weight":1000,"payload":{"type":"json","value":"{\"k\":1}"}}]},
        {"name":"b","enabled":true,"project":"b"},
        {"name":"gate","enabled":true,"project":"b","strategies":[{"name":"userWithId","parameters":{"userIds":"1"}}]},
        {"name":"m","enabled":true,"project":"a","dependencies":[{"feature":"gate"}]},
        {"name":"off","enabled":false,"project":"a"}
    ]}"#;

    fn answer(context: &Context, projects: &Projects) -> Value {
        let features = Features::from_slice(BODY.as_bytes()).unwrap();
        serde_json::from_slice(&features.enabled_toggles(context, projects).to_json()).unwrap()
    }

    #[test]
    fn enabled_toggles_sorted_with_variants() {
        let mut user = Context::new();
        user.set("userId", "1");
        let out = answer(&user, &Projects::All);
        assert_eq!(
            out,
            json!({"toggles":[
                {"name":"b","enabled":true,"variant":{"name":"disabled","enabled":false},"impressionData":false},
                {"name":"gate","enabled":true,"variant":{"name":"disabled","enabled":false},"impressionData":false},
                {"name":"m","enabled":true,"variant":{"name":"disabled","enabled":false},"impressionData":false},
                {"name":"z","enabled":true,"variant":{"name":"v","enabled":true,"payload":{"type":"json","value":"{\"k\":1}"}},"impressionData":true}
            ]})
        );
    }

    #[test]
    fn scoped_to_projects_but_dependencies_see_everything() {
        let mut user = Context::new();
        user.set("userId", "1");
        let only_a = Projects::Only(BTreeSet::from(["a".to_owned()]));
        let names: Vec<_> = answer(&user, &only_a)["toggles"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(names, ["m", "z"]);
        let anonymous = answer(&Context::new(), &only_a);
        assert_eq!(anonymous["toggles"].as_array().unwrap().len(), 1);

        let features = Features::from_slice(BODY.as_bytes()).unwrap();
        let off = features.frontend_toggle_in("off", &user, &only_a).unwrap();
        assert!(!off.enabled);
        assert!(features.frontend_toggle_in("b", &user, &only_a).is_none());
        assert!(features
            .frontend_toggle_in("nope", &user, &Projects::All)
            .is_none());
    }
}

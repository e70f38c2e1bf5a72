//! Compiling an evaluation context (JSON) into an [`Environment`]. Runs once per environment
//! change; every parse, sort, regex compilation and index the evaluator needs happens here.
//!
//! Shape errors (a wrong JSON type where the schema requires an object, array or string) are
//! [`InputError`]s naming the JSON path. A *missing* key the reference indexes with `[]` is not
//! an input error: the reference only raises when evaluation reaches it, so the compiled field
//! holds the `KeyError` and the evaluator raises it at the same point.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::condition::{self, parse_operator, pystr, Condition, ConditionSource, Operator};
use crate::error::{EvalError, InputError, PyErrorKind};
use crate::jsonpath::JsonPathQuery;
use crate::model::*;
use crate::priority::{stable_sort_by_priority, PriorityKey};
use crate::property::{Property, Query};
use crate::python::regex::PyRegex;
use crate::shared::Shared;
use crate::slots::{intern, segment_slots, trait_name, SlotMap, NO_SLOT};
use crate::value::{classify_number, json_truthy, JsonNumber};

/// A non-fatal finding about the input (an operator the engine does not know).
pub type Diagnostic = InputError;

struct Compiler<'r> {
    root: &'r Map<String, Value>,
    /// Rule sets already compiled for other environments, when the caller shares them.
    shared: Option<&'r Shared>,
    /// The root without `features` and `segments`: what a static JSONPath answer would be if a
    /// trimmed context lacked the member it reads.
    bare_root: Map<String, Value>,
    trim_sensitive: HashMap<String, Box<JsonPathQuery>>,
    names: Vec<String>,
    name_ids: HashMap<String, NameId>,
    feature_ctxs: Vec<FeatureCtx>,
    needs_root: bool,
    reads_flags: bool,
    diagnostics: Vec<Diagnostic>,
    /// The trait names of the rule set being compiled, and of the whole environment (`slots`).
    rule_slots: SlotMap,
    trait_slots: SlotMap,
}

/// Compiles a context object (its `identity`, if any, is ignored: identities are per call).
pub(crate) fn compile_context(
    context: &Value,
) -> Result<(Environment, Vec<Diagnostic>), InputError> {
    compile_context_sharing(context, None)
}

/// [`compile_context`], taking segment rule sets already compiled for other environments from
/// `shared` (and leaving its own there for the next).
pub(crate) fn compile_context_sharing(
    context: &Value,
    shared: Option<&Shared>,
) -> Result<(Environment, Vec<Diagnostic>), InputError> {
    let root = context
        .as_object()
        .ok_or_else(|| InputError::new("$", "context must be a JSON object"))?;
    let mut c = Compiler {
        root,
        shared,
        bare_root: root
            .iter()
            .filter(|(k, _)| k.as_str() != "features" && k.as_str() != "segments")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        trim_sensitive: HashMap::new(),
        names: Vec::new(),
        name_ids: HashMap::new(),
        feature_ctxs: Vec::new(),
        needs_root: false,
        reads_flags: false,
        diagnostics: Vec::new(),
        rule_slots: SlotMap::default(),
        trait_slots: SlotMap::default(),
    };

    let env_key = match root.get("environment") {
        None => Err(EvalError::key("'environment'")),
        Some(Value::Object(env)) => match env.get("key") {
            Some(k) => Ok(pystr(k)),
            None => Err(EvalError::key("'key'")),
        },
        Some(_) => return Err(InputError::new("$.environment", "must be an object")),
    };

    let mut root_order: Vec<RootEntry> = root
        .keys()
        .map(|k| match k.as_str() {
            "identity" => RootEntry::Identity,
            "flags" => RootEntry::Flags,
            _ => RootEntry::Static(k.clone()),
        })
        .collect();
    for entry in [RootEntry::Identity, RootEntry::Flags] {
        if !root_order.contains(&entry) {
            root_order.push(entry);
        }
    }

    // Features, in context order; output slots are per distinct name (first position wins).
    let mut features = Vec::new();
    let mut feature_by_key = HashMap::new();
    let mut slot_by_name: HashMap<String, usize> = HashMap::new();
    for (key, fc) in object_entries(root.get("features"), "$.features")? {
        let path = format!(
            "$.features[{}]",
            serde_json::to_string(key).unwrap_or_default()
        );
        let ctx = c.feature_ctx(fc, &path)?;
        let slot_name = ctx.name.clone().unwrap_or_default();
        let index = c.feature_ctxs.len();
        c.feature_ctxs.push(ctx);
        let next = slot_by_name.len();
        let slot = *slot_by_name.entry(slot_name).or_insert(next);
        features.push(FeatureEntry {
            ctx: index,
            slot,
            fallback: Ok(index),
            targeted: false,
        });
        feature_by_key.insert(key.clone(), index);
    }

    let mut segments = Vec::new();
    for (key, sc) in object_entries(root.get("segments"), "$.segments")? {
        let path = format!(
            "$.segments[{}]",
            serde_json::to_string(key).unwrap_or_default()
        );
        segments.push(c.segment(sc, &path)?);
    }

    let mut targeted = vec![false; c.names.len()];
    let mut segments_by_name = vec![Vec::new(); c.names.len()];
    let mut beside_unnamed_override = vec![false; c.names.len()];
    let mut override_name_error = None;
    for (s, segment) in segments.iter().enumerate() {
        let mut unnamed = false;
        for &o in &segment.overrides {
            match (&c.feature_ctxs[o].name, c.feature_ctxs[o].name_id) {
                (Ok(_), Some(id)) => {
                    targeted[id as usize] = true;
                    let list: &mut Vec<usize> = &mut segments_by_name[id as usize];
                    if list.last() != Some(&s) {
                        list.push(s);
                    }
                }
                (Err(e), _) => {
                    unnamed = true;
                    override_name_error = override_name_error.or_else(|| Some(e.clone()))
                }
                _ => {}
            }
        }
        if unnamed {
            for &o in &segment.overrides {
                if let Some(id) = c.feature_ctxs[o].name_id {
                    beside_unnamed_override[id as usize] = true;
                }
            }
        }
    }

    // Per feature entry, what evaluation would otherwise look up by name on every call.
    for entry in &mut features {
        let ctx = &c.feature_ctxs[entry.ctx];
        if let Ok(name) = &ctx.name {
            entry.fallback = feature_by_key
                .get(name)
                .copied()
                .ok_or_else(|| EvalError::key(format!("'{name}'")));
        }
        entry.targeted = ctx.name_id.is_some_and(|id| targeted[id as usize]);
    }
    let identifier_index = index_identifier_segments(&segments, &segments_by_name);
    // An environment lives until the next document and a proxy may hold thousands: no slack
    // from growing these one push at a time.
    let mut feature_ctxs = c.feature_ctxs;
    feature_ctxs.shrink_to_fit();
    let (mut features, mut segments, mut names) = (features, segments, c.names);
    features.shrink_to_fit();
    segments.shrink_to_fit();
    names.shrink_to_fit();
    let mut env = Environment {
        env_key,
        root: if c.needs_root {
            strip_dynamic(root)
        } else {
            Map::new()
        },
        root_order,
        features,
        feature_by_key,
        names,
        name_ids: c.name_ids,
        targeted,
        override_name_error,
        segments,
        segments_by_name,
        beside_unnamed_override,
        trim_sensitive: c.trim_sensitive,
        identifier_index,
        reads_flags: c.reads_flags,
        trait_slots: c.trait_slots,
        flag_slots: slot_by_name.len(),
        feature_ctxs,
        varied: None,
    };
    env.varied = crate::evaluate::varied_plan(&env);
    Ok((env, c.diagnostics))
}

/// A copy of `v` sized exactly: an environment keeps a metadata object per feature state and
/// segment for as long as it is served, and a cloned map keeps its source's spare capacity
/// (a one-member map cloned cost ~360 bytes; sized exactly, about half).
fn compact(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut out = Map::with_capacity(map.len());
            for (k, v) in map {
                out.insert(k.as_str().into(), compact(v));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(compact).collect()),
        Value::String(s) => Value::String(s.as_str().into()),
        other => other.clone(),
    }
}

/// The static part of the root (everything but `identity` and `flags`).
fn strip_dynamic(root: &Map<String, Value>) -> Map<String, Value> {
    root.iter()
        .filter(|(k, _)| k.as_str() != "identity" && k.as_str() != "flags")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Entries of an optional JSON object (`null` or absent = empty).
fn object_entries<'v>(
    v: Option<&'v Value>,
    path: &str,
) -> Result<Vec<(&'v String, &'v Value)>, InputError> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(map)) => Ok(map.iter().collect()),
        Some(_) => Err(InputError::new(path, "must be an object")),
    }
}

/// Items of an optional JSON array (`null`, absent or falsy = empty).
fn array_items<'v>(v: Option<&'v Value>, path: &str) -> Result<&'v [Value], InputError> {
    match v {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(_) => Err(InputError::new(path, "must be an array")),
    }
}

fn object<'v>(v: &'v Value, path: &str) -> Result<&'v Map<String, Value>, InputError> {
    v.as_object()
        .ok_or_else(|| InputError::new(path, "must be an object"))
}

fn required(map: &Map<String, Value>, key: &str) -> Result<Value, EvalError> {
    map.get(key)
        .cloned()
        .ok_or_else(|| EvalError::key(format!("'{key}'")))
}

impl Compiler<'_> {
    fn intern(&mut self, name: &str) -> NameId {
        if let Some(&id) = self.name_ids.get(name) {
            return id;
        }
        let id = self.names.len() as NameId;
        self.names.push(name.to_owned());
        self.name_ids.insert(name.to_owned(), id);
        id
    }

    fn feature_ctx(&mut self, v: &Value, path: &str) -> Result<FeatureCtx, InputError> {
        let fc = object(v, path)?;
        let name = match fc.get("name") {
            None => Err(EvalError::key("'name'")),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => return Err(InputError::new(format!("{path}.name"), "must be a string")),
        };
        let name_id = name.as_ref().ok().map(|n| self.intern(n));
        let variants = match fc.get("variants") {
            Some(v) if json_truthy(v) => {
                let items = array_items(Some(v), &format!("{path}.variants"))?;
                let mut compiled = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let vp = format!("{path}.variants[{i}]");
                    let item = object(item, &vp)?;
                    compiled.push((PriorityKey::from_json(item.get("priority")), variant(item)));
                }
                Some(
                    stable_sort_by_priority(&mut compiled)
                        .map(|()| compiled.into_iter().map(|(_, v)| v).collect()),
                )
            }
            _ => None,
        };
        Ok(FeatureCtx {
            name,
            name_id,
            enabled: required(fc, "enabled"),
            value: required(fc, "value"),
            key: fc
                .get("key")
                .map(pystr)
                .ok_or_else(|| EvalError::key("'key'")),
            variants,
            priority: PriorityKey::from_json(fc.get("priority")),
            metadata: self.metadata(fc.get("metadata")),
        })
    }

    /// A feature state's or segment's `metadata`, kept only when truthy (it is echoed only
    /// then), shared with the other environments when the caller shares.
    fn metadata(&self, metadata: Option<&Value>) -> Option<Arc<Value>> {
        let metadata = metadata.filter(|m| json_truthy(m))?;
        Some(match self.shared {
            Some(shared) => shared.metadata(metadata, || compact(metadata)),
            None => Arc::new(compact(metadata)),
        })
    }

    fn segment(&mut self, v: &Value, path: &str) -> Result<Segment, InputError> {
        let sc = object(v, path)?;
        let name = required(sc, "name");
        let reason = format!(
            "TARGETING_MATCH; segment={}",
            name.as_ref().map(pystr).unwrap_or_default()
        );
        let rules = match sc.get("rules") {
            None => Err(EvalError::key("'rules'")),
            Some(r) => Ok(self.rules(r, path)?),
        };
        let mut overrides = Vec::new();
        let items = match sc.get("overrides") {
            Some(o) if json_truthy(o) => array_items(Some(o), &format!("{path}.overrides"))?,
            _ => &[],
        };
        for (i, o) in items.iter().enumerate() {
            let ctx = self.feature_ctx(o, &format!("{path}.overrides[{i}]"))?;
            overrides.push(self.feature_ctxs.len());
            self.feature_ctxs.push(ctx);
        }
        let key = sc
            .get("key")
            .map(pystr)
            .ok_or_else(|| EvalError::key("'key'"));
        let (trait_slots, rule_order) = match &rules {
            Ok(rules) => (
                segment_slots(rules, &mut self.trait_slots),
                crate::order::plan_segment(rules, key.is_ok()),
            ),
            Err(_) => (Box::default(), None),
        };
        Ok(Segment {
            key,
            name,
            reason,
            metadata: self.metadata(sc.get("metadata")),
            rules,
            overrides,
            trait_slots,
            rule_order,
        })
    }

    /// A segment's rules: shared with other environments when the caller shares them and
    /// their text alone decides what they compile to.
    fn rules(&mut self, r: &Value, path: &str) -> Result<Arc<[Rule]>, InputError> {
        let key = self.shared.and_then(|_| Shared::key(r));
        if let (Some(shared), Some(key)) = (self.shared, &key) {
            if let Some(rules) = shared.get(key) {
                return Ok(rules);
            }
        }
        let items = array_items(Some(r), &format!("{path}.rules"))?;
        self.rule_slots.clear();
        let mut rules = Vec::with_capacity(items.len());
        for (i, rule) in items.iter().enumerate() {
            rules.push(self.rule(rule, &format!("{path}.rules[{i}]"))?);
        }
        let rules: Arc<[Rule]> = rules.into();
        Ok(match (self.shared, key) {
            (Some(shared), Some(key)) => shared.insert(key, rules),
            _ => rules,
        })
    }

    fn rule(&mut self, v: &Value, path: &str) -> Result<Rule, InputError> {
        let rule = object(v, path)?;
        let quantifier = match rule.get("type") {
            Some(Value::String(t)) if t == "ALL" => Ok(Quantifier::All),
            Some(Value::String(t)) if t == "ANY" => Ok(Quantifier::Any),
            Some(Value::String(t)) if t == "NONE" => Ok(Quantifier::None),
            Some(other) => Err(EvalError::key(other)),
            None => Err(EvalError::key("'type'")),
        };
        let conds = match rule.get("conditions") {
            Some(c) if json_truthy(c) => array_items(Some(c), &format!("{path}.conditions"))?,
            _ => &[],
        };
        // Sized exactly: a compiled condition is large, and an environment keeps every one.
        let mut conditions = Vec::with_capacity(conds.len());
        for (i, cond) in conds.iter().enumerate() {
            conditions.push(self.condition(cond, &format!("{path}.conditions[{i}]"))?);
        }
        let subs = match rule.get("rules") {
            Some(r) if json_truthy(r) => array_items(Some(r), &format!("{path}.rules"))?,
            _ => &[],
        };
        let mut rules = Vec::with_capacity(subs.len());
        for (i, sub) in subs.iter().enumerate() {
            rules.push(self.rule(sub, &format!("{path}.rules[{i}]"))?);
        }
        let mut rule = Rule {
            quantifier,
            conditions,
            rules,
            plan: Default::default(),
        };
        rule.plan = crate::order::plan_rule(&rule);
        Ok(rule)
    }

    fn condition(&mut self, v: &Value, path: &str) -> Result<Condition, InputError> {
        let cond = object(v, path)?;
        let value = cond.get("value");
        let op_text = match cond.get("operator") {
            Some(Value::String(s)) => Some(s.as_str()),
            _ => None,
        };
        let operator = match cond.get("operator") {
            None => Err(EvalError::key("'operator'")),
            Some(_) => Ok(match op_text.and_then(parse_operator) {
                // One compiled regex per pattern across the environments that share.
                Some(_) if op_text == Some("REGEX") => {
                    let shared = self.shared;
                    condition::regex(value, |pattern| match shared {
                        Some(shared) => shared.regex(pattern),
                        None => PyRegex::compile(pattern),
                    })
                }
                Some(build) => build(value),
                None => {
                    self.diagnostics.push(InputError::new(
                        format!("{path}.operator"),
                        format!("unknown operator {}", cond["operator"]),
                    ));
                    Operator::Unknown
                }
            }),
        };
        let property = match cond.get("property") {
            None => Err(EvalError::key("'property'")),
            Some(p) => {
                let percentage_split = op_text == Some("PERCENTAGE_SPLIT");
                let property = Property::compile(p, percentage_split, self.root);
                self.note_trim_sensitive(p, percentage_split, &property);
                if let Property::Path { query, .. } = &property {
                    match query {
                        Query::General(_) => {
                            // The materialised context includes the resolved flags.
                            self.needs_root = true;
                            self.reads_flags = true;
                        }
                        Query::Flag(..) => self.reads_flags = true,
                        _ => {}
                    }
                }
                Ok(property)
            }
        };
        let source = ConditionSource {
            property: cond.get("property").map(pystr).unwrap_or_default(),
            operator: op_text.unwrap_or("?").to_owned(),
            value: value
                .map(|v| v.to_string())
                .unwrap_or_else(|| "(missing)".into()),
        };
        let trait_slot = match property.as_ref().ok().and_then(trait_name) {
            Some(name) => intern(&mut self.rule_slots, name),
            None => NO_SLOT,
        };
        Ok(Condition {
            property,
            operator,
            source,
            trait_slot,
        })
    }

    /// A static answer read from `features` or `segments` may be different in the context a
    /// per-feature evaluation sees (those two trimmed to the feature): if the answer without
    /// them differs, the query is also compiled to be asked of that trimmed context.
    fn note_trim_sensitive(&mut self, p: &Value, percentage_split: bool, property: &Property) {
        let Property::Path {
            literal,
            query: Query::Static(answer),
        } = property
        else {
            return;
        };
        if self.trim_sensitive.contains_key(literal) {
            return;
        }
        let bare = Property::compile(p, percentage_split, &self.bare_root);
        let same = matches!(&bare, Property::Path { query: Query::Static(b), .. } if b == answer);
        if same {
            return;
        }
        if let Ok(query) = JsonPathQuery::parse(literal) {
            self.trim_sensitive.insert(literal.clone(), Box::new(query));
            self.needs_root = true;
        }
    }
}

fn variant(item: &Map<String, Value>) -> Variant {
    let weight_value = item.get("weight");
    let weight = match weight_value {
        None => Err(EvalError::key("'weight'")),
        Some(Value::Bool(b)) => Ok(*b as i64 as f64),
        Some(Value::Number(n)) => match classify_number(n) {
            JsonNumber::Float(f) => Ok(f),
            JsonNumber::Int(i) => i.to_f64().ok_or_else(|| {
                EvalError::new(
                    PyErrorKind::OverflowError,
                    "int too large to convert to float",
                )
            }),
        },
        Some(_) => Err(EvalError::type_error(
            "unsupported operand type(s) for +: weight and 'float'",
        )),
    };
    Variant {
        value: required(item, "value"),
        weight,
        reason: format!(
            "SPLIT; weight={}",
            weight_value.map(pystr).unwrap_or_default()
        ),
        key: item.get("key").cloned().unwrap_or(Value::Null),
    }
}

/// Builds the [`IdentifierIndex`]: segments of exactly the identity-override shape are indexed.
fn index_identifier_segments(
    segments: &[Segment],
    segments_by_name: &[Vec<usize>],
) -> IdentifierIndex {
    let mut index = IdentifierIndex::default();
    let mut indexed = vec![false; segments.len()];
    for (i, segment) in segments.iter().enumerate() {
        match identifier_in_set(segment) {
            Some(set) => {
                index.active = true;
                indexed[i] = true;
                for identifier in set {
                    index
                        .by_identifier
                        .entry(identifier.clone())
                        .or_default()
                        .push(i);
                }
            }
            None => index.others.push(i),
        }
    }
    if index.active {
        index.others_by_name = segments_by_name
            .iter()
            .map(|list| list.iter().copied().filter(|&s| !indexed[s]).collect())
            .collect();
    }
    index
}

fn identifier_in_set(segment: &Segment) -> Option<&crate::condition::ValueSet> {
    segment.key.as_ref().ok()?;
    let [rule] = segment.rules.as_ref().ok()?.as_ref() else {
        return None;
    };
    if rule.quantifier != Ok(Quantifier::All) || !rule.rules.is_empty() {
        return None;
    }
    let [condition] = rule.conditions.as_slice() else {
        return None;
    };
    let is_identifier = matches!(
        &condition.property,
        Ok(Property::Path { literal, query: Query::Identity(steps) })
            if literal == "$.identity.identifier" && matches!(steps.as_slice(), [crate::property::Step::Name(n)] if n == "identifier")
    );
    match &condition.operator {
        Ok(Operator::In(Ok(set))) if is_identifier => Some(set),
        _ => None,
    }
}

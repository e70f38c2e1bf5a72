//! The evaluation result (`EvaluationResult` in the reference) and its JSON form, written in one
//! pass straight from borrowed environment data: no JSON tree is built.

use std::io::{self, Write};

use serde_json::Value;

/// Why a flag has its value: the reference's `reason` strings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason<'a> {
    /// The environment value, and no segment overrides this feature.
    Static,
    /// The environment value; some segment overrides this feature but none matched.
    Default,
    /// `TARGETING_MATCH; segment=<name>`.
    TargetingMatch(&'a str),
    /// `SPLIT; weight=<weight>`.
    Split(&'a str),
    /// `ERROR; code=CIRCULAR_DEPENDENCY`.
    CircularDependency,
}

impl Reason<'_> {
    pub fn as_str(&self) -> &str {
        match self {
            Reason::Static => "STATIC",
            Reason::Default => "DEFAULT",
            Reason::TargetingMatch(s) | Reason::Split(s) => s,
            Reason::CircularDependency => "ERROR; code=CIRCULAR_DEPENDENCY",
        }
    }
}

/// The multivariate variant a flag landed in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum VariantChoice<'a> {
    /// Not multivariate, or no identity (`null`).
    None,
    /// Multivariate with an identity, but no bucket matched.
    Control,
    /// The variant's `key` as given (may be `null`).
    Key(&'a Value),
}

/// One flag of the result. Everything is borrowed from the compiled environment.
#[derive(Clone, Debug, PartialEq)]
pub struct FlagResult<'a> {
    /// The result's map key: the `name` of the feature entry.
    pub key: &'a str,
    /// The `name` of the feature context that decided the flag (the same in every sane input).
    pub name: &'a str,
    pub enabled: &'a Value,
    pub value: &'a Value,
    pub reason: Reason<'a>,
    pub variant: VariantChoice<'a>,
    pub metadata: Option<&'a Value>,
    /// Index of the feature context that decided the flag (for explanations).
    pub(crate) decided_by: usize,
    /// Index of the segment whose override won, if any.
    pub(crate) segment: Option<usize>,
    /// Index (in the deciding context's variants, priority order) of the variant chosen.
    pub(crate) variant_index: Option<usize>,
}

/// Where a flag's `enabled` and `value` come from: a feature context of the environment and,
/// after a multivariate split, one of its variants. Every source is listed, once, by
/// [`Environment::value_sources`](crate::Environment::value_sources), so a caller can prepare
/// what it writes for each source when the environment changes and look it up per flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ValueSource {
    /// The feature context (environment default or segment override), in environment order.
    pub context: usize,
    /// The variant, in the context's variant order; `None`: the context's own value.
    pub variant: Option<usize>,
}

/// One [`ValueSource`] with what a flag decided by it holds.
#[derive(Clone, Copy, Debug)]
pub struct SourcedValue<'a> {
    pub source: ValueSource,
    /// The deciding context's `name`.
    pub name: &'a str,
    pub enabled: &'a Value,
    pub value: &'a Value,
    /// A variant's `key` as given (`None`: the context's own value).
    pub variant_key: Option<&'a Value>,
}

/// One matching segment.
#[derive(Clone, Debug, PartialEq)]
pub struct SegmentResult<'a> {
    pub name: &'a Value,
    pub metadata: Option<&'a Value>,
    pub(crate) index: usize,
}

/// The whole result: one flag per feature (context order), matching segments in context order.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct EvaluationResult<'a> {
    pub flags: Vec<FlagResult<'a>>,
    pub segments: Vec<SegmentResult<'a>>,
}

/// An identity's result told as what can differ from the environment's own flags
/// ([`Environment::evaluate_varied`](crate::Environment::evaluate_varied)): the flags of the
/// features a matching segment overrides or that are split per identity, each with its position
/// in [`Environment::own_flags`](crate::Environment::own_flags); every other flag is the own
/// flag at its position.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct VariedResult<'a> {
    /// Ascending positions, one per flag of `flags`.
    pub positions: Vec<usize>,
    pub flags: Vec<FlagResult<'a>>,
    /// The matching segments, as in [`EvaluationResult::segments`].
    pub segments: Vec<SegmentResult<'a>>,
}

impl EvaluationResult<'_> {
    pub fn flag(&self, name: &str) -> Option<&FlagResult<'_>> {
        self.flags.iter().find(|f| f.key == name)
    }

    /// Writes the reference's JSON shape: `{"flags": {name: {...}}, "segments": [...]}`.
    pub fn write_json<W: Write>(&self, out: &mut W) -> io::Result<()> {
        out.write_all(b"{\"flags\":{")?;
        for (i, flag) in self.flags.iter().enumerate() {
            if i > 0 {
                out.write_all(b",")?;
            }
            write_str(out, flag.key)?;
            out.write_all(b":")?;
            flag.write_json(out)?;
        }
        out.write_all(b"},\"segments\":[")?;
        for (i, segment) in self.segments.iter().enumerate() {
            if i > 0 {
                out.write_all(b",")?;
            }
            out.write_all(b"{\"name\":")?;
            write_value(out, segment.name)?;
            if let Some(metadata) = segment.metadata {
                out.write_all(b",\"metadata\":")?;
                write_value(out, metadata)?;
            }
            out.write_all(b"}")?;
        }
        out.write_all(b"]}")
    }
}

impl FlagResult<'_> {
    /// The context (and variant) that gave this flag its `enabled` and `value`.
    pub fn source(&self) -> ValueSource {
        ValueSource {
            context: self.decided_by,
            variant: self.variant_index,
        }
    }

    /// `{"enabled","name","reason","value","variant"[,"metadata"]}`, the reference's key order.
    pub fn write_json<W: Write>(&self, out: &mut W) -> io::Result<()> {
        out.write_all(b"{\"enabled\":")?;
        write_value(out, self.enabled)?;
        out.write_all(b",\"name\":")?;
        write_str(out, self.name)?;
        out.write_all(b",\"reason\":")?;
        write_str(out, self.reason.as_str())?;
        out.write_all(b",\"value\":")?;
        write_value(out, self.value)?;
        out.write_all(b",\"variant\":")?;
        match self.variant {
            VariantChoice::None => out.write_all(b"null")?,
            VariantChoice::Control => out.write_all(b"\"control\"")?,
            VariantChoice::Key(v) => write_value(out, v)?,
        }
        if let Some(metadata) = self.metadata {
            out.write_all(b",\"metadata\":")?;
            write_value(out, metadata)?;
        }
        out.write_all(b"}")
    }
}

pub(crate) fn write_str<W: Write>(out: &mut W, s: &str) -> io::Result<()> {
    serde_json::to_writer(out, s).map_err(io::Error::from)
}

pub(crate) fn write_value<W: Write>(out: &mut W, v: &Value) -> io::Result<()> {
    serde_json::to_writer(out, v).map_err(io::Error::from)
}

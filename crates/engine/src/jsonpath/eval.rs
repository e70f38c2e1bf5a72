//! Segments and selectors, a port of the reference library's `segments.py`, `selectors.py` and
//! `query.py` (`jsonpath_rfc9535` 0.2.0).
//!
//! The library evaluates with chained generators, and the engine only takes the first node
//! (`find_one`). Which later nodes are never computed is observable: their exceptions are never
//! raised and their `$.flags` lookups never resolve a flag. Evaluation here is therefore a
//! depth-first walk with a callback that can stop it, which pulls nodes in exactly the
//! generators' order. Filter queries use `find` (all nodes, eagerly), as in the library.
//!
//! Other mirrored details: name/index/slice semantics of Python `dict`/`list` indexing and
//! `slice.indices`; the descendant segment's pre-order walk of containers only, with its limit of
//! 100 nested containers (`JSONPathRecursionError`, swallowed by the engine); `$` inside a
//! relative filter query meaning the filter's current node; and Python's
//! `RuntimeError: dictionary changed size during iteration` when a filter or a later segment
//! resolves a flag while `$.flags` is being iterated. Hand-written for these reasons.

use std::rc::Rc;

use serde_json::Value;

use super::ast::{Query, Segment, Selector};
use super::{Found, LazyFlags};
use crate::error::{EvalError, PyErrorKind};

/// The library's `max_recursion_depth`.
const MAX_RECURSION_DEPTH: usize = 100;

/// An exception raised during evaluation.
pub(super) enum Raise {
    /// A `JSONPathError` subclass (`JSONPathRecursionError`): the engine catches it (no value).
    JsonPath,
    /// Any other exception: it aborts the evaluation.
    Py(EvalError),
}

impl From<EvalError> for Raise {
    fn from(e: EvalError) -> Raise {
        Raise::Py(e)
    }
}

/// `Ok(true)`: stop (the first node was found).
pub(super) type Step = Result<bool, Raise>;

/// A node's value. `Flags` is the reference's `_LazyFlags` object.
#[derive(Clone, Debug)]
pub(super) enum NV<'a> {
    Ref(&'a Value),
    Own(Rc<Value>),
    Flags,
}

impl NV<'_> {
    pub(super) fn json(&self) -> Option<&Value> {
        match self {
            NV::Ref(v) => Some(v),
            NV::Own(v) => Some(v),
            NV::Flags => None,
        }
    }

    /// `isinstance(value, (dict, list))`.
    pub(super) fn is_container(&self) -> bool {
        match self.json() {
            Some(v) => v.is_object() || v.is_array(),
            None => true,
        }
    }

    fn is_dict(&self) -> bool {
        self.json().is_none_or(Value::is_object)
    }
}

type Emit<'e, 'a, 'l> = dyn FnMut(&mut Eval<'a, 'l>, NV<'a>) -> Step + 'e;

pub(super) struct Eval<'a, 'l> {
    doc_root: &'a Value,
    pub lazy: &'l mut dyn LazyFlags,
    /// `node.root` of the query being run (what `$` means in its filters).
    pub root: NV<'a>,
    pub regex_cache: Vec<(String, bool, Option<fancy_regex::Regex>)>,
}

fn runtime_error() -> Raise {
    Raise::Py(EvalError::new(
        PyErrorKind::ValueError,
        "RuntimeError: dictionary changed size during iteration",
    ))
}

impl<'a, 'l> Eval<'a, 'l> {
    pub(super) fn new(doc_root: &'a Value, lazy: &'l mut dyn LazyFlags) -> Self {
        Eval {
            doc_root,
            lazy,
            root: NV::Ref(doc_root),
            regex_cache: Vec::new(),
        }
    }

    /// The value to expose for `$.flags` itself.
    pub(super) fn flags_object(&self) -> Value {
        Value::Object(self.lazy.entries().into_iter().collect())
    }

    /// The Python value of a node as JSON (the document root with `flags` filled in).
    pub(super) fn to_json(&self, nv: &NV<'a>) -> Value {
        match nv {
            NV::Ref(v) if std::ptr::eq(*v, self.doc_root) => {
                let mut root = (*v).clone();
                if let Some(flags) = root.get_mut("flags") {
                    *flags = self.flags_object();
                }
                root
            }
            NV::Flags => self.flags_object(),
            _ => nv.json().cloned().unwrap_or(Value::Null),
        }
    }

    pub(super) fn is_doc_root(&self, nv: &NV<'a>) -> bool {
        matches!(nv, NV::Ref(v) if std::ptr::eq(*v, self.doc_root))
    }

    pub(super) fn find_first(&mut self, q: &Query) -> Result<Found, Raise> {
        let mut found = None;
        let start = NV::Ref(self.doc_root);
        self.resolve(&q.segments, start, &mut |_, n| {
            found = Some(n);
            Ok(true)
        })?;
        Ok(match found {
            Some(n) => Found::Value(self.to_json(&n)),
            None => Found::Nothing,
        })
    }

    /// `query.find(value)`: every node, with `value` as the query's root.
    pub(super) fn find_all(&mut self, q: &Query, value: NV<'a>) -> Result<Vec<NV<'a>>, Raise> {
        let saved = std::mem::replace(&mut self.root, value.clone());
        let mut out = Vec::new();
        let r = self.resolve(&q.segments, value, &mut |_, n| {
            out.push(n);
            Ok(false)
        });
        self.root = saved;
        r?;
        Ok(out)
    }

    fn resolve(&mut self, segs: &[Segment], node: NV<'a>, emit: &mut Emit<'_, 'a, 'l>) -> Step {
        let Some((seg, rest)) = segs.split_first() else {
            return emit(self, node);
        };
        match seg {
            Segment::Child(sels) => {
                for sel in sels {
                    if self.select(sel, &node, &mut |ev, child| ev.resolve(rest, child, emit))? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            Segment::Descendant(sels) => self.visit(&node, 1, &mut |ev, n| {
                for sel in sels {
                    if ev.select(sel, &n, &mut |ev2, child| ev2.resolve(rest, child, emit))? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }),
        }
    }

    /// `_visit`: depth-first, pre-order, containers only.
    fn visit(&mut self, node: &NV<'a>, depth: usize, f: &mut Emit<'_, 'a, 'l>) -> Step {
        if depth > MAX_RECURSION_DEPTH {
            return Err(Raise::JsonPath);
        }
        if f(self, node.clone())? {
            return Ok(true);
        }
        self.for_each_member(node, &mut |ev, child| {
            if child.is_container() {
                ev.visit(&child, depth + 1, f)
            } else {
                Ok(false)
            }
        })
    }

    /// Iterates a dict's values or a list's items (`items()` / `enumerate`); nothing otherwise.
    pub(super) fn for_each_member(&mut self, node: &NV<'a>, f: &mut Emit<'_, 'a, 'l>) -> Step {
        match node {
            NV::Ref(v) => {
                let v: &'a Value = v;
                let at_root = std::ptr::eq(v, self.doc_root);
                match v {
                    Value::Object(m) => {
                        for (k, child) in m {
                            let c = if at_root && k == "flags" {
                                NV::Flags
                            } else {
                                NV::Ref(child)
                            };
                            if f(self, c)? {
                                return Ok(true);
                            }
                        }
                    }
                    Value::Array(a) => {
                        for child in a {
                            if f(self, NV::Ref(child))? {
                                return Ok(true);
                            }
                        }
                    }
                    _ => {}
                }
            }
            NV::Own(rc) => {
                let rc = rc.clone();
                let children: Box<dyn Iterator<Item = &Value>> = match &*rc {
                    Value::Object(m) => Box::new(m.values()),
                    Value::Array(a) => Box::new(a.iter()),
                    _ => Box::new(std::iter::empty()),
                };
                for child in children {
                    if f(self, NV::Own(Rc::new(child.clone())))? {
                        return Ok(true);
                    }
                }
            }
            NV::Flags => {
                let n = self.lazy.len();
                let mut i = 0;
                loop {
                    if self.lazy.len() != n {
                        return Err(runtime_error());
                    }
                    if i >= n {
                        break;
                    }
                    let Some((_, v)) = self.lazy.entry(i) else {
                        break;
                    };
                    i += 1;
                    if f(self, NV::Own(Rc::new(v)))? {
                        return Ok(true);
                    }
                }
            }
        }
        Ok(false)
    }

    fn select(&mut self, sel: &Selector, node: &NV<'a>, f: &mut Emit<'_, 'a, 'l>) -> Step {
        match sel {
            Selector::Name(name) => {
                if !node.is_dict() {
                    return Ok(false);
                }
                let child = match node {
                    NV::Ref(v) => {
                        let v: &'a Value = v;
                        if std::ptr::eq(v, self.doc_root) && name == "flags" {
                            v.get("flags").map(|_| NV::Flags)
                        } else {
                            v.get(name.as_str()).map(NV::Ref)
                        }
                    }
                    NV::Own(rc) => rc.get(name.as_str()).map(|c| NV::Own(Rc::new(c.clone()))),
                    NV::Flags => self.lazy.lookup(name)?.map(|v| NV::Own(Rc::new(v))),
                };
                match child {
                    Some(c) => f(self, c),
                    None => Ok(false),
                }
            }
            Selector::Index(index) => {
                let Some(Value::Array(a)) = node.json() else {
                    return Ok(false);
                };
                let len = a.len() as i64;
                let i = if *index < 0 { index + len } else { *index };
                if i < 0 || i >= len {
                    return Ok(false);
                }
                let c = self.item(node, i as usize);
                f(self, c)
            }
            Selector::Slice(start, stop, step) => {
                let Some(Value::Array(a)) = node.json() else {
                    return Ok(false);
                };
                if *step == Some(0) {
                    return Ok(false);
                }
                for i in slice_indices(a.len() as i64, *start, *stop, *step) {
                    let c = self.item(node, i);
                    if f(self, c)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            Selector::Wild => self.for_each_member(node, f),
            Selector::Filter(expr) => self.for_each_member(node, &mut |ev, child| {
                if ev.filter_matches(expr, &child)? {
                    f(ev, child)
                } else {
                    Ok(false)
                }
            }),
        }
    }

    fn item(&self, node: &NV<'a>, i: usize) -> NV<'a> {
        match node {
            NV::Ref(v) => NV::Ref(&v[i]),
            NV::Own(rc) => NV::Own(Rc::new(rc[i].clone())),
            NV::Flags => unreachable!("flags is a dict"),
        }
    }
}

/// `range(*slice(start, stop, step).indices(len))`, as indices.
fn slice_indices(len: i64, start: Option<i64>, stop: Option<i64>, step: Option<i64>) -> Vec<usize> {
    let step = step.unwrap_or(1);
    let (lower, upper) = if step < 0 { (-1, len - 1) } else { (0, len) };
    let clamp = |v: Option<i64>, default: i64| match v {
        None => default,
        Some(mut v) => {
            if v < 0 {
                v += len;
                if v < lower {
                    v = lower;
                }
            } else if v > upper {
                v = upper;
            }
            v
        }
    };
    let start = clamp(start, if step < 0 { upper } else { lower });
    let stop = clamp(stop, if step < 0 { lower } else { upper });
    let mut out = Vec::new();
    let mut i = start;
    while (step > 0 && i < stop) || (step < 0 && i > stop) {
        out.push(i as usize);
        i += step;
    }
    out
}

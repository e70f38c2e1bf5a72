//! Filter expressions and function extensions, a port of the reference library's
//! `filter_expressions.py` and `function_extensions/` (`jsonpath_rfc9535` 0.2.0), with Python's
//! object semantics, because they decide which nodes a filter keeps:
//! - comparisons are Python's: `bool` is an `int` except at the top level of `==` (`_eq` swaps
//!   booleans to the left and then demands two booleans), so `@.a < 10.5` holds for `false`, and
//!   `[1] == [true]` holds inside containers; ints are exact against floats;
//! - `NOTHING`, empty node lists (`@.x` on a scalar current node), and the bare `@` on a scalar,
//!   which evaluates to the scalar itself (so `$[?@]` drops `0`, `""` and `false` but keeps
//!   `null`);
//! - `&&`/`||` evaluate both sides (no short circuit);
//! - `count`/`value` call `len()` on whatever they get, so on a scalar current node they raise
//!   `TypeError` (`object of type 'int' has no len()`) or `AttributeError` (`value(@)` on a
//!   one-character string), which aborts the evaluation; `length` turns `TypeError` into
//!   `NOTHING`;
//! - `match`/`search` return false unless the pattern is a string that passes `iregexp_check`
//!   and the subject is a string; otherwise they run the `regex` module's `fullmatch`/`search`
//!   (see `iregexp`).
//!
//! Hand-written because these semantics are the reference's, not RFC 9535's.

use std::borrow::Cow;
use std::cmp::Ordering;

use serde_json::Value;

use super::ast::{Expr, Func, Literal, Op};
use super::eval::{Eval, Raise, NV};
use super::iregexp;
use crate::error::{EvalError, PyErrorKind};
use crate::priority::cmp_int_float;
use crate::python::number::PyInt;
use crate::value::{classify_number, JsonNumber};

/// A Python object produced while evaluating a filter expression.
pub(super) enum Obj<'a> {
    Nothing,
    /// A `JSONPathNodeList`.
    Nodes(Vec<NV<'a>>),
    /// A node value (JSON or the flags mapping).
    Val(NV<'a>),
    /// A literal, a function result or a comparison result.
    Lit(Literal),
}

/// A borrowed view of an object, typed the Python way.
enum Py<'x> {
    Nothing,
    Nodes(usize),
    Null,
    Bool(bool),
    Int(Cow<'x, PyInt>),
    Float(f64),
    Str(&'x str),
    /// A list or a dict.
    Container(Cow<'x, Value>),
}

fn view_json(v: &Value) -> Py<'_> {
    match v {
        Value::Null => Py::Null,
        Value::Bool(b) => Py::Bool(*b),
        Value::Number(n) => match classify_number(n) {
            JsonNumber::Int(i) => Py::Int(Cow::Owned(i)),
            JsonNumber::Float(f) => Py::Float(f),
        },
        Value::String(s) => Py::Str(s),
        _ => Py::Container(Cow::Borrowed(v)),
    }
}

impl<'a> Eval<'a, '_> {
    fn view<'x>(&self, o: &'x Obj<'a>) -> Py<'x> {
        match o {
            Obj::Nothing => Py::Nothing,
            Obj::Nodes(n) => Py::Nodes(n.len()),
            Obj::Val(nv) => match nv.json() {
                Some(v) if !self.is_doc_root(nv) => view_json(v),
                _ => Py::Container(Cow::Owned(self.to_json(nv))),
            },
            Obj::Lit(l) => match l {
                Literal::Null => Py::Null,
                Literal::Bool(b) => Py::Bool(*b),
                Literal::Int(i) => Py::Int(Cow::Borrowed(i)),
                Literal::Float(f) => Py::Float(*f),
                Literal::Str(s) => Py::Str(s),
            },
        }
    }

    /// `FilterExpression.evaluate`: is `child` kept by the filter?
    pub(super) fn filter_matches(&mut self, expr: &Expr, current: &NV<'a>) -> Result<bool, Raise> {
        let o = self.evaluate(expr, current)?;
        Ok(self.is_truthy(&o))
    }

    /// `_is_truthy`.
    fn is_truthy(&self, o: &Obj<'a>) -> bool {
        match self.view(o) {
            Py::Nothing => false,
            Py::Nodes(n) => n > 0,
            Py::Null => true,
            Py::Bool(b) => b,
            Py::Int(i) => !i.is_zero(),
            Py::Float(f) => f != 0.0,
            Py::Str(s) => !s.is_empty(),
            Py::Container(v) => match &*v {
                Value::Array(a) => !a.is_empty(),
                Value::Object(m) => !m.is_empty(),
                _ => true,
            },
        }
    }

    fn evaluate(&mut self, expr: &Expr, current: &NV<'a>) -> Result<Obj<'a>, Raise> {
        Ok(match expr {
            Expr::Lit(l) => Obj::Lit(l.clone()),
            Expr::Not(e) => {
                let o = self.evaluate(e, current)?;
                Obj::Lit(Literal::Bool(!self.is_truthy(&o)))
            }
            Expr::Logical(l, op, r) => {
                let l = self.evaluate(l, current)?;
                let r = self.evaluate(r, current)?;
                let (l, r) = (self.is_truthy(&l), self.is_truthy(&r));
                Obj::Lit(Literal::Bool(if *op == Op::And { l && r } else { l || r }))
            }
            Expr::Compare(l, op, r) => {
                let l = unwrap_single(self.evaluate(l, current)?);
                let r = unwrap_single(self.evaluate(r, current)?);
                let (l, r) = (self.view(&l), self.view(&r));
                let b = match op {
                    Op::Eq => py_eq_top(&l, &r),
                    Op::Ne => !py_eq_top(&l, &r),
                    Op::Lt => py_lt(&l, &r),
                    Op::Gt => py_lt(&r, &l),
                    Op::Ge => py_lt(&r, &l) || py_eq_top(&l, &r),
                    Op::Le => py_lt(&l, &r) || py_eq_top(&l, &r),
                    Op::And | Op::Or => false,
                };
                Obj::Lit(Literal::Bool(b))
            }
            Expr::Relative(q) => {
                if !current.is_container() {
                    if q.segments.is_empty() {
                        return Ok(Obj::Val(current.clone()));
                    }
                    return Ok(Obj::Nodes(Vec::new()));
                }
                Obj::Nodes(self.find_all(q, current.clone())?)
            }
            Expr::Root(q) => {
                let root = self.root.clone();
                Obj::Nodes(self.find_all(q, root)?)
            }
            Expr::Call(func, args) => {
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push(self.evaluate(a, current)?);
                }
                self.call(*func, vals)?
            }
        })
    }

    fn call(&mut self, func: Func, args: Vec<Obj<'a>>) -> Result<Obj<'a>, Raise> {
        // `_unpack_node_lists`: value-typed arguments get NOTHING / the single node's value.
        let mut args: Vec<Obj<'a>> = args
            .into_iter()
            .map(|a| match (func, a) {
                (Func::Count | Func::Value, a) => a,
                (_, Obj::Nodes(n)) if n.is_empty() => Obj::Nothing,
                (_, Obj::Nodes(mut n)) if n.len() == 1 => Obj::Val(n.pop().expect("one node")),
                (_, a) => a,
            })
            .collect();
        let arg = args.remove(0);
        Ok(match func {
            Func::Length => match self.py_len(&arg) {
                Ok(n) => Obj::Lit(Literal::Int(PyInt::Small(n as i64))),
                Err(_) => Obj::Nothing,
            },
            Func::Count => Obj::Lit(Literal::Int(PyInt::Small(self.py_len(&arg)? as i64))),
            Func::Value => {
                let n = self.py_len(&arg)?;
                if n != 1 {
                    return Ok(Obj::Nothing);
                }
                match arg {
                    Obj::Nodes(mut nodes) => Obj::Val(nodes.pop().expect("one node")),
                    _ => {
                        return Err(EvalError::new(
                            PyErrorKind::AttributeError,
                            "'str' object has no attribute 'value'",
                        )
                        .into())
                    }
                }
            }
            Func::Match | Func::Search => {
                let pattern = args.remove(0);
                let full = func == Func::Match;
                let (Py::Str(subject), Py::Str(pattern)) = (self.view(&arg), self.view(&pattern))
                else {
                    return Ok(Obj::Lit(Literal::Bool(false)));
                };
                let hit = self.regex_test(pattern, full, subject);
                Obj::Lit(Literal::Bool(hit))
            }
        })
    }

    fn regex_test(&mut self, pattern: &str, full: bool, subject: &str) -> bool {
        let idx = match self
            .regex_cache
            .iter()
            .position(|(p, f, _)| p == pattern && *f == full)
        {
            Some(i) => i,
            None => {
                let re = iregexp::compile(pattern, full);
                self.regex_cache.push((pattern.to_string(), full, re));
                self.regex_cache.len() - 1
            }
        };
        match &self.regex_cache[idx].2 {
            Some(re) => re.is_match(subject).unwrap_or(false),
            None => false,
        }
    }

    /// Python `len(obj)`; `Err` is its `TypeError`.
    fn py_len(&self, o: &Obj<'a>) -> Result<usize, EvalError> {
        let v = self.view(o);
        let name = match v {
            Py::Nodes(n) => return Ok(n),
            Py::Str(s) => return Ok(s.chars().count()),
            Py::Container(c) => {
                return Ok(match &*c {
                    Value::Array(a) => a.len(),
                    Value::Object(m) => m.len(),
                    _ => 0,
                })
            }
            Py::Nothing => "Nothing",
            Py::Null => "NoneType",
            Py::Bool(_) => "bool",
            Py::Int(_) => "int",
            Py::Float(_) => "float",
        };
        Err(EvalError::type_error(format!(
            "object of type '{name}' has no len()"
        )))
    }
}

fn unwrap_single(o: Obj<'_>) -> Obj<'_> {
    match o {
        Obj::Nodes(mut n) if n.len() == 1 => Obj::Val(n.pop().expect("one node")),
        o => o,
    }
}

/// `_eq` of `filter_expressions.py`.
fn py_eq_top(l: &Py<'_>, r: &Py<'_>) -> bool {
    let (l, r) = if matches!(r, Py::Nodes(_)) {
        (r, l)
    } else {
        (l, r)
    };
    if let Py::Nodes(n) = l {
        return match r {
            // Node objects compare by identity: only two empty lists are equal.
            Py::Nodes(m) => *n == 0 && *m == 0,
            Py::Nothing => *n == 0,
            _ => false,
        };
    }
    if matches!((l, r), (Py::Nothing, Py::Nothing)) {
        return true;
    }
    let (l, r) = if matches!(r, Py::Bool(_)) {
        (r, l)
    } else {
        (l, r)
    };
    if let Py::Bool(a) = l {
        return matches!(r, Py::Bool(b) if a == b);
    }
    py_eq(l, r)
}

/// Python `==` (bool is int; ints exact against floats; containers deep).
fn py_eq(l: &Py<'_>, r: &Py<'_>) -> bool {
    match (l, r) {
        (Py::Null, Py::Null) => true,
        (Py::Str(a), Py::Str(b)) => a == b,
        (Py::Container(a), Py::Container(b)) => json_eq(a, b),
        _ => num_cmp(l, r) == Some(Ordering::Equal),
    }
}

/// Numeric comparison of two numbers (bools count as 0/1); `None` if either is not a number.
fn num_cmp(l: &Py<'_>, r: &Py<'_>) -> Option<Ordering> {
    enum N<'x> {
        I(Cow<'x, PyInt>),
        F(f64),
    }
    fn num<'x>(p: &'x Py<'_>) -> Option<N<'x>> {
        match p {
            Py::Bool(b) => Some(N::I(Cow::Owned(PyInt::Small(i64::from(*b))))),
            Py::Int(i) => Some(N::I(Cow::Borrowed(i))),
            Py::Float(f) => Some(N::F(*f)),
            _ => None,
        }
    }
    match (num(l)?, num(r)?) {
        (N::I(a), N::I(b)) => Some(a.cmp(&b)),
        (N::I(a), N::F(b)) => cmp_int_float(&a, b),
        (N::F(a), N::I(b)) => cmp_int_float(&b, a).map(Ordering::reverse),
        (N::F(a), N::F(b)) => a.partial_cmp(&b),
    }
}

/// `_lt` of `filter_expressions.py`.
fn py_lt(l: &Py<'_>, r: &Py<'_>) -> bool {
    match (l, r) {
        (Py::Str(a), Py::Str(b)) => a < b,
        _ => num_cmp(l, r) == Some(Ordering::Less),
    }
}

/// Python `==` on two JSON values.
fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        (Value::Array(_) | Value::Object(_), _) | (_, Value::Array(_) | Value::Object(_)) => false,
        _ => py_eq(&view_json(a), &view_json(b)),
    }
}

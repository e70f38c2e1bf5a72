//! The JSONPath parser, a port of the reference library's `parse.py` and the compile-time checks
//! of `environment.py`/`selectors.py` (`jsonpath_rfc9535` 0.2.0), quirks included.
//!
//! What it mirrors, because each decides whether the engine falls back to a trait lookup
//! (`JSONPathSyntaxError`) or aborts the evaluation (any other exception from `compile`):
//! - leading zeros (`$[01]`, `$[-0]`, `$[0:-0]` are syntax errors; filter literals `-01` and `-0`
//!   are accepted), integer literals converted through `float` (`12345678901234567891` becomes
//!   `12345678901234567168`; `1e400` raises `OverflowError`), and the index range
//!   `-(2**53)+1 ..= 2**53-1` (`JSONPathIndexError`);
//! - string escapes (see `literals`);
//! - function well-typedness (`JSONPathTypeError`), unknown functions (`JSONPathNameError`),
//!   uncompared literals and value functions;
//! - the Pratt-style precedence handling with its push-back token stream.
//!
//! Hand-written because no JSONPath crate reproduces these exact acceptance rules.

use super::ast::{Expr, ExprType, Func, Literal, Op, Query, Segment, Selector};
use super::literals::{decode_string_literal, parse_float_literal, parse_integer_literal};
use super::tokens::{Tk, Token, TokenStream};
use super::{raises, ParseError};
use crate::error::PyErrorKind;

const MAX_INT_INDEX: i64 = (1 << 53) - 1;
const MIN_INT_INDEX: i64 = -(1 << 53) + 1;

/// CPython's recursion limit (1000 frames) less the frames the reference engine is already using
/// when it compiles a property: each parser method below counts as one Python frame, and with
/// this limit the deepest accepted nesting equals the reference's, measured through its engine
/// (487 levels of `!`, `(` or `&&`, 163 nested filters, 972 nested function calls).
const MAX_PARSE_DEPTH: usize = 982;

const PREC_LOWEST: u8 = 1;
const PREC_OR: u8 = 3;
const PREC_AND: u8 = 4;
const PREC_RELATIONAL: u8 = 5;
const PREC_PREFIX: u8 = 7;

fn precedence(k: Tk) -> u8 {
    match k {
        Tk::And => PREC_AND,
        Tk::Eq | Tk::Ge | Tk::Gt | Tk::Le | Tk::Lt | Tk::Ne => PREC_RELATIONAL,
        Tk::Not => PREC_PREFIX,
        Tk::Or => PREC_OR,
        _ => PREC_LOWEST,
    }
}

fn binary_op(k: Tk) -> Option<Op> {
    Some(match k {
        Tk::And => Op::And,
        Tk::Or => Op::Or,
        Tk::Eq => Op::Eq,
        Tk::Ne => Op::Ne,
        Tk::Lt => Op::Lt,
        Tk::Le => Op::Le,
        Tk::Gt => Op::Gt,
        Tk::Ge => Op::Ge,
        _ => return None,
    })
}

fn syntax(msg: impl Into<String>) -> ParseError {
    ParseError::Syntax(msg.into())
}

fn jp_type_error(msg: impl std::fmt::Display) -> ParseError {
    raises(PyErrorKind::TypeError, "JSONPathTypeError", msg)
}

const UNCOMPARED_LITERAL: &str =
    "filter expression literals outside of function expressions must be compared";

pub(super) struct Parser {
    s: TokenStream,
    depth: usize,
}

/// `Parser.parse`: the top-level query.
pub(super) fn parse(tokens: Vec<Token>) -> Result<Query, ParseError> {
    let mut p = Parser {
        s: TokenStream::new(tokens),
        depth: 0,
    };
    p.s.expect(Tk::Root).map_err(syntax)?;
    p.s.next_token();
    let segments = p.parse_query(false)?;
    if p.s.kind() != Tk::Eof {
        return Err(syntax(format!("unexpected token {:?}", p.s.current.value)));
    }
    Ok(Query { segments })
}

impl Parser {
    /// Runs a parser method as one Python frame, raising `RecursionError` past the limit.
    fn frame<T>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<T, ParseError>,
    ) -> Result<T, ParseError> {
        self.depth += 1;
        if self.depth > MAX_PARSE_DEPTH {
            return Err(raises(
                PyErrorKind::ValueError,
                "RecursionError",
                "maximum recursion depth exceeded",
            ));
        }
        let r = f(self);
        self.depth -= 1;
        r
    }

    fn parse_query(&mut self, in_filter: bool) -> Result<Vec<Segment>, ParseError> {
        self.frame(|p| p.parse_query_body(in_filter))
    }

    fn parse_query_body(&mut self, in_filter: bool) -> Result<Vec<Segment>, ParseError> {
        let mut segments = Vec::new();
        loop {
            match self.s.kind() {
                Tk::DoubleDot => {
                    self.s.next_token();
                    segments.push(Segment::Descendant(self.parse_selectors()?));
                }
                Tk::LBracket | Tk::Property | Tk::Wild => {
                    segments.push(Segment::Child(self.parse_selectors()?));
                }
                _ => {
                    if in_filter {
                        let cur = self.s.current.clone();
                        self.s.push(cur);
                    }
                    break;
                }
            }
            self.s.next_token();
        }
        Ok(segments)
    }

    fn parse_selectors(&mut self) -> Result<Vec<Selector>, ParseError> {
        self.frame(|p| p.parse_selectors_body())
    }

    fn parse_selectors_body(&mut self) -> Result<Vec<Selector>, ParseError> {
        Ok(match self.s.kind() {
            Tk::Property => vec![Selector::Name(self.s.current.value.clone())],
            Tk::Wild => vec![Selector::Wild],
            Tk::LBracket => self.parse_bracketed_selection()?,
            _ => Vec::new(),
        })
    }

    /// `_maybe_index` of `parse_slice`: `Some(int)` for an INDEX token.
    fn maybe_index(&self) -> Result<Option<Option<i64>>, ParseError> {
        let t = &self.s.current;
        if t.kind != Tk::Index {
            return Ok(None);
        }
        if t.value.chars().count() > 1 && (t.value.starts_with('0') || t.value.starts_with("-0")) {
            return Err(syntax(format!("invalid index {:?}", t.value)));
        }
        // `None` inside: an int beyond i64, certainly out of the index range.
        Ok(Some(t.value.parse::<i64>().ok()))
    }

    fn parse_slice(&mut self) -> Result<Selector, ParseError> {
        let mut bounds: [Option<Option<i64>>; 3] = [None, None, None];
        if let Some(v) = self.maybe_index()? {
            bounds[0] = Some(v);
            self.s.next_token();
        }
        self.s.expect(Tk::Colon).map_err(syntax)?;
        self.s.next_token();
        if let Some(v) = self.maybe_index()? {
            bounds[1] = Some(v);
            self.s.next_token();
            if self.s.kind() == Tk::Colon {
                self.s.next_token();
            }
        } else if self.s.kind() == Tk::Colon {
            self.s.next_token();
        }
        if let Some(v) = self.maybe_index()? {
            bounds[2] = Some(v);
            self.s.next_token();
        }
        let cur = self.s.current.clone();
        self.s.push(cur);
        let mut out = [None, None, None];
        for (o, b) in out.iter_mut().zip(bounds) {
            if let Some(v) = b {
                match v {
                    Some(i) if (MIN_INT_INDEX..=MAX_INT_INDEX).contains(&i) => *o = Some(i),
                    _ => return Err(index_error()),
                }
            }
        }
        Ok(Selector::Slice(out[0], out[1], out[2]))
    }

    fn parse_bracketed_selection(&mut self) -> Result<Vec<Selector>, ParseError> {
        self.frame(|p| p.parse_bracketed_selection_body())
    }

    fn parse_bracketed_selection_body(&mut self) -> Result<Vec<Selector>, ParseError> {
        self.s.next_token();
        let mut selectors = Vec::new();
        while self.s.kind() != Tk::RBracket {
            match self.s.kind() {
                Tk::Index => {
                    if self.s.peek_kind() == Tk::Colon {
                        selectors.push(self.parse_slice()?);
                    } else {
                        let v = &self.s.current.value;
                        if (v.chars().count() > 1 && v.starts_with('0')) || v.starts_with("-0") {
                            return Err(syntax("leading zero in index selector"));
                        }
                        match v.parse::<i64>() {
                            Ok(i) if (MIN_INT_INDEX..=MAX_INT_INDEX).contains(&i) => {
                                selectors.push(Selector::Index(i))
                            }
                            _ => return Err(index_error()),
                        }
                    }
                }
                Tk::DoubleQuoteString | Tk::SingleQuoteString => {
                    let name = decode_string_literal(&self.s.current)?;
                    selectors.push(Selector::Name(name));
                }
                Tk::Colon => selectors.push(self.parse_slice()?),
                Tk::Wild => selectors.push(Selector::Wild),
                Tk::Filter => selectors.push(self.parse_filter_selector()?),
                Tk::Eof => return Err(syntax("unexpected end of query")),
                k => {
                    return Err(syntax(format!(
                        "unexpected token in bracketed selection {k:?}"
                    )))
                }
            }
            let peek = self.s.peek_kind();
            if peek == Tk::Eof {
                return Err(syntax("unexpected end of selector list"));
            }
            if peek != Tk::RBracket {
                if self.s.peek_kind() != Tk::Comma {
                    return Err(syntax(format!("expected 'COMMA', found {peek:?}")));
                }
                self.s.next_token();
                if self.s.peek_kind() == Tk::RBracket {
                    return Err(syntax("unexpected trailing comma"));
                }
            }
            self.s.next_token();
        }
        if selectors.is_empty() {
            return Err(syntax("empty bracketed segment"));
        }
        Ok(selectors)
    }

    fn parse_filter_selector(&mut self) -> Result<Selector, ParseError> {
        self.frame(|p| p.parse_filter_selector_body())
    }

    fn parse_filter_selector_body(&mut self) -> Result<Selector, ParseError> {
        self.s.next_token();
        let expr = self.parse_filter_expression(PREC_LOWEST)?;
        if let Expr::Call(f, _) = &expr {
            if f.return_type() == ExprType::Value {
                return Err(jp_type_error(format!("result of {f:?}() must be compared")));
            }
        }
        if let Expr::Lit(_) = expr {
            return Err(syntax(UNCOMPARED_LITERAL));
        }
        Ok(Selector::Filter(Box::new(expr)))
    }

    /// `token_map` of the reference. `None`: no entry (a `KeyError`, reported as syntax error).
    fn parse_prefix_token(&mut self, in_args: bool) -> Option<Result<Expr, ParseError>> {
        let cur = &self.s.current;
        Some(match cur.kind {
            Tk::DoubleQuoteString | Tk::SingleQuoteString => {
                decode_string_literal(cur).map(|s| Expr::Lit(Literal::Str(s)))
            }
            Tk::False => Ok(Expr::Lit(Literal::Bool(false))),
            Tk::True => Ok(Expr::Lit(Literal::Bool(true))),
            Tk::Null => Ok(Expr::Lit(Literal::Null)),
            Tk::Float => parse_float_literal(&cur.value),
            Tk::Int => parse_integer_literal(&cur.value),
            Tk::Function => self.parse_function_extension(),
            Tk::Root => self.parse_query_expr(true),
            Tk::Current => self.parse_query_expr(false),
            Tk::LParen if !in_args => self.parse_grouped_expression(),
            Tk::Not if !in_args => self.parse_prefix_expression(),
            _ => return None,
        })
    }

    fn parse_filter_expression(&mut self, min_prec: u8) -> Result<Expr, ParseError> {
        self.frame(|p| p.parse_filter_expression_body(min_prec))
    }

    fn parse_filter_expression_body(&mut self, min_prec: u8) -> Result<Expr, ParseError> {
        let mut left = match self.parse_prefix_token(false) {
            Some(r) => r?,
            None => {
                let msg = match self.s.kind() {
                    Tk::Eof | Tk::RBracket => "end of expression".to_string(),
                    _ => format!("{:?}", self.s.current.value),
                };
                return Err(syntax(format!("unexpected {msg}")));
            }
        };
        loop {
            let peek = self.s.peek_kind();
            if matches!(peek, Tk::Eof | Tk::RBracket) || precedence(peek) < min_prec {
                break;
            }
            if binary_op(peek).is_none() {
                break;
            }
            self.s.next_token();
            left = self.parse_infix_expression(left)?;
        }
        Ok(left)
    }

    fn parse_prefix_expression(&mut self) -> Result<Expr, ParseError> {
        self.frame(|p| p.parse_prefix_expression_body())
    }

    fn parse_prefix_expression_body(&mut self) -> Result<Expr, ParseError> {
        self.s.next_token();
        let right = self.parse_filter_expression(PREC_PREFIX)?;
        Ok(Expr::Not(Box::new(right)))
    }

    fn parse_infix_expression(&mut self, left: Expr) -> Result<Expr, ParseError> {
        self.frame(|p| p.parse_infix_expression_body(left))
    }

    fn parse_infix_expression_body(&mut self, left: Expr) -> Result<Expr, ParseError> {
        let tok = self.s.next_token();
        let right = self.parse_filter_expression(precedence(tok.kind))?;
        // A non-operator here is a `KeyError` in the reference, always raised under the
        // `except KeyError` of an enclosing `parse_filter_expression`: a syntax error.
        let op =
            binary_op(tok.kind).ok_or_else(|| syntax(format!("unexpected {:?}", tok.value)))?;
        if matches!(op, Op::And | Op::Or) {
            if matches!(left, Expr::Lit(_)) || matches!(right, Expr::Lit(_)) {
                return Err(syntax(UNCOMPARED_LITERAL));
            }
            return Ok(Expr::Logical(Box::new(left), op, Box::new(right)));
        }
        non_comparable(&left)?;
        non_comparable(&right)?;
        Ok(Expr::Compare(Box::new(left), op, Box::new(right)))
    }

    fn parse_grouped_expression(&mut self) -> Result<Expr, ParseError> {
        self.frame(|p| p.parse_grouped_expression_body())
    }

    fn parse_grouped_expression_body(&mut self) -> Result<Expr, ParseError> {
        self.s.next_token();
        let mut expr = self.parse_filter_expression(PREC_LOWEST)?;
        self.s.next_token();
        while self.s.kind() != Tk::RParen {
            if self.s.kind() == Tk::Eof {
                return Err(syntax("unbalanced parentheses"));
            }
            expr = self.parse_infix_expression(expr)?;
        }
        Ok(expr)
    }

    fn parse_query_expr(&mut self, root: bool) -> Result<Expr, ParseError> {
        self.frame(|p| p.parse_query_expr_body(root))
    }

    fn parse_query_expr_body(&mut self, root: bool) -> Result<Expr, ParseError> {
        self.s.next_token();
        let q = Query {
            segments: self.parse_query(true)?,
        };
        Ok(if root {
            Expr::Root(q)
        } else {
            Expr::Relative(q)
        })
    }

    fn parse_function_extension(&mut self) -> Result<Expr, ParseError> {
        self.frame(|p| p.parse_function_extension_body())
    }

    fn parse_function_extension_body(&mut self) -> Result<Expr, ParseError> {
        let mut args = Vec::new();
        let tok = self.s.next_token();
        while self.s.kind() != Tk::RParen {
            let mut expr = match self.parse_prefix_token(true) {
                Some(r) => r?,
                None => {
                    return Err(syntax(format!("unexpected {:?}", self.s.current.value)));
                }
            };
            while binary_op(self.s.peek_kind()).is_some() {
                self.s.next_token();
                expr = self.parse_infix_expression(expr)?;
            }
            args.push(expr);
            let peek = self.s.peek_kind();
            if peek != Tk::RParen {
                if peek != Tk::Comma {
                    return Err(syntax(format!("expected 'COMMA', found {peek:?}")));
                }
                self.s.next_token();
            }
            self.s.next_token();
        }
        let Some(func) = Func::from_name(&tok.value) else {
            return Err(raises(
                PyErrorKind::ValueError,
                "JSONPathNameError",
                format!("function {:?} is not defined", tok.value),
            ));
        };
        check_well_typedness(func, &args)?;
        Ok(Expr::Call(func, args))
    }
}

fn index_error() -> ParseError {
    raises(
        PyErrorKind::ValueError,
        "JSONPathIndexError",
        "index out of range",
    )
}

fn function_return_type(e: &Expr) -> Option<ExprType> {
    match e {
        Expr::Call(f, _) => Some(f.return_type()),
        _ => None,
    }
}

fn check_well_typedness(func: Func, args: &[Expr]) -> Result<(), ParseError> {
    let types = func.arg_types();
    if args.len() != types.len() {
        return Err(jp_type_error(format!(
            "{func:?}() requires {} arguments",
            types.len()
        )));
    }
    for (idx, (arg, typ)) in args.iter().zip(types).enumerate() {
        let ok = match typ {
            ExprType::Value => {
                matches!(arg, Expr::Lit(_))
                    || matches!(arg, Expr::Relative(q) | Expr::Root(q) if q.singular())
                    || function_return_type(arg) == Some(ExprType::Value)
            }
            ExprType::Logical => matches!(
                arg,
                Expr::Relative(_) | Expr::Root(_) | Expr::Logical(..) | Expr::Compare(..)
            ),
            ExprType::Nodes => {
                matches!(arg, Expr::Relative(_) | Expr::Root(_))
                    || function_return_type(arg) == Some(ExprType::Nodes)
            }
        };
        if !ok {
            return Err(jp_type_error(format!(
                "{func:?}() argument {idx} must be of {typ:?}Type"
            )));
        }
    }
    Ok(())
}

fn non_comparable(e: &Expr) -> Result<(), ParseError> {
    match e {
        Expr::Relative(q) | Expr::Root(q) if !q.singular() => {
            Err(jp_type_error("non-singular query is not comparable"))
        }
        Expr::Call(f, _) if f.return_type() != ExprType::Value => Err(jp_type_error(format!(
            "result of {f:?}() is not comparable"
        ))),
        _ => Ok(()),
    }
}

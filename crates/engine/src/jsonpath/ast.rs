//! The parsed form of a query: the reference library's segment, selector and filter-expression
//! classes (`jsonpath_rfc9535` 0.2.0), and the function extensions' declared types, which the
//! parser's well-typedness checks read. Kept in the library's shapes so the evaluator can mirror
//! it class by class.

use crate::python::number::PyInt;

#[derive(Clone, Debug)]
pub(super) struct Query {
    pub segments: Vec<Segment>,
}

#[derive(Clone, Debug)]
pub(super) enum Segment {
    Child(Vec<Selector>),
    Descendant(Vec<Selector>),
}

#[derive(Clone, Debug)]
pub(super) enum Selector {
    Name(String),
    Index(i64),
    Slice(Option<i64>, Option<i64>, Option<i64>),
    Wild,
    Filter(Box<Expr>),
}

#[derive(Clone, Debug)]
pub(super) enum Literal {
    Null,
    Bool(bool),
    Int(PyInt),
    Float(f64),
    Str(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Func {
    Length,
    Count,
    Match,
    Search,
    Value,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ExprType {
    Value,
    Logical,
    Nodes,
}

impl Func {
    pub(super) fn from_name(name: &str) -> Option<Func> {
        Some(match name {
            "length" => Func::Length,
            "count" => Func::Count,
            "match" => Func::Match,
            "search" => Func::Search,
            "value" => Func::Value,
            _ => return None,
        })
    }

    pub(super) fn arg_types(self) -> &'static [ExprType] {
        match self {
            Func::Length => &[ExprType::Value],
            Func::Count | Func::Value => &[ExprType::Nodes],
            Func::Match | Func::Search => &[ExprType::Value, ExprType::Value],
        }
    }

    pub(super) fn return_type(self) -> ExprType {
        match self {
            Func::Length | Func::Count | Func::Value => ExprType::Value,
            Func::Match | Func::Search => ExprType::Logical,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Op {
    And,
    Or,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Clone, Debug)]
pub(super) enum Expr {
    Lit(Literal),
    Not(Box<Expr>),
    Logical(Box<Expr>, Op, Box<Expr>),
    Compare(Box<Expr>, Op, Box<Expr>),
    Relative(Query),
    Root(Query),
    Call(Func, Vec<Expr>),
}

impl Query {
    /// `JSONPathQuery.singular_query()`.
    pub(super) fn singular(&self) -> bool {
        self.segments.iter().all(|s| match s {
            Segment::Child(sel) => {
                sel.len() == 1 && matches!(sel[0], Selector::Name(_) | Selector::Index(_))
            }
            Segment::Descendant(_) => false,
        })
    }
}

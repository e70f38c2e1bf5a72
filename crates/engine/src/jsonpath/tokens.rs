//! Tokens and the token stream, a port of the reference library's `tokens.py`
//! (`jsonpath_rfc9535` 0.2.0). The parser's look-ahead (`peek` implemented as "advance, then push
//! back") and its push-back queue are reproduced as they are, because the parser's acceptance of
//! malformed queries depends on exactly which token is current after each step; hand-written for
//! that reason.

use std::collections::VecDeque;

/// Token kinds (the reference's `TokenType`, less the ones its lexer never emits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Tk {
    Eof,
    Error,
    Init,
    Colon,
    Comma,
    DoubleDot,
    Filter,
    Index,
    LBracket,
    Property,
    RBracket,
    Root,
    Wild,
    And,
    Current,
    DoubleQuoteString,
    Eq,
    False,
    Float,
    Function,
    Ge,
    Gt,
    Int,
    Le,
    LParen,
    Lt,
    Ne,
    Not,
    Null,
    Or,
    RParen,
    SingleQuoteString,
    True,
}

#[derive(Clone, Debug)]
pub(super) struct Token {
    pub kind: Tk,
    pub value: String,
    pub message: String,
}

impl Token {
    pub(super) fn new(kind: Tk, value: String) -> Token {
        Token {
            kind,
            value,
            message: String::new(),
        }
    }
}

/// The reference's `TokenStream`: a current token, a push-back queue and `peek` built on both.
pub(super) struct TokenStream {
    tokens: std::vec::IntoIter<Token>,
    pushed: VecDeque<Token>,
    pub current: Token,
}

impl TokenStream {
    pub(super) fn new(tokens: Vec<Token>) -> TokenStream {
        let mut s = TokenStream {
            tokens: tokens.into_iter(),
            pushed: VecDeque::new(),
            current: Token::new(Tk::Init, String::new()),
        };
        s.next_token();
        s
    }

    pub(super) fn next_token(&mut self) -> Token {
        let next = if let Some(t) = self.pushed.pop_front() {
            t
        } else if self.current.kind != Tk::Eof {
            self.tokens
                .next()
                .unwrap_or_else(|| Token::new(Tk::Eof, String::new()))
        } else {
            return self.current.clone();
        };
        std::mem::replace(&mut self.current, next)
    }

    pub(super) fn peek_kind(&mut self) -> Tk {
        let current = self.next_token();
        let result = self.current.kind;
        self.push(current);
        result
    }

    pub(super) fn push(&mut self, tok: Token) {
        let cur = std::mem::replace(&mut self.current, tok);
        self.pushed.push_back(cur);
    }

    pub(super) fn kind(&self) -> Tk {
        self.current.kind
    }

    pub(super) fn expect(&self, kind: Tk) -> Result<(), String> {
        if self.current.kind != kind {
            return Err(format!("expected {kind:?}, found {:?}", self.current.kind));
        }
        Ok(())
    }
}

//! The `.npy` header: a Python dict literal such as
//! `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`, parsed and written.
//!
//! The parser takes the literal subset NumPy writes (strings, booleans, non-negative
//! integers, tuples, lists, dicts, `None`) and nothing else: no `eval`, a depth limit.

use crate::error::{Error, Result};

/// A parsed Python literal.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Lit {
    Str(String),
    Bool(bool),
    Int(u64),
    None,
    /// A tuple or a list (only structured dtypes use lists, and they are refused).
    Seq(Vec<Lit>),
    Dict(Vec<(Lit, Lit)>),
}

/// What the header says about the array.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Header {
    pub descr: String,
    pub fortran_order: bool,
    pub shape: Vec<usize>,
}

/// Nesting beyond this is not a NumPy header (and would risk the stack).
const MAX_DEPTH: usize = 32;

/// Parses the header text.
pub(crate) fn parse(op: &'static str, text: &str) -> Result<Header> {
    let bad = |msg: String| Error::format(op, format!("bad .npy header {:?}: {msg}", abbreviate(text)));
    let mut p = Parser { s: text.as_bytes(), pos: 0 };
    let lit = p.value(0).map_err(&bad)?;
    p.skip_ws();
    if p.pos != p.s.len() {
        return Err(bad(format!("unexpected text at byte {}", p.pos)));
    }
    let Lit::Dict(entries) = lit else { return Err(bad("it is not a dict".into())) };
    let get = |key: &str| entries.iter().find(|(k, _)| *k == Lit::Str(key.into())).map(|(_, v)| v);
    let descr = match get("descr") {
        Some(Lit::Str(s)) => s.clone(),
        Some(Lit::Seq(_)) => {
            return Err(Error::format(op, "structured (record) dtypes are not supported: save each field separately"));
        }
        Some(other) => return Err(bad(format!("'descr' is {other:?}, not a string"))),
        None => return Err(bad("'descr' is missing".into())),
    };
    let fortran_order = match get("fortran_order") {
        Some(Lit::Bool(b)) => *b,
        Some(other) => return Err(bad(format!("'fortran_order' is {other:?}, not True or False"))),
        None => return Err(bad("'fortran_order' is missing".into())),
    };
    let shape = match get("shape") {
        Some(Lit::Seq(dims)) => dims
            .iter()
            .map(|d| match d {
                Lit::Int(n) => usize::try_from(*n).map_err(|_| bad(format!("dimension {n} does not fit usize"))),
                other => Err(bad(format!("dimension {other:?} is not an integer"))),
            })
            .collect::<Result<Vec<usize>>>()?,
        Some(other) => return Err(bad(format!("'shape' is {other:?}, not a tuple"))),
        None => return Err(bad("'shape' is missing".into())),
    };
    Ok(Header { descr, fortran_order, shape })
}

/// The header dict as NumPy writes it (without padding).
pub(crate) fn write(descr: &str, shape: &[usize]) -> String {
    let dims = match shape {
        [] => "()".to_string(),
        [d] => format!("({d},)"),
        _ => format!("({})", shape.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")),
    };
    format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {dims}, }}")
}

/// At most the first 80 characters, for messages about headers that may be huge.
fn abbreviate(text: &str) -> String {
    match text.char_indices().nth(80) {
        Some((i, _)) => format!("{}...", &text[..i]),
        None => text.to_string(),
    }
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self.s.get(self.pos).is_some_and(|c| c.is_ascii_whitespace()) {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.pos).copied()
    }

    fn value(&mut self, depth: usize) -> std::result::Result<Lit, String> {
        if depth > MAX_DEPTH {
            return Err(format!("nested deeper than {MAX_DEPTH} levels"));
        }
        match self.peek() {
            None => Err("it ends early".into()),
            Some(q @ (b'\'' | b'"')) => self.string(q),
            Some(b'(') => self.seq(b')', depth).map(Lit::Seq),
            Some(b'[') => self.seq(b']', depth).map(Lit::Seq),
            Some(b'{') => self.dict(depth),
            Some(c) if c.is_ascii_digit() => self.int(),
            Some(c) if c.is_ascii_alphabetic() => {
                let start = self.pos;
                while self.s.get(self.pos).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_') {
                    self.pos += 1;
                }
                match &self.s[start..self.pos] {
                    b"True" => Ok(Lit::Bool(true)),
                    b"False" => Ok(Lit::Bool(false)),
                    b"None" => Ok(Lit::None),
                    word => Err(format!("unknown name {:?} at byte {start}", String::from_utf8_lossy(word))),
                }
            }
            Some(c) => Err(format!("unexpected {:?} at byte {}", c as char, self.pos)),
        }
    }

    fn string(&mut self, quote: u8) -> std::result::Result<Lit, String> {
        let start = self.pos;
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            match self.s.get(self.pos) {
                None => return Err(format!("the string at byte {start} is not closed")),
                Some(&c) if c == quote => {
                    self.pos += 1;
                    break;
                }
                Some(b'\\') => {
                    match self.s.get(self.pos + 1) {
                        Some(&c @ (b'\\' | b'\'' | b'"')) => out.push(c),
                        _ => return Err(format!("unsupported escape in the string at byte {start}")),
                    }
                    self.pos += 2;
                }
                Some(&c) => {
                    out.push(c);
                    self.pos += 1;
                }
            }
        }
        // The header as a whole is UTF-8 already, and quotes and backslashes are ASCII.
        String::from_utf8(out).map(Lit::Str).map_err(|_| format!("the string at byte {start} is not UTF-8"))
    }

    fn int(&mut self) -> std::result::Result<Lit, String> {
        let start = self.pos;
        while self.s.get(self.pos).is_some_and(u8::is_ascii_digit) {
            self.pos += 1;
        }
        let digits = std::str::from_utf8(&self.s[start..self.pos]).expect("ASCII digits");
        // Python 2 wrote long integers with a suffix: (3L, 4L).
        if self.s.get(self.pos) == Some(&b'L') {
            self.pos += 1;
        }
        digits.parse().map(Lit::Int).map_err(|_| format!("integer {digits} at byte {start} is too large"))
    }

    /// Items up to `close`, comma-separated, a trailing comma allowed.
    fn seq(&mut self, close: u8, depth: usize) -> std::result::Result<Vec<Lit>, String> {
        self.pos += 1;
        let mut items = Vec::new();
        loop {
            if self.peek() == Some(close) {
                self.pos += 1;
                return Ok(items);
            }
            items.push(self.value(depth + 1)?);
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(c) if c == close => {}
                _ => return Err(format!("expected ',' or {:?} at byte {}", close as char, self.pos)),
            }
        }
    }

    fn dict(&mut self, depth: usize) -> std::result::Result<Lit, String> {
        self.pos += 1;
        let mut entries = Vec::new();
        loop {
            if self.peek() == Some(b'}') {
                self.pos += 1;
                return Ok(Lit::Dict(entries));
            }
            let key = self.value(depth + 1)?;
            if self.peek() != Some(b':') {
                return Err(format!("expected ':' at byte {}", self.pos));
            }
            self.pos += 1;
            let value = self.value(depth + 1)?;
            entries.push((key, value));
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {}
                _ => return Err(format!("expected ',' or '}}' at byte {}", self.pos)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_numpy_writes() {
        let h = parse("t", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }      \n").unwrap();
        assert_eq!(h, Header { descr: "<f4".into(), fortran_order: false, shape: vec![2, 3] });
        let h = parse("t", "{'descr': '|b1', 'fortran_order': True, 'shape': (5,), }").unwrap();
        assert_eq!((h.fortran_order, h.shape), (true, vec![5]));
        assert_eq!(
            parse("t", "{\"shape\": (), \"fortran_order\": False, \"descr\": \">i8\"}").unwrap().shape,
            Vec::<usize>::new()
        );
        assert_eq!(parse("t", "{'descr': '<i4', 'fortran_order': False, 'shape': (3L, 4L)}").unwrap().shape, [3, 4]);
        assert_eq!(write("<f4", &[]), "{'descr': '<f4', 'fortran_order': False, 'shape': (), }");
        assert_eq!(write("<f4", &[7]), "{'descr': '<f4', 'fortran_order': False, 'shape': (7,), }");
        assert_eq!(parse("t", &write("<u4", &[2, 0, 3])).unwrap().shape, [2, 0, 3]);
    }

    #[test]
    fn rejects_what_it_does_not_know() {
        for bad in [
            "",
            "{",
            "{'descr': '<f4', 'fortran_order': False}",
            "{'descr': '<f4', 'fortran_order': 0, 'shape': ()}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,)}",
            "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': ()}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': ()} x",
            "[1, 2]",
            "__import__('os')",
        ] {
            assert!(parse("t", bad).is_err(), "{bad:?} should be refused");
        }
        let deep = format!("{}{}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(parse("t", &deep).is_err());
    }
}

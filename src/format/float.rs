//! NumPy's float text: the shortest digits that round-trip at the element's own precision
//! (Dragon4's "unique" mode), capped at a number of fractional digits, and the per-array
//! `FloatingFormat` that picks positional or scientific notation and pads every element
//! to common widths (numpy/_core/arrayprint.py, default `floatmode="maxprec"`).

use half::{bf16, f16};

use crate::dtype::Element;

/// The float format values are read in: shortest digits depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FloatKind {
    F16,
    BF16,
    F32,
    F64,
}

impl FloatKind {
    /// `v` rounded to this format (exact for values of the format).
    fn round(self, v: f64) -> f64 {
        match self {
            FloatKind::F16 => <f16 as Element>::from_f64(v).to_f64(),
            FloatKind::BF16 => <bf16 as Element>::from_f64(v).to_f64(),
            FloatKind::F32 => v as f32 as f64,
            FloatKind::F64 => v,
        }
    }

    /// Values at or above this magnitude switch an array to scientific notation:
    /// NumPy 2.x uses `10**min(8, finfo(dtype).precision)` (bfloat16's precision is 2 in
    /// ml_dtypes' finfo).
    fn exp_cutoff(self) -> f64 {
        match self {
            FloatKind::F16 => 1e3,
            FloatKind::BF16 => 1e2,
            FloatKind::F32 => 1e6,
            FloatKind::F64 => 1e8,
        }
    }

    /// A 0-d array (a scalar's `str`) switches to scientific notation at this magnitude:
    /// `10**finfo(dtype).precision`, but `1e16` for float64 (numpy's scalartypes.c).
    fn scalar_exp_cutoff(self) -> f64 {
        match self {
            FloatKind::F16 => 1e3,
            FloatKind::BF16 => 1e2,
            FloatKind::F32 => 1e6,
            FloatKind::F64 => 1e16,
        }
    }
}

/// A finite value's decimal digits: `digits[0].digits[1..] x 10^exp`, no trailing zeros
/// (zero is `"0"`, exponent 0). The sign is kept apart so `-0.0` prints `-0.`.
#[derive(Debug, Clone, PartialEq)]
struct Digits {
    neg: bool,
    digits: String,
    exp: i32,
}

impl Digits {
    /// Parses Rust's `{:e}` text of a non-negative value ("1.25e-5", "3e2").
    fn parse(neg: bool, s: &str) -> Digits {
        let (mant, exp) = s.split_once('e').unwrap_or((s, "0"));
        let mut digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
        let exp = exp.parse().unwrap_or(0);
        let kept = digits.trim_end_matches('0').len().max(1);
        digits.truncate(kept);
        if digits == "0" { Digits { neg, digits, exp: 0 } } else { Digits { neg, digits, exp } }
    }

    fn frac_len_positional(&self) -> usize {
        (self.digits.len() as i64 - 1 - self.exp as i64).max(0) as usize
    }
}

/// The shortest digits of finite `x` that read back as `x` in `kind`, the closest to `x`
/// among those (what Dragon4's unique mode, Ryu and Rust's `{:e}` all produce).
fn shortest(x: f64, kind: FloatKind) -> Digits {
    let neg = x.is_sign_negative();
    let a = x.abs();
    let rust_shortest = match kind {
        // Rust's shortest round-trip formatting, at the value's own precision.
        FloatKind::F32 => Some(format!("{:e}", a as f32)),
        FloatKind::F64 => Some(format!("{a:e}")),
        FloatKind::F16 | FloatKind::BF16 => None,
    };
    if let Some(s) = rust_shortest {
        // Where two candidates of that length are equally close (x = 343126.125 in f32),
        // Rust takes the upper one, Dragon4 the even one: the correctly rounded digits
        // at that length, whenever they also read back.
        let d = Digits::parse(neg, &s);
        let even = format!("{a:.*e}", d.digits.len() - 1);
        if even.parse::<f64>().is_ok_and(|v| kind.round(v) == a) {
            return Digits::parse(neg, &even);
        }
        return d;
    }
    if a == 0.0 {
        return Digits { neg, digits: "0".into(), exp: 0 };
    }
    // Half formats have no shortest formatter in std: try 1, 2, ... significant digits.
    // The correctly rounded candidate is the closest; its neighbours can round-trip where
    // it does not when the value sits at a power of two (a lopsided rounding interval).
    for p in 1..=17usize {
        let nearest = format!("{a:.*e}", p - 1);
        let (mant, exp) = nearest.split_once('e').unwrap_or((&nearest, "0"));
        let m: i64 = mant.replace('.', "").parse().unwrap_or(0);
        let e10: i32 = exp.parse().unwrap_or(0);
        let scale = e10 - (p as i32 - 1);
        for cand in [m, m + 1, m - 1] {
            let text = format!("{cand}e{scale}");
            if cand > 0 && text.parse::<f64>().is_ok_and(|v| kind.round(v) == a) {
                let s = cand.to_string();
                let exp = scale + s.len() as i32 - 1;
                return Digits::parse(neg, &format!("{}e{exp}", s));
            }
        }
    }
    Digits::parse(neg, &format!("{a:e}"))
}

/// Positional digits of finite `x`: shortest, or rounded to `cap` fractional digits
/// (ties to even, as Dragon4) when the shortest needs more. Returns the integer part
/// (with its sign) and the fraction, trailing zeros trimmed.
fn positional(x: f64, kind: FloatKind, cap: Option<usize>) -> (String, String) {
    let d = shortest(x, kind);
    let sign = if d.neg { "-" } else { "" };
    if let Some(p) = cap
        && d.frac_len_positional() > p
    {
        let s = format!("{:.p$}", x.abs());
        let (int, frac) = s.split_once('.').unwrap_or((&s, ""));
        return (format!("{sign}{int}"), frac.trim_end_matches('0').to_string());
    }
    let n = d.digits.len() as i64;
    let e = d.exp as i64;
    if e >= 0 {
        let int_len = (e + 1) as usize;
        let (int, frac) = if n as usize > int_len {
            (d.digits[..int_len].to_string(), d.digits[int_len..].to_string())
        } else {
            (format!("{}{}", d.digits, "0".repeat(int_len - n as usize)), String::new())
        };
        (format!("{sign}{int}"), frac)
    } else {
        (format!("{sign}0"), format!("{}{}", "0".repeat((-e - 1) as usize), d.digits))
    }
}

/// Scientific digits of finite `x`: shortest, or rounded to `cap` digits after the point.
fn scientific(x: f64, kind: FloatKind, cap: Option<usize>) -> Digits {
    let d = shortest(x, kind);
    match cap {
        Some(p) if d.digits.len() - 1 > p => Digits::parse(d.neg, &format!("{:.p$e}", x.abs())),
        _ => d,
    }
}

/// `e+05`: NumPy's exponent, sign always, at least `min_digits` (and 2) digits.
fn exponent(exp: i32, min_digits: usize) -> String {
    let sign = if exp < 0 { '-' } else { '+' };
    format!("e{sign}{:0w$}", exp.unsigned_abs(), w = min_digits.max(2))
}

/// NumPy's `str()` of a float scalar (the text of a 0-d array): positional with at least
/// one fractional digit (`1.0`) for magnitudes from `1e-4` up to a cutoff (`1e16` for
/// f64, `1e6` for f32, `1e3` for f16) and zero, else
/// scientific without a bare point (`1e+16`, `1.5e-05`); no precision cap.
pub(crate) fn scalar_str(x: f64, kind: FloatKind) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf".into() } else { "inf".into() };
    }
    let a = x.abs();
    if a == 0.0 || (1e-4..kind.scalar_exp_cutoff()).contains(&a) {
        let (int, frac) = positional(x, kind, None);
        let frac = if frac.is_empty() { "0".to_string() } else { frac };
        format!("{int}.{frac}")
    } else {
        let d = scientific(x, kind, None);
        let sign = if d.neg { "-" } else { "" };
        let (first, rest) = d.digits.split_at(1);
        let point = if rest.is_empty() { String::new() } else { format!(".{rest}") };
        format!("{sign}{first}{point}{}", exponent(d.exp, 2))
    }
}

/// One array's float layout (NumPy's `FloatingFormat` with `floatmode="maxprec"` and
/// `suppress=False`): notation, widths and digit counts chosen from all values shown.
#[derive(Debug, Clone)]
pub(crate) struct FloatFormat {
    kind: FloatKind,
    cap: Option<usize>,
    /// Scientific notation; `frac` is then the common number of digits after the point.
    sci: bool,
    frac: usize,
    exp_digits: usize,
    pad_left: usize,
    pad_right: usize,
}

impl FloatFormat {
    /// The layout for `values` (the elements that will be printed), each with at most
    /// `cap` fractional digits.
    pub(crate) fn new(values: &[f64], kind: FloatKind, cap: Option<usize>) -> FloatFormat {
        let finite: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        let nonzero = finite.iter().filter(|&&v| v != 0.0).map(|v| v.abs());
        let (min, max) = nonzero.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
        // The comparisons run in the element's precision, as NumPy's do (1e-4 rounded to
        // float16 is 1.0002e-4); the ratio may overflow to inf, which counts as large.
        let sci = max > 0.0 && (max >= kind.exp_cutoff() || min < kind.round(1e-4) || kind.round(max / min) > 1000.0);
        let mut f = FloatFormat { kind, cap, sci, frac: 0, exp_digits: 0, pad_left: 0, pad_right: 0 };
        if finite.is_empty() {
            f.sci = false;
        } else if sci {
            for &x in &finite {
                let d = scientific(x, kind, cap);
                f.pad_left = f.pad_left.max(1 + d.neg as usize);
                f.frac = f.frac.max(d.digits.len() - 1);
                f.exp_digits = f.exp_digits.max(d.exp.unsigned_abs().to_string().len().max(2));
            }
            f.pad_right = f.exp_digits + 2 + f.frac;
        } else {
            for &x in &finite {
                let (int, frac) = positional(x, kind, cap);
                f.pad_left = f.pad_left.max(int.len());
                f.pad_right = f.pad_right.max(frac.len());
            }
        }
        if finite.len() != values.len() {
            // Room for "nan", "inf" and "-inf", right-aligned over the whole width.
            let neginf = values.contains(&f64::NEG_INFINITY) as usize;
            let offset = f.pad_right + 1;
            f.pad_left = f.pad_left.max((3 + neginf).saturating_sub(offset));
        }
        f
    }

    /// The text of one element, padded to the common width.
    pub(crate) fn format(&self, x: f64) -> String {
        if !x.is_finite() {
            let s = if x.is_nan() {
                "nan"
            } else if x < 0.0 {
                "-inf"
            } else {
                "inf"
            };
            return format!("{s:>w$}", w = self.pad_left + self.pad_right + 1);
        }
        if self.sci {
            // Every element shows `frac` digits: its own shortest ones when that many, else
            // digits computed (not zero-padded) beyond them, i.e. the exact value rounded
            // (Dragon4 with `min_digits`).
            let mut d = scientific(x, self.kind, self.cap);
            if d.digits.len() - 1 < self.frac {
                d = Digits::parse(d.neg, &format!("{:.p$e}", x.abs(), p = self.frac));
            }
            let (first, rest) = d.digits.split_at(1);
            let int = format!("{}{first}", if d.neg { "-" } else { "" });
            format!("{int:>l$}.{rest:0<r$}{}", exponent(d.exp, self.exp_digits), l = self.pad_left, r = self.frac)
        } else {
            let (int, frac) = positional(x, self.kind, self.cap);
            format!("{int:>l$}.{frac:<r$}", l = self.pad_left, r = self.pad_right)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_shortest_digits() {
        // np.float16(0.1) prints 0.1 (its value is 0.0999755859375).
        assert_eq!(scalar_str(f16::from_f32(0.1).to_f64(), FloatKind::F16), "0.1");
        assert_eq!(scalar_str(bf16::from_f32(0.1).to_f64(), FloatKind::BF16), "0.1");
        assert_eq!(scalar_str(65504.0, FloatKind::F16), "6.55e+04");
        // A tie between two shortest candidates goes to the even digit.
        assert_eq!(scalar_str(343126.125, FloatKind::F32), "343126.12");
        assert_eq!(scalar_str(1e16, FloatKind::F64), "1e+16");
        assert_eq!(scalar_str(-0.0, FloatKind::F32), "-0.0");
        assert_eq!(scalar_str(1.5e-5f32 as f64, FloatKind::F32), "1.5e-05");
    }
}

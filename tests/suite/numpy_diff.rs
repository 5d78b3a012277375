//! Differential test against NumPy: every case of `tests/fixtures/numpy_diff` (seeded
//! inputs and NumPy's answers, written by `tests/suite/numpy_diff_cases.py`) runs on every
//! device of `common::devices()` and is compared with NumPy's result. All mismatches are
//! collected and reported together (case, device, index, got, want).
//!
//! Regenerate the fixture after changing the cases (deterministic: a fixed seed):
//!
//! ```text
//! python3 tests/suite/numpy_diff_cases.py
//! ```
//!
//! Cases cover unary float ops on special values (±0, ±inf, NaN, subnormals, huge, tiny,
//! near 1) in f32 and f16, binary ops with broadcasting in f32/i32/i64/u32/bool (wrapping,
//! division by zero), strided views, reductions and scans over inner, middle, outer and
//! all axes, softmax, matmul, a few fused chains, conversions, and corners (NaN through
//! scans and arg-reductions, all -inf rows, 0 * inf, axes longer than a GPU workgroup,
//! integer pow and cumprod that wrap). The fixture's manifest
//! (`cases.txt`) names the op and its parameters; `run_op` maps it onto the public API.
//!
//! Comparison (see [`Tol`]): integer and bool results, and float results of correctly
//! rounded ops, must be bit-equal (NaN matching any NaN, zeros with NumPy's sign); the
//! rest within `abs + rel * |want|`, NaN matching NaN and infinities exact. The result's
//! dtype and shape must be the ones the fixture stores, which follow lazuli's documented
//! dtype rules where they differ from NumPy's (the generator says where).
//!
//! Documented device latitude applied on the GPU only (README, "GPU backend"): it may read
//! subnormal inputs as zeros of their sign (an element, float, bool or index, may match
//! the fixture's `NAME.want_ftz`, NumPy's answer for flushed inputs), may return a
//! subnormal result as zero, may give either zero for the max and min of +0 and -0 (NVIDIA
//! does: found by this test's first run there), and has no i64 (and no f16 without
//! `SHADER_F16`): those cases answer `Unsupported` there and are skipped for that device.

use std::collections::HashMap;
use std::path::PathBuf;

use crate::common;

use common::{devices, on};
use lazuli::{Array, DType, Device, Error, Result, SliceArg};

/// Tolerance of a float comparison: `|got - want| <= abs + rel * |want|`; `exact` asks
/// for equal bits instead (NaN matches any NaN).
#[derive(Clone, Copy, Debug)]
struct Tol {
    rel: f64,
    abs: f64,
    exact: bool,
}

/// The tolerance classes the manifest names. Values from `gpu_parity.rs` (which says why
/// each) and `prop_reference.rs`'s ulp bounds, as relative errors.
fn tolerance(name: &str) -> Option<Tol> {
    let t = |rel, abs| Some(Tol { rel, abs, exact: false });
    match name {
        // Integers, bools, and IEEE-exact float ops (add, mul, floor, comparisons...).
        "EXACT" => Some(Tol { rel: 0.0, abs: 0.0, exact: true }),
        // A few ulp of f32 (2^-23 relative is one ulp at worst): the GPU's division,
        // reciprocal and sqrt (WGSL allows 2.5 ulp for division) and rsqrt anywhere
        // (the CPU rounds sqrt, then 1/x).
        "ULP4" => t(4.0 * 2f64.powi(-23), 0.0),
        // exp, log, pow, tanh, erf... (gpu_parity's TRANS).
        "TRANS" => t(1e-4, 1e-5),
        // sin, cos, tan on the GPU: Vulkan bounds them only by an absolute 2^-11.
        "TRIG" => t(1e-4, 1e-3),
        // atan2 on the GPU: WGSL allows 4096 ulp.
        "ATAN2_GPU" => t(4096.0 * 2f64.powi(-23), 1e-6),
        // Reductions, scans, softmax and matmul in f32 (f32 accumulation orders).
        "RED" => t(1e-4, 1e-4),
        // float16 results: one or two f16 ulps.
        "HALF" => t(2e-3, 1e-3),
        _ => None,
    }
}

/// One line of the manifest.
struct Case {
    name: String,
    op: String,
    cpu: String,
    gpu: String,
    inputs: Vec<String>,
    params: HashMap<String, String>,
}

fn parse_manifest(text: &str) -> std::result::Result<Vec<Case>, String> {
    let mut cases = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut f = line.split_whitespace();
        let mut next = || f.next().map(str::to_string).ok_or_else(|| format!("cases.txt:{}: too few fields", n + 1));
        let (name, op, cpu, gpu, inputs) = (next()?, next()?, next()?, next()?, next()?);
        let mut params = HashMap::new();
        for kv in f {
            let (k, v) = kv.split_once('=').ok_or_else(|| format!("cases.txt:{}: {kv:?} is not key=value", n + 1))?;
            params.insert(k.to_string(), v.to_string());
        }
        let inputs = inputs.split(',').map(str::to_string).collect();
        cases.push(Case { name, op, cpu, gpu, inputs, params });
    }
    Ok(cases)
}

/// An array's host copy: what the fixture holds and what a device gives back.
struct Host {
    shape: Vec<usize>,
    dtype: DType,
    bytes: Vec<u8>,
}

impl Host {
    fn of(a: &Array) -> Result<Host> {
        Ok(Host { shape: a.shape().to_vec(), dtype: a.dtype(), bytes: a.to_bytes()? })
    }

    /// A new array of these bytes on the current stream.
    fn array(&self) -> Result<Array> {
        Array::from_bytes(&self.bytes, &self.shape, self.dtype)
    }

    /// The elements, as exact `f64`s (floats) or `i64`s (integers and bools).
    fn values(&self) -> Values {
        let b = &self.bytes;
        let s = self.dtype.size();
        let chunks = b.chunks_exact(s);
        match self.dtype {
            DType::F16 => Values::F(chunks.map(|c| lazuli::f16::from_le_bytes([c[0], c[1]]).to_f64()).collect()),
            DType::BF16 => Values::F(chunks.map(|c| lazuli::bf16::from_le_bytes([c[0], c[1]]).to_f64()).collect()),
            DType::F32 => Values::F(chunks.map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64).collect()),
            DType::F64 => Values::F(chunks.map(|c| f64::from_le_bytes(le8(c))).collect()),
            DType::I64 => Values::I(chunks.map(|c| i64::from_le_bytes(le8(c))).collect()),
            DType::I32 => Values::I(chunks.map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]) as i64).collect()),
            DType::U32 => Values::I(chunks.map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as i64).collect()),
            DType::Bool => Values::I(chunks.map(|c| i64::from(c[0] != 0)).collect()),
        }
    }
}

fn le8(c: &[u8]) -> [u8; 8] {
    let mut a = [0u8; 8];
    a.copy_from_slice(c);
    a
}

enum Values {
    F(Vec<f64>),
    I(Vec<i64>),
}

/// The smallest normal value of a float dtype (below it, values are subnormal).
fn min_normal(d: DType) -> f64 {
    match d {
        DType::F16 => 2f64.powi(-14),
        DType::F64 => f64::MIN_POSITIVE,
        // bf16 keeps f32's exponent range; integers have no subnormals (never asked).
        DType::F32 | DType::BF16 | DType::I32 | DType::U32 | DType::I64 | DType::Bool => f32::MIN_POSITIVE as f64,
    }
}

fn float_ok(g: f64, w: f64, tol: Tol) -> bool {
    if w.is_nan() {
        return g.is_nan();
    }
    if tol.exact {
        return g.to_bits() == w.to_bits();
    }
    if w.is_infinite() {
        return g == w;
    }
    if w == 0.0 && tol.abs == 0.0 {
        // A purely relative tolerance asks for zero itself, so the sign of zero counts.
        return g.to_bits() == w.to_bits();
    }
    (g - w).abs() <= tol.abs + tol.rel * w.abs()
}

/// Formats a float with its sign of zero visible.
fn show(v: f64) -> String {
    if v == 0.0 && v.is_sign_negative() { "-0".into() } else { format!("{v:e}") }
}

/// The documented GPU latitude a comparison grants (none on the CPU).
#[derive(Clone, Copy)]
struct Latitude {
    /// Subnormal inputs may read as zeros (an element may match the flushed-input answer)
    /// and subnormal results may come back as zero.
    flush: bool,
    /// A zero may match a wanted zero of the other sign: the max and min family, where an
    /// H100 gave +0 for `maximum(0.0, -0.0)` (the shader's `select(b, a, a > b)` asks for
    /// -0; IEEE 754 leaves it free; README, "GPU backend").
    either_zero: bool,
}

impl Latitude {
    fn of(gpu: bool, op: &str) -> Latitude {
        let max_min = matches!(op, "maximum" | "minimum" | "max" | "min" | "cummax" | "cummin");
        Latitude { flush: gpu, either_zero: gpu && max_min }
    }
}

/// Compares `got` with `want` (and, where `lat` allows, with the flushed-input answer
/// `ftz`), appending a line per mismatch (at most a few per case) to `out`.
fn compare(what: &str, got: &Host, want: &Host, ftz: Option<&Host>, tol: Tol, lat: Latitude, out: &mut Vec<String>) {
    if got.shape != want.shape || got.dtype != want.dtype {
        out.push(format!("{what}: got {:?} {:?}, want {:?} {:?}", got.dtype, got.shape, want.dtype, want.shape));
        return;
    }
    let mut bad = Vec::new();
    match (got.values(), want.values(), ftz.map(Host::values)) {
        (Values::F(g), Values::F(w), f) => {
            let tiny = min_normal(want.dtype);
            for (i, (&g, &w)) in g.iter().zip(&w).enumerate() {
                let flushed_out = lat.flush && g == 0.0 && w != 0.0 && w.abs() < tiny;
                let zero = lat.either_zero && g == 0.0 && w == 0.0;
                let flushed_in = match (&f, lat.flush) {
                    (Some(Values::F(f)), true) => float_ok(g, f[i], tol),
                    _ => false,
                };
                if !(float_ok(g, w, tol) || flushed_out || flushed_in || zero) {
                    bad.push(format!("[{i}] got {}, want {}", show(g), show(w)));
                }
            }
        }
        (Values::I(g), Values::I(w), f) => {
            for (i, (&g, &w)) in g.iter().zip(&w).enumerate() {
                // A bool or index computed from subnormal inputs read as zeros
                // (`logical_not`, comparisons, `argmax`): the flushed-input answer.
                let flushed_in = matches!((&f, lat.flush), (Some(Values::I(f)), true) if f[i] == g);
                if g != w && !flushed_in {
                    bad.push(format!("[{i}] got {g}, want {w}"));
                }
            }
        }
        _ => bad.push("dtype classes differ".into()),
    }
    if !bad.is_empty() {
        let n = bad.len();
        bad.truncate(4);
        let more = if n > 4 { format!(" (and {} more)", n - 4) } else { String::new() };
        out.push(format!("{what}: {}{more}", bad.join("; ")));
    }
}

fn bad_case(msg: String) -> Error {
    Error::invalid("numpy_diff", msg)
}

/// A comma-separated list of integers.
fn ints<T: std::str::FromStr>(s: &str) -> Result<Vec<T>> {
    s.split(',').map(|v| v.parse().map_err(|_| bad_case(format!("{v:?} in {s:?} is not an integer")))).collect()
}

/// Applies a view spec of the manifest (see numpy_diff_cases.py's `apply_view`).
fn view(mut x: Array, spec: &str) -> Result<Array> {
    for part in spec.split('|') {
        x = if part == "T" {
            x.transpose(&[])?
        } else if let Some(axes) = part.strip_prefix("t:") {
            x.transpose(&ints::<isize>(axes)?)?
        } else if let Some(shape) = part.strip_prefix("b:") {
            x.broadcast_to(&ints::<usize>(shape)?)?
        } else if let Some(axes) = part.strip_prefix("s:") {
            let mut args = Vec::new();
            for ax in axes.split(',') {
                // `start:stop` or `start:stop:step`, each part possibly empty.
                let mut p =
                    ax.split(':').map(|v| if v.is_empty() { Ok(None) } else { ints::<isize>(v).map(|v| Some(v[0])) });
                let mut part = || p.next().unwrap_or(Ok(None));
                let (lo, hi, step) = (part()?, part()?, part()?);
                args.push(SliceArg::new(lo, hi, step.unwrap_or(1)));
            }
            x.slice(&args)?
        } else {
            return Err(bad_case(format!("unknown view {part:?}")));
        };
    }
    Ok(x)
}

impl Case {
    fn param<T: std::str::FromStr>(&self, key: &str) -> Result<T> {
        let v = self.params.get(key).ok_or_else(|| bad_case(format!("{}: no {key}", self.name)))?;
        v.parse().map_err(|_| bad_case(format!("{}: {key}={v} does not parse", self.name)))
    }

    /// `axes` (`all`: every axis, lazuli's empty slice).
    fn axes(&self) -> Result<Vec<isize>> {
        match self.params.get("axes").map(String::as_str) {
            Some("all") => Ok(vec![]),
            Some(list) => ints(list),
            None => Err(bad_case(format!("{}: no axes", self.name))),
        }
    }

    fn flag(&self, key: &str) -> Result<bool> {
        Ok(self.param::<u8>(key)? != 0)
    }

    /// The case's op on `x` (the inputs, views applied) through the public API.
    fn run(&self, x: &[Array]) -> Result<Array> {
        let arg = |i: usize| x.get(i).ok_or_else(|| bad_case(format!("{}: needs input {i}", self.name)));
        let a = arg(0)?;
        let unary: Option<fn(&Array) -> Result<Array>> = match self.op.as_str() {
            "neg" => Some(Array::neg),
            "abs" => Some(Array::abs),
            "sign" => Some(Array::sign),
            "square" => Some(Array::square),
            "floor" => Some(Array::floor),
            "ceil" => Some(Array::ceil),
            "round" => Some(Array::round),
            "isnan" => Some(Array::isnan),
            "isinf" => Some(Array::isinf),
            "logical_not" => Some(Array::logical_not),
            "exp" => Some(Array::exp),
            "expm1" => Some(Array::expm1),
            "log" => Some(Array::log),
            "log1p" => Some(Array::log1p),
            "log2" => Some(Array::log2),
            "sqrt" => Some(Array::sqrt),
            "rsqrt" => Some(Array::rsqrt),
            "reciprocal" => Some(Array::reciprocal),
            "sin" => Some(Array::sin),
            "cos" => Some(Array::cos),
            "tan" => Some(Array::tan),
            "tanh" => Some(Array::tanh),
            "sigmoid" => Some(Array::sigmoid),
            "erf" => Some(Array::erf),
            "erfinv" => Some(Array::erfinv),
            _ => None,
        };
        if let Some(f) = unary {
            return f(a);
        }
        let binary: Option<fn(&Array, &Array) -> Result<Array>> = match self.op.as_str() {
            "add" => Some(|a, b| a.add(b)),
            "sub" => Some(|a, b| a.sub(b)),
            "mul" => Some(|a, b| a.mul(b)),
            "div" => Some(|a, b| a.div(b)),
            "pow" => Some(|a, b| a.pow(b)),
            "maximum" => Some(|a, b| a.maximum(b)),
            "minimum" => Some(|a, b| a.minimum(b)),
            "floor_divide" => Some(|a, b| a.floor_divide(b)),
            "remainder" => Some(|a, b| a.remainder(b)),
            "eq" => Some(|a, b| a.eq(b)),
            "ne" => Some(|a, b| a.ne(b)),
            "lt" => Some(|a, b| a.lt(b)),
            "le" => Some(|a, b| a.le(b)),
            "gt" => Some(|a, b| a.gt(b)),
            "ge" => Some(|a, b| a.ge(b)),
            "atan2" => Some(|a, b| a.atan2(b)),
            "logical_and" => Some(|a, b| a.logical_and(b)),
            "logical_or" => Some(|a, b| a.logical_or(b)),
            "logical_xor" => Some(|a, b| a.logical_xor(b)),
            "matmul" => Some(|a, b| a.matmul(b)),
            "chain_add_sub" => Some(|y, b| y.add(b)?.sub(b)),
            _ => None,
        };
        if let Some(f) = binary {
            return f(a, arg(1)?);
        }
        match self.op.as_str() {
            "sum" => a.sum(&self.axes()?, self.flag("keepdims")?),
            "prod" => a.prod(&self.axes()?, self.flag("keepdims")?),
            "mean" => a.mean(&self.axes()?, self.flag("keepdims")?),
            "max" => a.max(&self.axes()?, self.flag("keepdims")?),
            "min" => a.min(&self.axes()?, self.flag("keepdims")?),
            "any" => a.any(&self.axes()?, self.flag("keepdims")?),
            "all" => a.all(&self.axes()?, self.flag("keepdims")?),
            "logsumexp" => a.logsumexp(&self.axes()?, self.flag("keepdims")?),
            "var" => a.var(&self.axes()?, self.flag("keepdims")?, self.param("ddof")?),
            "argmax" => a.argmax(self.param("axis")?, self.flag("keepdims")?),
            "argmin" => a.argmin(self.param("axis")?, self.flag("keepdims")?),
            "cumsum" => a.cumsum(self.param("axis")?, self.flag("reverse")?),
            "cumprod" => a.cumprod(self.param("axis")?, self.flag("reverse")?),
            "cummax" => a.cummax(self.param("axis")?, self.flag("reverse")?),
            "cummin" => a.cummin(self.param("axis")?, self.flag("reverse")?),
            "astype_i32" => a.astype(DType::I32),
            "astype_u32" => a.astype(DType::U32),
            "astype_f16" => a.astype(DType::F16),
            "astype_f32" => a.astype(DType::F32),
            "astype_bool" => a.astype(DType::Bool),
            "softmax" => a.softmax(&self.axes()?),
            "where" => lazuli::where_(a, arg(1)?, arg(2)?),
            "chain_tanh_exp" => a.mul(arg(1)?)?.add(arg(2)?)?.exp()?.mul(0.5)?.tanh(),
            "chain_mul_add" => a.mul(arg(1)?)?.add(arg(2)?),
            "chain_reduce" => {
                a.exp()?.mul(2.0)?.sum(&[1], false)?.sub(&a.slice(&[SliceArg::all(), SliceArg::Index(0)])?)
            }
            "chain_predicates" => {
                let nan = lazuli::where_(&a.isnan()?, 1.0f32, 0.0f32)?;
                a.relu()?.sqrt()?.mul(&a.sign()?)?.add(&nan)
            }
            op => Err(bad_case(format!("{}: unknown op {op:?}", self.name))),
        }
    }

    /// Uploads the inputs to the current stream, applies the views, runs the op and
    /// reads the result back.
    fn eval(&self, fixture: &HashMap<String, Host>) -> Result<Host> {
        let mut x = Vec::new();
        for (i, key) in self.inputs.iter().enumerate() {
            let h = fixture.get(key).ok_or_else(|| bad_case(format!("{}: no input {key}", self.name)))?;
            let a = h.array()?;
            x.push(match self.params.get(&format!("v{i}")) {
                Some(spec) => view(a, spec)?,
                None => a,
            });
        }
        Host::of(&self.run(&x)?)
    }
}

/// The fixture's arrays by name, read with lazuli's own npz loader.
fn load_fixture() -> std::result::Result<(Vec<Case>, HashMap<String, Host>), String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/numpy_diff");
    let text = std::fs::read_to_string(dir.join("cases.txt")).map_err(|e| format!("cases.txt: {e}"))?;
    let cases = parse_manifest(&text)?;
    let named = lazuli::io::load_npz(dir.join("cases.npz")).map_err(|e| format!("cases.npz: {e}"))?;
    let mut arrays = HashMap::new();
    for (name, a) in named {
        let h = Host::of(&a).map_err(|e| format!("{name}: {e}"))?;
        arrays.insert(name, h);
    }
    Ok((cases, arrays))
}

#[test]
fn numpy_diff() {
    let (cases, fixture) = match load_fixture() {
        Ok(f) => f,
        Err(e) => panic!("numpy_diff: cannot read the fixture: {e}"),
    };
    let mut failures = Vec::new();
    for dev in devices() {
        let gpu = dev != Device::cpu();
        let (mut ran, mut skipped) = (0, 0);
        let start = std::time::Instant::now();
        for c in &cases {
            let what = format!("{} ({}) on {dev}", c.name, c.op);
            let tol_name = if gpu { &c.gpu } else { &c.cpu };
            let Some(tol) = tolerance(tol_name) else {
                failures.push(format!("{what}: unknown tolerance {tol_name:?}"));
                continue;
            };
            let Some(want) = fixture.get(&format!("{}.want", c.name)) else {
                failures.push(format!("{what}: the fixture has no {}.want", c.name));
                continue;
            };
            let ftz = fixture.get(&format!("{}.want_ftz", c.name));
            match on(dev, || c.eval(&fixture)) {
                Ok(got) => {
                    ran += 1;
                    compare(&what, &got, want, ftz, tol, Latitude::of(gpu, &c.op), &mut failures);
                }
                // The GPU has no i64, and f16 only with SHADER_F16: it says `Unsupported`.
                Err(e) if gpu && unsupported_here(&e, c, &fixture) => skipped += 1,
                Err(e) => failures.push(format!("{what}: error: {e}")),
            }
        }
        eprintln!("numpy_diff on {dev}: {ran} cases in {:.2?}, {skipped} skipped (unsupported dtype)", start.elapsed());
    }
    assert!(failures.is_empty(), "{} mismatches with NumPy:\n{}", failures.len(), failures.join("\n"));
}

/// True when `e` is the GPU's documented refusal of a dtype the case uses (i64 always,
/// f16 without SHADER_F16).
fn unsupported_here(e: &Error, c: &Case, fixture: &HashMap<String, Host>) -> bool {
    let refused = matches!(e.root_cause(), Error::Unsupported { backend, .. } if backend == "gpu");
    let dtypes = c.inputs.iter().filter_map(|k| fixture.get(k)).map(|h| h.dtype);
    refused && dtypes.into_iter().any(|d| matches!(d, DType::I64 | DType::F16))
}

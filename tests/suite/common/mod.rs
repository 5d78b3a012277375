//! Shared test helpers: which devices exist, running code on a device, comparing results.
//!
//! GPU availability rule: without an adapter, each GPU test prints one line
//! `skipping gpu tests: <reason>` and passes, unless `LAZULI_REQUIRE_GPU=1`, in which
//! case it fails.
#![allow(dead_code)]

use lazuli::{Device, Result};

/// True if `gpu(0)` can be used. Otherwise prints why (one line) and returns false, or
/// panics when `LAZULI_REQUIRE_GPU=1`.
pub fn gpu_available() -> bool {
    // A build without the `gpu` feature has no GPU by construction, whatever
    // LAZULI_REQUIRE_GPU asks (CI sets it for the whole run, CPU-only builds included).
    if cfg!(not(feature = "gpu")) {
        return false;
    }
    match lazuli::default_stream(Device::gpu(0)) {
        Ok(_) => true,
        Err(e) => {
            if std::env::var("LAZULI_REQUIRE_GPU").is_ok_and(|v| v == "1") {
                panic!("LAZULI_REQUIRE_GPU=1 but the GPU is unavailable: {e}");
            }
            // One line per test (each test runs on its own thread), however often asked.
            thread_local!(static SAID: std::cell::Cell<bool> = const { std::cell::Cell::new(false) });
            if !SAID.with(|s| s.replace(true)) {
                eprintln!("skipping gpu tests: {e}");
            }
            false
        }
    }
}

/// The CPU, plus `gpu(0)` when available (see [`gpu_available`]).
pub fn devices() -> Vec<Device> {
    let mut v = vec![Device::cpu()];
    if gpu_available() {
        v.push(Device::gpu(0));
    }
    v
}

/// Runs `f` with `device`'s default stream as the current stream.
pub fn on<T>(device: Device, f: impl FnOnce() -> Result<T>) -> Result<T> {
    lazuli::with_stream(&lazuli::default_stream(device)?, f)
}

/// Asserts `|got - want| <= abs + rel * |want|` elementwise (in `T`, f32 or f64); NaNs
/// must match NaNs and infinities must match exactly.
pub fn assert_close<T: num_traits::Float + std::fmt::Display>(what: &str, got: &[T], want: &[T], rel: T, abs: T) {
    assert_eq!(got.len(), want.len(), "{what}: length {} vs {}", got.len(), want.len());
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = if w.is_nan() {
            g.is_nan()
        } else if w.is_infinite() {
            g == w
        } else {
            (g - w).abs() <= abs + rel * w.abs()
        };
        assert!(ok, "{what}: element {i}: got {g}, want {w} (rel {rel}, abs {abs})");
    }
}

/// Deterministic pseudo-random values in `[lo, hi)` (no dependence on lazuli's RNG).
pub fn values(n: usize, seed: u64, lo: f32, hi: f32) -> Vec<f32> {
    let mut s = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let u = (s >> 40) as f32 / (1u64 << 24) as f32;
            lo + (hi - lo) * u
        })
        .collect()
}

// Naive index arithmetic for references (independent of the library's own shape code).

/// Number of elements of `shape`.
pub fn numel(s: &[usize]) -> usize {
    s.iter().product()
}

/// Row-major multi-index of flat index `i`.
pub fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for ax in (0..shape.len()).rev() {
        idx[ax] = i % shape[ax];
        i /= shape[ax];
    }
    idx
}

/// Row-major flat index of multi-index `idx`.
pub fn ravel(idx: &[usize], shape: &[usize]) -> usize {
    idx.iter().zip(shape).fold(0, |acc, (&i, &d)| acc * d + i)
}

/// NumPy broadcasting of two shapes, or `None` if incompatible.
pub fn naive_broadcast(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let n = a.len().max(b.len());
    let pad = |s: &[usize]| -> Vec<usize> { std::iter::repeat_n(1, n - s.len()).chain(s.iter().copied()).collect() };
    let (pa, pb) = (pad(a), pad(b));
    pa.iter()
        .zip(&pb)
        .map(|(&x, &y)| match (x, y) {
            _ if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect()
}

/// Flat index into an operand of `shape` read at output index `out_idx` under broadcasting.
pub fn bcast_index(shape: &[usize], out_idx: &[usize]) -> usize {
    let lead = out_idx.len() - shape.len();
    let idx: Vec<usize> = shape.iter().enumerate().map(|(i, &d)| if d == 1 { 0 } else { out_idx[lead + i] }).collect();
    ravel(&idx, shape)
}

/// The spacing of f32 values at `|x|` (as f64).
pub fn ulp32(x: f64) -> f64 {
    let a = x.abs();
    if a < f32::MIN_POSITIVE as f64 {
        return 2f64.powi(-149);
    }
    2f64.powi(a.log2().floor() as i32 - 23)
}

/// Worst error in ulps ([`ulp32`] of the f64 reference) of `got` against the f64 `want`
/// of each argument, and the argument where it falls; panics on a wrong special value.
pub fn worst_ulps(what: &str, x: &[f32], got: &[f32], want: impl Fn(f64) -> f64) -> (f64, f32) {
    let mut worst = (0.0, 0.0f32);
    for (&a, &g) in x.iter().zip(got) {
        let w = want(a as f64);
        if w.is_nan() {
            assert!(g.is_nan(), "{what}({a:e}) = {g:e}, want NaN");
            continue;
        }
        let w32 = w as f32;
        if w32.is_infinite() {
            // Beyond f32's range: the infinity, or the largest finite value within 1 ulp.
            let ok = g == w32 || (g.abs() == f32::MAX && (w.abs() - f32::MAX as f64) <= ulp32(f32::MAX as f64));
            assert!(ok, "{what}({a:e}) = {g:e}, want {w:e}");
            continue;
        }
        assert!(g.is_finite(), "{what}({a:e}) = {g:e}, want {w:e}");
        let e = (g as f64 - w).abs() / ulp32(w);
        if e > worst.0 {
            worst = (e, a);
        }
    }
    worst
}

//! The CPU's f32 transcendental functions (src/backend/cpu/math.rs) against f64 over the
//! whole f32 range: every 251st bit pattern of each sign (17 million arguments per
//! function, subnormals, ±0, ±inf and NaN included), plus dense sweeps where the
//! functions change formula. Bound: 1 ulp of the f32 result, what math.rs states for
//! every function; the subnormal spacing below the smallest normal.

use crate::common::{on, worst_ulps};
use lazuli::{Array, Device, Result};

/// Worst error in ulps of `got` against the f64 `want` of each argument, at most 1;
/// panics on a wrong special value.
fn max_ulps(what: &str, x: &[f32], got: &[f32], want: impl Fn(f64) -> f64) -> f64 {
    let (worst, at) = worst_ulps(what, x, got, want);
    assert!(worst <= 1.0, "{what}: {worst} ulp at x = {at:e}");
    worst
}

/// Every 251st f32 bit pattern of both signs, then the specials, then dense sweeps of
/// [-2, 2] and around the formula boundaries (tanh's: 0.55, 9.011 where it starts to round
/// to ±1, 10 where it clamps).
fn arguments() -> Vec<f32> {
    let mut v: Vec<f32> =
        (0..(1u32 << 31)).step_by(251).flat_map(|b| [f32::from_bits(b), -f32::from_bits(b)]).collect();
    v.extend([0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, f32::MIN_POSITIVE, 1e-45, -1e-45]);
    v.extend((-200_000..=200_000).map(|i| i as f32 * 1e-5));
    for c in [0.25f32, 0.5, 0.55, 1.0, 9.011, 10.0, 88.0, 1.0 / 1048576.0] {
        let b = c.to_bits();
        v.extend((b - 2000..b + 2000).flat_map(|b| [f32::from_bits(b), -f32::from_bits(b)]));
    }
    v
}

fn run(x: &[f32], f: impl Fn(&Array) -> Result<Array>) -> Vec<f32> {
    on(Device::cpu(), || f(&Array::from_slice(x, &[x.len()])?)?.to_vec::<f32>()).unwrap()
}

/// A function's name, its lazuli op and its f64 reference.
type Case<'a> = (&'a str, fn(&Array) -> Result<Array>, &'a dyn Fn(f64) -> f64);

#[test]
fn f32_transcendentals_within_1_ulp_of_f64() {
    let x = arguments();
    let sig = |t: f64| 1.0 / (1.0 + (-t).exp());
    let cases: [Case; 9] = [
        ("exp", |a| a.exp(), &f64::exp),
        ("expm1", |a| a.expm1(), &f64::exp_m1),
        ("log", |a| a.log(), &f64::ln),
        ("log1p", |a| a.log1p(), &f64::ln_1p),
        ("log2", |a| a.log2(), &f64::log2),
        ("tanh", |a| a.tanh(), &f64::tanh),
        ("sigmoid", |a| a.sigmoid(), &sig),
        ("sin", |a| a.sin(), &f64::sin),
        ("cos", |a| a.cos(), &f64::cos),
    ];
    for (name, op, want) in cases {
        max_ulps(name, &x, &run(&x, op), want);
    }
}

#[test]
fn f32_special_values_and_signs() {
    let x = [0.0f32, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -1.0];
    let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
    let nan = f32::NAN.to_bits();
    let e = bits(run(&x, |a| a.exp()));
    assert_eq!(&e[..4], &[1f32.to_bits(), 1f32.to_bits(), f32::INFINITY.to_bits(), 0]);
    assert!(f32::from_bits(e[4]).is_nan());
    // Odd functions keep the sign of zero.
    for (name, op) in
        [("tanh", Array::tanh as fn(&Array) -> Result<Array>), ("sin", Array::sin), ("expm1", Array::expm1)]
    {
        let r = run(&x[..2], op);
        assert_eq!(bits(r), vec![0, (-0.0f32).to_bits()], "{name}");
    }
    assert_eq!(run(&x[2..4], |a| a.tanh()), vec![1.0, -1.0]);
    // Exactly ±1 once tanh rounds there (above 9.011), and x itself where tanh x rounds to x.
    let big = [9.02f32, -9.02, 10.0, 20.0, -1e30, f32::MAX];
    assert_eq!(run(&big, |a| a.tanh()), big.map(f32::signum));
    let tiny = [1e-5f32, -3e-20, f32::MIN_POSITIVE, -1e-45];
    assert_eq!(bits(run(&tiny, |a| a.tanh())), bits(tiny.to_vec()));
    let l = run(&x, |a| a.log());
    assert_eq!(&l[..3], &[f32::NEG_INFINITY, f32::NEG_INFINITY, f32::INFINITY]);
    assert!(l[3].is_nan() && l[4].is_nan() && l[5].is_nan());
    let l1 = run(&[-1.0, -2.0, f32::INFINITY], |a| a.log1p());
    assert_eq!(l1[0], f32::NEG_INFINITY);
    assert!(l1[1].is_nan());
    assert_eq!(l1[2], f32::INFINITY);
    assert!(bits(run(&x[2..5], |a| a.sin())).iter().all(|&b| f32::from_bits(b).is_nan() || b == nan));
}

/// pow against f64 over a grid of positive bases (every 4099th bit pattern) and
/// exponents, and C99's special cases (libm's, for zeros, negatives and infinities).
#[test]
fn f32_pow_within_1_ulp_and_c99_cases() {
    let bases: Vec<f32> = (1..0x7f80_0000u32).step_by(4099).map(f32::from_bits).collect();
    for y in [0.5f32, -0.5, 1.0, 2.0, 3.0, -3.0, 0.1, 7.5, -40.0, 100.0, 1e-3] {
        let ys = vec![y; bases.len()];
        let got = on(Device::cpu(), || {
            Array::from_slice(&bases, &[bases.len()])?.pow(&Array::from_slice(&ys, &[ys.len()])?)?.to_vec::<f32>()
        })
        .unwrap();
        max_ulps(&format!("pow(x, {y})"), &bases, &got, |x| x.powf(y as f64));
    }
    let inf = f32::INFINITY;
    let a = [-2.0f32, -2.0, 0.0, -0.0, f32::NAN, 1.0, -1.0, inf, 0.5, 2.0];
    let b = [3.0f32, 0.5, -1.0, 3.0, 0.0, f32::NAN, inf, -2.0, inf, -inf];
    let got = on(Device::cpu(), || Array::from_slice(&a, &[10])?.pow(&Array::from_slice(&b, &[10])?)?.to_vec::<f32>())
        .unwrap();
    let want = [-8.0f32, f32::NAN, inf, -0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0];
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()), "pow({}, {}) = {g}, want {w}", a[i], b[i]);
    }
}

//! Training ops (`src/ops/nn.rs`: log_softmax, logaddexp, softplus, silu, leaky_relu,
//! one_hot, cross_entropy, mse, dropout; and `Array::t`) against NumPy/SciPy.
//!
//! f32 cases run on every device (`common::devices`: the CPU, and `gpu(0)` when an adapter
//! exists, else one skip line); f64 cases run on the CPU, as the GPU has no f64.
// Expected values are NumPy's output pasted as literals, whatever constants they resemble.
#![allow(clippy::approx_constant, clippy::excessive_precision)]

use crate::common;

use common::{devices, on};
use lazuli::{Array, DType, Device, Error, Reduction, cross_entropy, dropout, logaddexp, mse, one_hot, random};

type R = lazuli::Result<()>;

const INF: f32 = f32::INFINITY;
const NAN: f32 = f32::NAN;

/// Runs `f` with each device's default stream current, naming the device on failure.
fn each_device(f: impl Fn(Device) -> R) {
    for dev in devices() {
        on(dev, || f(dev)).unwrap_or_else(|e| panic!("on {dev}: {e}"));
    }
}

/// f32 closeness: tight on the CPU; on the GPU, Vulkan's transcendental precision
/// (~3 ulp, absolute 2^-21 for log near 1).
fn close(dev: Device, what: &str, a: &Array, want: &[f32]) {
    assert_eq!(a.dtype(), DType::F32, "{what} on {dev}: dtype");
    let got = a.to_vec::<f32>().unwrap();
    let (rel, abs) = if dev == Device::cpu() { (1e-6, 1e-6) } else { (1e-4, 1e-5) };
    common::assert_close(&format!("{what} on {dev}"), &got, want, rel, abs);
}

/// f64 closeness (CPU only); NaN matches NaN, infinities exactly.
fn close64(what: &str, a: &Array, want: &[f64]) {
    assert_eq!(a.dtype(), DType::F64, "{what}: dtype");
    common::assert_close(what, &a.to_vec::<f64>().unwrap(), want, 1e-12, 1e-13);
}

fn f32s(v: &[f32], shape: &[usize]) -> Array {
    Array::from_slice(v, shape).unwrap()
}

fn f64s(v: &[f64], shape: &[usize]) -> Array {
    Array::from_slice(v, shape).unwrap()
}

#[test]
fn log_softmax_values() {
    each_device(|dev| {
        let x = f32s(&[1.0, 5.0, 2.0, 4.0, -3.0, 6.0], &[2, 3]);
        // scipy.special.log_softmax(x, axis=-1)
        let want = [-4.065884113311768, -0.06588390469551086, -3.0658838748931885];
        let want2 = [-2.1270368099212646, -9.127037048339844, -0.12703672051429749];
        let l = x.log_softmax(&[-1])?;
        assert_eq!(l.shape(), &[2, 3]);
        close(dev, "log_softmax(-1)", &l, &[want, want2].concat());
        // scipy.special.log_softmax(x, axis=0)
        let want = [
            -3.0485873222351074,
            -0.00033539868309162557,
            -4.0181498527526855,
            -0.04858733341097832,
            -8.000335693359375,
            -0.018149960786104202,
        ];
        close(dev, "log_softmax(0)", &x.log_softmax(&[0])?, &want);
        // scipy.special.log_softmax(x, axis=None): empty axes mean every axis.
        let want = [
            -5.424215793609619,
            -1.4242159128189087,
            -4.424215793609619,
            -2.424215793609619,
            -9.424216270446777,
            -0.4242159128189087,
        ];
        close(dev, "log_softmax(all)", &x.log_softmax(&[])?, &want);
        close(dev, "log_softmax(0, 1)", &x.log_softmax(&[1, 0])?, &want);
        // Large logits: scipy.special.log_softmax(np.float32([1000, 0, -1000]))
        close(dev, "large", &f32s(&[1000.0, 0.0, -1000.0], &[3]).log_softmax(&[0])?, &[0.0, -1000.0, -2000.0]);
        // scipy.special.log_softmax(np.float32([[0, -inf, 1], [-inf]*3, [inf, 0, 1]]), axis=-1)
        let x = f32s(&[0.0, -INF, 1.0, -INF, -INF, -INF, INF, 0.0, 1.0], &[3, 3]);
        let want = [-1.31326162815094, -INF, -0.31326165795326233, NAN, NAN, NAN, NAN, -INF, -INF];
        close(dev, "infinities", &x.log_softmax(&[-1])?, &want);
        // Integers compute in F32: scipy.special.log_softmax([1, 2, 3])
        let i = Array::from_slice(&[1i32, 2, 3], &[3])?;
        close(dev, "int", &i.log_softmax(&[0])?, &[-2.4076061248779297, -1.4076060056686401, -0.40760600566864014]);
        // An empty axis gives the (empty) input back.
        let e = lazuli::zeros(&[2, 0], DType::F32)?;
        assert_eq!(e.log_softmax(&[1])?.shape(), &[2, 0]);
        // exp(log_softmax) is softmax.
        let x = f32s(&common::values(40, 3, -5.0, 5.0), &[5, 8]);
        let got = x.log_softmax(&[1])?.exp()?;
        close(dev, "exp(log_softmax)", &got, &x.softmax(&[1])?.to_vec::<f32>()?);
        Ok(())
    });
}

#[test]
fn log_softmax_f64_and_errors() -> R {
    // scipy.special.log_softmax(np.array([0.1, -2.5, 3.25, 7.0]))
    let want = [-6.924302666439492, -9.524302666439493, -3.774302666439492, -0.024302666439491947];
    close64("log_softmax f64", &f64s(&[0.1, -2.5, 3.25, 7.0], &[4]).log_softmax(&[-1])?, &want);
    let x = f32s(&[1.0, 2.0], &[2]);
    assert!(matches!(x.log_softmax(&[1]), Err(Error::Axis { .. })));
    assert!(matches!(x.log_softmax(&[0, 0]), Err(Error::Invalid { .. })));
    Ok(())
}

#[test]
fn logaddexp_values() {
    each_device(|dev| {
        let a = f32s(&[0.0, 1.0, -2.0, 1000.0, -1000.0, -INF, INF, -INF, INF, NAN, 3.0, 5.0], &[12]);
        let b = f32s(&[0.0, 2.0, -2.0, 999.0, -1001.0, -INF, INF, 5.0, -INF, 1.0, NAN, -30.0], &[12]);
        // np.logaddexp(a, b) in float32
        let want = [
            0.6931471824645996,
            2.3132617473602295,
            -1.3068528175354004,
            1000.313232421875,
            -999.686767578125,
            -INF,
            INF,
            5.0,
            INF,
            NAN,
            NAN,
            5.0,
        ];
        close(dev, "logaddexp", &a.logaddexp(&b)?, &want);
        close(dev, "logaddexp swapped", &logaddexp(&b, &a)?, &want);
        // np.logaddexp(np.float32([[0], [1]]), np.float32([-1, 0, 2]))
        let r = logaddexp(f32s(&[0.0, 1.0], &[2, 1]), f32s(&[-1.0, 0.0, 2.0], &[3]))?;
        assert_eq!(r.shape(), &[2, 3]);
        let want = [
            0.3132616877555847,
            0.6931471824645996,
            2.1269280910491943,
            1.1269279718399048,
            1.3132617473602295,
            2.3132617473602295,
        ];
        close(dev, "broadcast", &r, &want);
        // Integer arrays and scalars give F32: np.logaddexp(np.float32([1, 2]), 3)
        let i = Array::from_slice(&[1i32, 2], &[2])?;
        close(dev, "int", &i.logaddexp(3)?, &[3.1269280910491943, 3.3132617473602295]);
        // Two scalars: np.logaddexp(0.0, 0.0)
        let s = logaddexp(0.0f32, 0.0f32)?;
        assert_eq!(s.shape(), &[] as &[usize]);
        close(dev, "scalars", &s, &[0.6931471824645996]);
        Ok(())
    });
}

#[test]
fn logaddexp_f64_and_errors() -> R {
    // np.logaddexp([0.5, -700., 30.], [0.25, -701., -30.])
    let a = f64s(&[0.5, -700.0, 30.0, f64::NEG_INFINITY], &[4]);
    let b = f64s(&[0.25, -701.0, -30.0, f64::NEG_INFINITY], &[4]);
    let want = [1.0759394198788437, -699.6867383124818, 30.0, f64::NEG_INFINITY];
    close64("logaddexp f64", &a.logaddexp(&b)?, &want);
    // A float32 scalar next to a float64 array keeps float64.
    assert_eq!(a.logaddexp(1.0f32)?.dtype(), DType::F64);
    let r = logaddexp(f32s(&[1.0, 2.0], &[2]), f32s(&[1.0, 2.0, 3.0], &[3]));
    assert!(matches!(r, Err(Error::Shape { op: "logaddexp", .. })), "{r:?}");
    Ok(())
}

#[test]
fn activations() {
    each_device(|dev| {
        let x = f32s(&[-100.0, -20.0, -1.0, 0.0, 1.0, 20.0, 100.0], &[7]);
        // np.logaddexp(np.float32([-100, -20, -1, 0, 1, 20, 100]), np.float32(0))
        let want = [
            3.783505853677006e-44,
            2.06115369216775e-09,
            0.3132616877555847,
            0.6931471824645996,
            1.3132617473602295,
            20.0,
            100.0,
        ];
        close(dev, "softplus", &x.softplus()?, &want);
        let x = f32s(&[-5.0, -1.0, 0.0, 0.5, 2.0, 10.0], &[2, 3]);
        // v * scipy.special.expit(v) in float32
        let want =
            [-0.033464252948760986, -0.2689414322376251, 0.0, 0.3112296760082245, 1.7615940570831299, 9.99954605102539];
        let s = x.silu()?;
        assert_eq!(s.shape(), &[2, 3]);
        close(dev, "silu", &s, &want);
        // np.where(v > 0, v, v * np.float32(0.01))
        let want = [-0.04999999701976776, -0.009999999776482582, 0.0, 0.5, 2.0, 10.0];
        close(dev, "leaky_relu", &x.leaky_relu(0.01)?, &want);
        // Integer input computes in F32: np.logaddexp([-1, 0, 3], 0)
        let i = Array::from_slice(&[-1i32, 0, 3], &[3])?;
        close(dev, "softplus int", &i.softplus()?, &[0.3132616877555847, 0.6931471824645996, 3.0485873222351074]);
        close(dev, "leaky_relu int", &i.leaky_relu(0.5)?, &[-0.5, 0.0, 3.0]);
        close(dev, "silu int", &i.silu()?, &[-0.2689414322376251, 0.0, 2.857722282409668]);
        Ok(())
    });
}

#[test]
fn activations_f64_and_errors() -> R {
    let x = f64s(&[-1000.0, -100.0, -1.0, 0.0, 0.5, 100.0, 1000.0], &[7]);
    // np.logaddexp(x, 0.)
    let want = [0.0, 3.720075976020836e-44, 0.31326168751822286, 0.6931471805599453, 0.9740769841801067, 100.0, 1000.0];
    close64("softplus f64", &x.softplus()?, &want);
    let v = f64s(&[-5.0, -1.0, 0.0, 0.5, 2.0, 10.0], &[6]);
    // v * scipy.special.expit(v)
    let want =
        [-0.03346425462142428, -0.2689414213699951, 0.0, 0.3112296656009273, 1.7615941559557646, 9.999546021312977];
    close64("silu f64", &v.silu()?, &want);
    // np.where(v > 0, v, v * 0.2)
    close64("leaky_relu f64", &v.leaky_relu(0.2)?, &[-1.0, -0.2, 0.0, 0.5, 2.0, 10.0]);
    assert!(matches!(v.leaky_relu(f64::NAN), Err(Error::Invalid { .. })));
    assert!(matches!(v.leaky_relu(f64::INFINITY), Err(Error::Invalid { .. })));
    Ok(())
}

#[test]
fn transpose_t() {
    each_device(|_| {
        let v: Vec<i32> = (0..24).collect();
        let a = Array::from_slice(&v, &[2, 3, 4])?;
        let t = a.t()?;
        assert_eq!(t.shape(), &[4, 3, 2]);
        // np.arange(24).reshape(2, 3, 4).T.ravel()[:8]
        assert_eq!(&t.to_vec::<i32>()?[..8], &[0, 12, 4, 16, 8, 20, 1, 13]);
        let m = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
        assert_eq!(m.t()?.to_vec::<f32>()?, vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        assert_eq!(m.t()?.t()?.to_vec::<f32>()?, m.to_vec::<f32>()?);
        let r = Array::from_slice(&[1.0f32, 2.0], &[2])?;
        assert_eq!((r.t()?.shape(), r.t()?.to_vec::<f32>()?), (&[2usize][..], vec![1.0, 2.0]));
        let s = Array::scalar(3.0f32)?;
        assert_eq!(s.t()?.item::<f32>()?, 3.0);
        Ok(())
    });
}

#[test]
fn one_hot_values() {
    each_device(|_| {
        let i = Array::from_slice(&[0i32, 2, 3, -1], &[2, 2])?;
        // Out-of-range (3) and negative (-1) indices give all-zero rows.
        let h = one_hot(&i, 3, DType::F32)?;
        assert_eq!(h.shape(), &[2, 2, 3]);
        assert_eq!(h.to_vec::<f32>()?, vec![1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        let h = one_hot(&i, 4, DType::I32)?;
        assert_eq!(h.dtype(), DType::I32);
        assert_eq!(h.to_vec::<i32>()?, vec![1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0]);
        let u = Array::from_slice(&[1u32, 0], &[2])?;
        assert_eq!(one_hot(&u, 2, DType::Bool)?.to_vec::<bool>()?, vec![false, true, true, false]);
        // A 0-d index gives one row; zero classes give empty rows.
        let s = Array::scalar(1i32)?;
        assert_eq!(one_hot(&s, 2, DType::F32)?.to_vec::<f32>()?, vec![0.0, 1.0]);
        assert_eq!(one_hot(&i, 0, DType::F32)?.shape(), &[2, 2, 0]);
        Ok(())
    });
}

#[test]
fn one_hot_i64_and_errors() -> R {
    // An int64 index beyond int32 must not wrap into range.
    let i = Array::from_slice(&[1i64, (1i64 << 32) + 1], &[2])?;
    assert_eq!(one_hot(&i, 2, DType::F32)?.to_vec::<f32>()?, vec![0.0, 1.0, 0.0, 0.0]);
    let f = f32s(&[0.0, 1.0], &[2]);
    assert!(matches!(one_hot(&f, 2, DType::F32), Err(Error::DType { dtype: DType::F32, .. })));
    let b = Array::from_slice(&[true, false], &[2])?;
    assert!(matches!(one_hot(&b, 2, DType::F32), Err(Error::DType { dtype: DType::Bool, .. })));
    // Too many classes: a size error under this op's name.
    let e = one_hot(&i, usize::MAX, DType::F32).unwrap_err();
    assert!(matches!(&e, Error::Shape { op: "one_hot", .. }), "{e}");
    Ok(())
}

#[test]
fn cross_entropy_values() {
    each_device(|dev| {
        // Large logits and a masked (-inf) class next to an ordinary one.
        let logits = f32s(&[1.0, 2.0, 3.0, 1000.0, 0.0, -1000.0, 0.0, -INF, 2.0, -1.0, -1.0, -1.0], &[4, 3]);
        let labels = Array::from_slice(&[2i32, 1, 0, 1], &[4])?;
        // -np.take_along_axis(scipy.special.log_softmax(logits, -1), labels[:, None], -1)[:, 0]
        let want = [0.40760600566864014, 1000.0, 2.1269280910491943, 1.0986123085021973];
        let l = cross_entropy(&logits, &labels, Reduction::None)?;
        assert_eq!(l.shape(), &[4]);
        close(dev, "ce none", &l, &want);
        // ... .mean(), .sum() in float32
        let m = cross_entropy(&logits, &labels, Reduction::Mean)?;
        assert_eq!(m.shape(), &[] as &[usize]);
        close(dev, "ce mean", &m, &[250.9083]);
        close(dev, "ce sum", &cross_entropy(&logits, &labels, Reduction::Sum)?, &[1003.6332]);
        // uint32 labels and a batch of rank 2:
        // L = np.arange(12, dtype=np.float32).reshape(2, 2, 3) * 0.5 - 2, labels [[0, 2], [1, 1]]
        let v: Vec<f32> = (0..12).map(|i| i as f32 * 0.5 - 2.0).collect();
        let logits = f32s(&v, &[2, 2, 3]);
        let labels = Array::from_slice(&[0u32, 2, 1, 1], &[2, 2])?;
        let l = cross_entropy(&logits, &labels, Reduction::None)?;
        assert_eq!(l.shape(), &[2, 2]);
        close(dev, "ce rank 3", &l, &[1.680269718170166, 0.6802696585655212, 1.180269718170166, 1.180269718170166]);
        close(dev, "ce rank 3 mean", &cross_entropy(&logits, &labels, Reduction::Mean)?, &[1.1802697]);
        Ok(())
    });
}

#[test]
fn cross_entropy_f64_and_errors() -> R {
    let logits = f64s(&[0.3, -1.2, 2.5, 0.0, 10.0, 20.0, 30.0, 40.0], &[2, 4]);
    let labels = Array::from_slice(&[3i64, 0], &[2])?;
    // -np.take_along_axis(scipy.special.log_softmax(logits, -1), labels[:, None], -1)[:, 0]
    close64("ce f64", &cross_entropy(&logits, &labels, Reduction::None)?, &[2.69689130355935, 30.00004540096037]);
    close64("ce f64 mean", &cross_entropy(&logits, &labels, Reduction::Mean)?, &[16.34846835225986]);
    close64("ce f64 sum", &cross_entropy(&logits, &labels, Reduction::Sum)?, &[32.69693670451972]);
    assert_eq!(Reduction::default(), Reduction::Mean);

    let logits = f32s(&[0.0; 6], &[2, 3]);
    let shape_err = |r: lazuli::Result<Array>| matches!(r, Err(Error::Shape { op: "cross_entropy", .. }));
    // Labels of the wrong shape: one too many, the class axis kept, rank 0.
    assert!(shape_err(cross_entropy(&logits, &Array::from_slice(&[0i32, 1, 2], &[3])?, Reduction::Mean)));
    assert!(shape_err(cross_entropy(&logits, &Array::from_slice(&[0i32, 1], &[2, 1])?, Reduction::Mean)));
    assert!(shape_err(cross_entropy(&logits, &Array::scalar(0i32)?, Reduction::Mean)));
    // Rank-0 logits, and logits with no classes.
    assert!(shape_err(cross_entropy(&Array::scalar(1.0f32)?, &Array::scalar(0i32)?, Reduction::Mean)));
    let empty = lazuli::zeros(&[2, 0], DType::F32)?;
    assert!(shape_err(cross_entropy(&empty, &Array::from_slice(&[0i32, 0], &[2])?, Reduction::Mean)));
    // Float or bool labels, integer logits.
    let r = cross_entropy(&logits, &f32s(&[0.0, 1.0], &[2]), Reduction::Mean);
    assert!(matches!(r, Err(Error::DType { dtype: DType::F32, .. })), "{r:?}");
    let r = cross_entropy(&logits, &Array::from_slice(&[true, false], &[2])?, Reduction::Mean);
    assert!(matches!(r, Err(Error::DType { dtype: DType::Bool, .. })), "{r:?}");
    let int_logits = Array::from_slice(&[0i32; 6], &[2, 3])?;
    let r = cross_entropy(&int_logits, &Array::from_slice(&[0i32, 1], &[2])?, Reduction::Mean);
    assert!(matches!(r, Err(Error::DType { dtype: DType::I32, .. })), "{r:?}");
    Ok(())
}

#[test]
fn mse_values() {
    each_device(|dev| {
        let p = f32s(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
        let t = f32s(&[0.5, 2.0, -1.0], &[3]);
        // (p - t) ** 2 and its .mean(), .sum()
        let l = mse(&p, &t, Reduction::None)?;
        assert_eq!(l.shape(), &[2, 3]);
        close(dev, "mse none", &l, &[0.25, 0.0, 16.0, 12.25, 9.0, 49.0]);
        close(dev, "mse mean", &mse(&p, &t, Reduction::Mean)?, &[14.416667]);
        close(dev, "mse sum", &mse(&t, &p, Reduction::Sum)?, &[86.5]);
        // Integers give F32: ((np.array([1, 2, 3]) - [3, 2, 0]) ** 2).mean()
        let pi = Array::from_slice(&[1i32, 2, 3], &[3])?;
        let ti = Array::from_slice(&[3i32, 2, 0], &[3])?;
        close(dev, "mse int", &mse(&pi, &ti, Reduction::Mean)?, &[4.333333333333333]);
        close(dev, "mse int none", &mse(&pi, &ti, Reduction::None)?, &[4.0, 0.0, 9.0]);
        Ok(())
    });
}

#[test]
fn mse_f64_and_errors() -> R {
    let p = f64s(&[0.1, 0.2, 0.3], &[3]);
    let t = f64s(&[0.0, 1.0], &[2, 1]);
    // (p - t) ** 2, .mean(), .sum() with p [3] and t [2, 1]
    let want = [0.010000000000000002, 0.04000000000000001, 0.09, 0.81, 0.6400000000000001, 0.48999999999999994];
    let l = mse(&p, &t, Reduction::None)?;
    assert_eq!(l.shape(), &[2, 3]);
    close64("mse f64", &l, &want);
    close64("mse f64 mean", &mse(&p, &t, Reduction::Mean)?, &[0.3466666666666667]);
    close64("mse f64 sum", &mse(&p, &t, Reduction::Sum)?, &[2.08]);
    // float32 with float64 promotes to float64.
    assert_eq!(mse(&f32s(&[1.0], &[1]), &p, Reduction::Mean)?.dtype(), DType::F64);
    let r = mse(&p, &f64s(&[0.0, 1.0], &[2]), Reduction::Mean);
    assert!(matches!(r, Err(Error::Shape { op: "mse", .. })), "{r:?}");
    Ok(())
}

#[test]
fn dropout_values() {
    let n = 10_000;
    let x: Vec<f32> = common::values(n, 11, 0.5, 1.5);
    let key = random::key(5).unwrap();
    // The same key gives the same output on every device: compare with the CPU's.
    let cpu = on(Device::cpu(), || dropout(&f32s(&x, &[100, 100]), &key, 0.25)?.to_vec::<f32>()).unwrap();
    each_device(|dev| {
        let xa = f32s(&x, &[100, 100]);
        let y = dropout(&xa, &key, 0.25)?;
        assert_eq!((y.shape(), y.dtype()), (&[100usize, 100][..], DType::F32));
        let got = y.to_vec::<f32>()?;
        // The mask is random::bernoulli(key, 1 - p); kept values are x / (1 - p).
        let keep = random::bernoulli(&key, 0.75, &[100, 100])?.to_vec::<bool>()?;
        for (i, ((&g, &k), &v)) in got.iter().zip(&keep).zip(&x).enumerate() {
            let want = if k { v / 0.75 } else { 0.0 };
            assert!((g - want).abs() <= 1e-6 * want.abs(), "dropout on {dev}: element {i}: got {g}, want {want}");
        }
        assert_eq!(got, cpu, "dropout on {dev} differs from the cpu");
        // About 1 - p of the elements survive (10^4 samples: sd 0.0043).
        let kept = keep.iter().filter(|&&k| k).count() as f64 / n as f64;
        assert!((kept - 0.75).abs() < 0.02, "kept fraction {kept}");
        // Inverted dropout keeps the mean: E[dropout(1)] = 1.
        let ones = lazuli::ones(&[n], DType::F32)?;
        let mean = dropout(&ones, &key, 0.5)?.mean(&[], false)?.item::<f32>()?;
        assert!((mean - 1.0).abs() < 0.04, "mean {mean}");
        // p = 0 is the identity; another key gives another mask.
        assert_eq!(dropout(&xa, &key, 0.0)?.to_vec::<f32>()?, x);
        assert_ne!(dropout(&xa, &random::key(6)?, 0.25)?.to_vec::<f32>()?, got);
        Ok(())
    });
}

#[test]
fn dropout_f64_and_errors() -> R {
    let key = random::key(1)?;
    let x = f64s(&[1.0, 2.0, 3.0, 4.0], &[4]);
    let y = dropout(&x, &key, 0.5)?.to_vec::<f64>()?;
    assert!(y.iter().zip([1.0, 2.0, 3.0, 4.0]).all(|(&g, v)| g == 0.0 || g == 2.0 * v), "{y:?}");
    for p in [1.0, -0.1, 1.5, f64::NAN] {
        assert!(matches!(dropout(&x, &key, p), Err(Error::Invalid { op: "dropout", .. })), "p = {p}");
    }
    let i = Array::from_slice(&[1i32, 2], &[2])?;
    assert!(matches!(dropout(&i, &key, 0.5), Err(Error::DType { dtype: DType::I32, .. })));
    let bad_key = Array::from_slice(&[1i32, 2], &[2])?;
    assert!(matches!(dropout(&x, &bad_key, 0.5), Err(Error::DType { .. })));
    // Empty input.
    assert_eq!(dropout(&lazuli::zeros(&[0, 3], DType::F32)?, &key, 0.5)?.shape(), &[0, 3]);
    Ok(())
}

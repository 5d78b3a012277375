//! A third-party backend plugs into the device layer without touching the crate: it runs
//! a handful of primitives, and everything else that has a decomposition runs through it.

use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use lazuli::backend::{Backend, Buffer, DeviceBuffer, Input, register_backend};
use lazuli::primitive::{BinaryOp, Meta, Primitive, UnaryOp};
use lazuli::shape::{StridedIter, broadcast_strides};
use lazuli::{Array, DType, Device, Error, Result, Stream};

/// A toy backend: f32 and bool (held as 0.0 / 1.0), a few primitives, counting its runs.
struct Toy {
    runs: AtomicUsize,
}

struct ToyBuf {
    dev: Device,
    dtype: DType,
    data: Vec<f32>,
}

impl DeviceBuffer for ToyBuf {
    fn device(&self) -> Device {
        self.dev
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

fn toy(b: &Buffer) -> &[f32] {
    &b.as_any().downcast_ref::<ToyBuf>().expect("a toy buffer").data
}

fn unsupported(msg: String) -> Error {
    Error::unsupported("toy", msg)
}

/// The primitives the toy has kernels for.
fn kernel_for(op: &Primitive) -> bool {
    use BinaryOp as B;
    use UnaryOp as U;
    match op {
        Primitive::Full(_) | Primitive::Select(_) | Primitive::Reshape(_) | Primitive::Copy(_) => true,
        Primitive::Unary(u) => matches!(u.op, U::Exp | U::Log | U::Sqrt | U::Sin | U::Cos | U::LogicalNot),
        Primitive::Binary(b) => matches!(b.op, B::Add | B::Mul | B::Div | B::Lt | B::Eq | B::LogicalOr),
        _ => false,
    }
}

/// `f` over inputs broadcast to `out`.
fn zip(inputs: &[Input<'_>], out: &Meta, f: impl Fn(&[f32]) -> f32) -> Vec<f32> {
    let strides: Vec<Vec<isize>> = inputs.iter().map(|i| broadcast_strides(&i.meta.shape, &out.shape)).collect();
    let mut iters: Vec<StridedIter<'_>> = strides.iter().map(|s| StridedIter::new(&out.shape, s, 0)).collect();
    let n: usize = out.shape.iter().product();
    let mut args = vec![0.0; inputs.len()];
    (0..n)
        .map(|_| {
            for (k, it) in iters.iter_mut().enumerate() {
                args[k] = toy(inputs[k].buffer)[it.next().expect("one offset per element")];
            }
            f(&args)
        })
        .collect()
}

impl Backend for Toy {
    fn name(&self) -> &str {
        "toy"
    }
    fn upload(&self, s: &Stream, dtype: DType, bytes: &[u8]) -> Result<Buffer> {
        let data = match dtype {
            DType::F32 => bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect(),
            DType::Bool => bytes.iter().map(|&b| b as f32).collect(),
            other => return Err(unsupported(format!("{other} (f32 and bool only)"))),
        };
        Ok(Arc::new(ToyBuf { dev: s.device, dtype, data }))
    }
    fn download(&self, b: &Buffer) -> Result<Vec<u8>> {
        let t = b.as_any().downcast_ref::<ToyBuf>().expect("a toy buffer");
        Ok(match t.dtype {
            DType::Bool => t.data.iter().map(|&x| (x != 0.0) as u8).collect(),
            _ => t.data.iter().flat_map(|x| x.to_le_bytes()).collect(),
        })
    }
    fn supports(&self, op: &Primitive, inputs: &[&Meta]) -> bool {
        kernel_for(op) && inputs.iter().all(|m| matches!(m.dtype, DType::F32 | DType::Bool))
    }
    fn run(&self, s: &Stream, op: &Primitive, inputs: &[Input<'_>], outs: &[Meta]) -> Result<Vec<Buffer>> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let out = &outs[0];
        let n: usize = out.shape.iter().product();
        let data = match op {
            Primitive::Full(f) => vec![f.value as f32; n],
            Primitive::Reshape(_) | Primitive::Copy(_) => return Ok(vec![inputs[0].buffer.clone()]),
            Primitive::Select(_) => zip(inputs, out, |v| if v[0] != 0.0 { v[1] } else { v[2] }),
            Primitive::Unary(u) if kernel_for(op) => {
                let f: fn(f32) -> f32 = match u.op {
                    UnaryOp::Exp => f32::exp,
                    UnaryOp::Log => f32::ln,
                    UnaryOp::Sqrt => f32::sqrt,
                    UnaryOp::Sin => f32::sin,
                    UnaryOp::Cos => f32::cos,
                    _ => |x| (x == 0.0) as u8 as f32,
                };
                toy(inputs[0].buffer).iter().map(|&x| f(x)).collect()
            }
            Primitive::Binary(b) if kernel_for(op) => {
                let f: fn(f32, f32) -> f32 = match b.op {
                    BinaryOp::Add => |x, y| x + y,
                    BinaryOp::Mul => |x, y| x * y,
                    BinaryOp::Div => |x, y| x / y,
                    BinaryOp::Lt => |x, y| (x < y) as u8 as f32,
                    BinaryOp::Eq => |x, y| (x == y) as u8 as f32,
                    _ => |x, y| (x != 0.0 || y != 0.0) as u8 as f32,
                };
                zip(inputs, out, |v| f(v[0], v[1]))
            }
            other => return Err(unsupported(format!("no kernel for {}", other.name()))),
        };
        Ok(vec![Arc::new(ToyBuf { dev: s.device, dtype: out.dtype, data })])
    }
    fn synchronize(&self, _s: &Stream) -> Result<()> {
        Ok(())
    }
}

fn toy_device() -> (Arc<Toy>, Stream) {
    let backend = Arc::new(Toy { runs: AtomicUsize::new(0) });
    let dev = register_backend(backend.clone()).unwrap();
    (backend, lazuli::new_stream(dev).unwrap())
}

#[test]
fn a_registered_backend_runs_ops_and_reports_what_it_lacks() {
    let (backend, s) = toy_device();
    let dev = s.device;

    // Data made on the CPU is copied to the toy device when an op there needs it.
    let a = Array::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
    let b = lazuli::with_stream(&s, || a.add(&a)).unwrap();
    assert_eq!(b.device(), dev);
    assert_eq!(b.to_vec::<f32>().unwrap(), vec![2.0, 4.0, 6.0]);
    assert_eq!(backend.runs.load(Ordering::SeqCst), 1);

    // Ops on its result follow it to the toy device; in a CPU scope it is an ordinary input.
    assert_eq!(b.mul(10.0).unwrap().device(), dev);
    let cpu = lazuli::default_stream(Device::cpu()).unwrap();
    let c = lazuli::with_stream(&cpu, || b.mul(10.0)).unwrap();
    assert_eq!(c.device(), Device::cpu());
    assert_eq!(c.to_vec::<f32>().unwrap(), vec![20.0, 40.0, 60.0]);

    // An op the backend lacks and that has no decomposition is an error naming the
    // backend, not a panic.
    let d = lazuli::with_stream(&s, || a.floor()).unwrap();
    match d.eval() {
        Err(Error::Unsupported { backend, .. }) => assert_eq!(backend, "toy"),
        other => panic!("expected Unsupported, got {other:?}"),
    }
}

#[test]
fn primitives_the_backend_lacks_run_through_their_decompositions() {
    let (backend, s) = toy_device();
    let xs = [-2.5f32, -1.0, -0.25, 0.0, 0.5, 1.0, 3.0];
    let pos = [0.25f32, 0.5, 1.0, 2.0, 4.0, 9.0, 30.0];
    let x = Array::from_slice(&xs, &[7]).unwrap();
    let p = Array::from_slice(&pos, &[7]).unwrap();
    type Op = fn(&Array, &Array) -> Result<Array>;
    let cases: [(&str, Op); 19] = [
        ("sigmoid", |x, _| x.sigmoid()),
        ("tanh", |x, _| x.tanh()),
        ("square", |x, _| x.square()),
        ("neg", |x, _| x.neg()),
        ("abs", |x, _| x.abs()),
        ("sign", |x, _| x.sign()),
        ("expm1", |x, _| x.expm1()),
        ("log1p", |_, p| p.log1p()),
        ("log2", |_, p| p.log2()),
        ("rsqrt", |_, p| p.rsqrt()),
        ("reciprocal", |_, p| p.reciprocal()),
        ("tan", |x, _| x.tan()),
        ("sub", |x, p| x.sub(p)),
        ("maximum", |x, p| x.maximum(&p.add(-2.0)?)),
        ("minimum", |x, p| x.minimum(&p.add(-2.0)?)),
        ("ne", |x, p| x.ne(&p.add(-1.0)?)),
        ("gt", |x, p| x.gt(&p.add(-1.0)?)),
        ("ge", |x, p| x.ge(&p.add(-1.0)?)),
        ("le", |x, p| x.le(&p.add(-1.0)?)),
    ];
    for (name, f) in cases {
        let want = f(&x, &p).unwrap().astype(DType::F32).unwrap().to_vec::<f32>().unwrap();
        let before = backend.runs.load(Ordering::SeqCst);
        let y = lazuli::with_stream(&s, || f(&x, &p)).unwrap();
        assert_eq!(y.device(), s.device);
        // Comparisons give bool: converted on the CPU for the comparison below.
        let got = y.to_device(Device::cpu()).and_then(|y| y.astype(DType::F32)?.to_vec::<f32>());
        let got = got.unwrap_or_else(|e| panic!("{name} on the toy backend: {e}"));
        assert!(backend.runs.load(Ordering::SeqCst) > before, "{name} ran nothing on the toy backend");
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!((g - w).abs() <= 1e-5 * (1.0 + w.abs()), "{name}[{i}]: toy {g} vs cpu {w}");
        }
    }
}

/// The decompositions that replace an accurate kernel stay accurate near 0 (Kahan's forms
/// for expm1 and log1p, expm1 inside tanh), where the textbook formulas cancel to 0.
#[test]
fn decompositions_keep_small_arguments_accurate() {
    let (_backend, s) = toy_device();
    let x = Array::from_slice(&[1e-7f32, -3e-6, 2e-4, -0.01, 0.3], &[5]).unwrap();
    type Op = fn(&Array) -> Result<Array>;
    let cases: [(&str, Op); 4] =
        [("expm1", Array::expm1), ("log1p", Array::log1p), ("tanh", Array::tanh), ("abs", Array::abs)];
    for (name, f) in cases {
        let want = f(&x).unwrap().to_vec::<f32>().unwrap();
        let got = lazuli::with_stream(&s, || f(&x)).unwrap().to_vec::<f32>().unwrap();
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() <= 2e-6 * w.abs(), "{name}: toy {g} vs cpu {w}");
        }
    }
    // Exact ends: expm1(inf), expm1(-inf), log1p(-1), log1p(inf), abs(-0.0).
    let e = Array::from_slice(&[f32::INFINITY, f32::NEG_INFINITY, -1.0, -0.0], &[4]).unwrap();
    let em = lazuli::with_stream(&s, || e.expm1()).unwrap().to_vec::<f32>().unwrap();
    assert_eq!(&em[..2], &[f32::INFINITY, -1.0]);
    let lp = lazuli::with_stream(&s, || e.log1p()).unwrap().to_vec::<f32>().unwrap();
    assert_eq!((lp[0], lp[2]), (f32::INFINITY, f32::NEG_INFINITY));
    let ab = lazuli::with_stream(&s, || e.abs()).unwrap().to_vec::<f32>().unwrap();
    assert!(ab[3] == 0.0 && ab[3].is_sign_positive(), "abs(-0.0) = {}", ab[3]);
}

/// A fuser whose kernels never build: regions, found at eval or kept by `compile`, must
/// run their primitives one by one instead and give the same values.
struct FailingFuser {
    tries: AtomicUsize,
}

impl lazuli::fusion::Fuser for FailingFuser {
    fn limits(&self) -> lazuli::fusion::Limits {
        lazuli::fusion::Limits { max_inputs: 8, max_steps: 64, lone_broadcasts: false, row_regions: false }
    }
    fn accepts(&self, op: &Primitive, inputs: &[&Meta], output: &Meta) -> bool {
        kernel_for(op) && output.dtype == DType::F32 && inputs.iter().all(|m| m.dtype == DType::F32)
    }
    fn run(&self, _: &Stream, _: &lazuli::fusion::Program, _: &[Input<'_>]) -> Result<Vec<Buffer>> {
        self.tries.fetch_add(1, Ordering::SeqCst);
        Err(unsupported("this kernel failed to build".into()))
    }
}

static FAILING: FailingFuser = FailingFuser { tries: AtomicUsize::new(0) };

/// The toy backend with [`FAILING`] as its fuser.
struct ToyFusing(Toy);

impl Backend for ToyFusing {
    fn name(&self) -> &str {
        "toy-fusing"
    }
    fn upload(&self, s: &Stream, dtype: DType, bytes: &[u8]) -> Result<Buffer> {
        self.0.upload(s, dtype, bytes)
    }
    fn download(&self, b: &Buffer) -> Result<Vec<u8>> {
        self.0.download(b)
    }
    fn supports(&self, op: &Primitive, inputs: &[&Meta]) -> bool {
        self.0.supports(op, inputs)
    }
    fn run(&self, s: &Stream, op: &Primitive, inputs: &[Input<'_>], outs: &[Meta]) -> Result<Vec<Buffer>> {
        self.0.run(s, op, inputs, outs)
    }
    fn synchronize(&self, s: &Stream) -> Result<()> {
        self.0.synchronize(s)
    }
    fn fuser(&self) -> Option<&'static dyn lazuli::fusion::Fuser> {
        Some(&FAILING)
    }
}

#[test]
fn regions_whose_kernels_fail_run_unfused() {
    let backend = Arc::new(ToyFusing(Toy { runs: AtomicUsize::new(0) }));
    let s = lazuli::new_stream(register_backend(backend.clone()).unwrap()).unwrap();
    let (av, bv) = ([0.5f32, -1.0, 2.0, 0.25], [1.5f32, 0.5, -0.75, 2.0]);
    let want: Vec<f32> = av.iter().zip(&bv).map(|(a, b)| ((a * b + 0.5) as f64).exp().sin() as f32 * 2.0).collect();
    let body = |x: &[Array]| Ok(vec![(&(&(&x[0] * &x[1])? + 0.5)?.exp()?.sin()? * 2.0)?]);
    let f = lazuli::compile(body);
    lazuli::with_stream(&s, || -> Result<()> {
        let a = Array::from_slice(&av, &[4])?;
        let b = Array::from_slice(&bv, &[4])?;
        let tries = FAILING.tries.load(Ordering::SeqCst);
        let direct = body(&[a.clone(), b.clone()])?.remove(0).to_vec::<f32>()?;
        let out = f.call(&[a.clone(), b.clone()])?.remove(0);
        let runs = backend.0.runs.load(Ordering::SeqCst);
        if lazuli::fusion::enabled() {
            assert_eq!(f.nodes(&[a, b])?, 1, "compile kept the region");
            // The call built the region's node: the pass finds nothing left to fuse.
            assert!(lazuli::fusion::programs(&[&out]).is_empty());
        }
        let compiled = out.to_vec::<f32>()?;
        assert!(backend.0.runs.load(Ordering::SeqCst) - runs >= 5, "the region's primitives ran one by one");
        if lazuli::fusion::enabled() {
            assert_eq!(FAILING.tries.load(Ordering::SeqCst) - tries, 2, "the eval's region and the compiled one");
        }
        for got in [direct, compiled] {
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() <= 1e-5 * (1.0 + w.abs()), "{got:?} vs {want:?}");
            }
        }
        Ok(())
    })
    .unwrap();
}

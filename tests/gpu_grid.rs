//! Dispatches larger than one grid: with `LAZULI_GPU_MAX_WORKGROUPS` lowering the
//! per-dimension workgroup limit, matmul outputs wider or taller than a grid are split
//! into blocks, batches into chunks, and 1-D kernels use 2-D grids, at sizes lavapipe
//! runs quickly. Values against the CPU. The limit is read once: its own test binary.

#[path = "suite/common/mod.rs"]
mod common;

use lazuli::{Array, DType, Device};

#[test]
fn work_beyond_one_grid_is_split_and_correct() {
    // SAFETY: set before any thread of this process reads the environment (the only test
    // here, before the GPU starts).
    unsafe { std::env::set_var("LAZULI_GPU_MAX_WORKGROUPS", "3") };
    if !common::gpu_available() {
        return;
    }
    let gpu = Device::gpu(0);
    let key = lazuli::random::key(11).unwrap();
    let r = |shape: &[usize]| lazuli::random::uniform(&key, shape, -1.0, 1.0, DType::F32).unwrap();
    // [1, k] @ [k, n] with n beyond 3 tiles of the widest kernel (256), and the tall
    // transpose of it; a batch of 7 (beyond 3 per dispatch); both operands transposed.
    let cases: Vec<(Array, Array)> = vec![
        (r(&[1, 3]), r(&[3, 256 * 3 * 2 + 37])),
        (r(&[128 * 3 * 2 + 5, 2]).t().unwrap().t().unwrap(), r(&[2, 3])),
        (r(&[5, 9]).t().unwrap(), r(&[1000, 5]).t().unwrap()),
        (r(&[7, 3, 4]), r(&[7, 4, 9])),
        (r(&[7, 2, 3, 4]), r(&[1, 2, 4, 5])),
    ];
    for (i, (a, b)) in cases.iter().enumerate() {
        let want = a.matmul(b).unwrap().to_vec::<f32>().unwrap();
        let got = common::on(gpu, || a.matmul(b)).unwrap().to_vec::<f32>().unwrap();
        common::assert_close(&format!("matmul case {i} {:?} @ {:?}", a.shape(), b.shape()), &got, &want, 1e-5, 1e-5);
    }
    // 1-D kernels over more threads than 3 workgroups of 256 hold: 2-D grids.
    let x = r(&[256 * 3 * 2 + 11]);
    let want = x.exp().unwrap().sum(&[], false).unwrap().item::<f32>().unwrap();
    let got = common::on(gpu, || x.exp()?.sum(&[], false)).unwrap().item::<f32>().unwrap();
    assert!((got - want).abs() <= 1e-4 * want.abs(), "exp+sum: {got} vs {want}");
    let want = x.cumsum(0, false).unwrap().to_vec::<f32>().unwrap();
    let got = common::on(gpu, || x.cumsum(0, false)).unwrap().to_vec::<f32>().unwrap();
    common::assert_close("cumsum", &got, &want, 1e-4, 1e-3);
}

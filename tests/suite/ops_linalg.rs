//! matmul and outer against values computed with NumPy.

use lazuli::{Array, DType, Error};

fn f32s(n: usize, shape: &[usize], start: f32) -> Array {
    let v: Vec<f32> = (0..n).map(|i| start + i as f32).collect();
    Array::from_slice(&v, shape).unwrap()
}

#[track_caller]
fn check(x: lazuli::Result<Array>, shape: &[usize], vals: &[f32]) {
    let x = x.unwrap();
    assert_eq!(x.shape(), shape);
    assert_eq!(x.to_vec::<f32>().unwrap(), vals);
}

#[test]
fn matmul_2d_and_vectors() {
    let a = f32s(6, &[2, 3], 1.0);
    let b = f32s(12, &[3, 4], 1.0);
    let v = f32s(3, &[3], 1.0);
    check(a.matmul(&b), &[2, 4], &[38.0, 44.0, 50.0, 56.0, 83.0, 98.0, 113.0, 128.0]);
    check(v.matmul(&b), &[4], &[38.0, 44.0, 50.0, 56.0]);
    check(a.matmul(&v), &[2], &[14.0, 32.0]);
    check(v.matmul(&v), &[], &[14.0]);
}

#[test]
fn matmul_of_transposed_views() {
    // Transposed views reach the kernels untransposed, flagged to be read in place.
    let a = f32s(6, &[2, 3], 0.0);
    let b = f32s(8, &[2, 4], 0.0);
    check(
        a.transpose(&[1, 0]).unwrap().matmul(&b),
        &[3, 4],
        &[12.0, 15.0, 18.0, 21.0, 16.0, 21.0, 26.0, 31.0, 20.0, 27.0, 34.0, 41.0],
    );
    let x = f32s(12, &[2, 3, 2], 0.0);
    let y = f32s(12, &[2, 2, 3], 0.0);
    check(
        x.swapaxes(1, 2).unwrap().matmul(&y.swapaxes(1, 2).unwrap()),
        &[2, 2, 2],
        &[10.0, 28.0, 13.0, 40.0, 172.0, 244.0, 193.0, 274.0],
    );
    // The same through integers (computed in f32) and f64.
    let xi = x.astype(DType::I32).unwrap().swapaxes(1, 2).unwrap();
    check(xi.matmul(&y.swapaxes(1, 2).unwrap()), &[2, 2, 2], &[10.0, 28.0, 13.0, 40.0, 172.0, 244.0, 193.0, 274.0]);
    let x64 = x.astype(DType::F64).unwrap().swapaxes(1, 2).unwrap();
    let got = x64.matmul(&y.astype(DType::F64).unwrap().swapaxes(1, 2).unwrap()).unwrap();
    assert_eq!(got.to_vec::<f64>().unwrap(), [10.0, 28.0, 13.0, 40.0, 172.0, 244.0, 193.0, 274.0]);
}

#[test]
fn matmul_batches_broadcast() {
    let a = f32s(12, &[2, 2, 3], 0.0);
    let b = f32s(12, &[3, 4], 1.0);
    check(
        a.matmul(&b),
        &[2, 2, 4],
        &[23.0, 26.0, 29.0, 32.0, 68.0, 80.0, 92.0, 104.0, 113.0, 134.0, 155.0, 176.0, 158.0, 188.0, 218.0, 248.0],
    );
    let bb = f32s(24, &[2, 1, 3, 4], 0.0);
    check(
        a.matmul(&bb),
        &[2, 2, 2, 4],
        &[
            20.0, 23.0, 26.0, 29.0, 56.0, 68.0, 80.0, 92.0, 92.0, 113.0, 134.0, 155.0, 128.0, 158.0, 188.0, 218.0,
            56.0, 59.0, 62.0, 65.0, 200.0, 212.0, 224.0, 236.0, 344.0, 365.0, 386.0, 407.0, 488.0, 518.0, 548.0, 578.0,
        ],
    );
    let v = f32s(3, &[3], 1.0);
    check(v.matmul(&bb), &[2, 1, 4], &[32.0, 38.0, 44.0, 50.0, 104.0, 110.0, 116.0, 122.0]);
    check(a.matmul(&v), &[2, 2], &[8.0, 26.0, 44.0, 62.0]);
}

#[test]
fn matmul_dtypes() {
    let a = Array::from_slice(&[1i32, 2, 3, 4], &[2, 2]).unwrap();
    let p = a.matmul(&a).unwrap();
    assert_eq!(p.dtype(), DType::F32);
    assert_eq!(p.to_vec::<f32>().unwrap(), vec![7.0, 10.0, 15.0, 22.0]);
    let t = Array::from_slice(&[true, false, true, true], &[2, 2]).unwrap();
    let q = t.matmul(&t).unwrap();
    assert_eq!(q.dtype(), DType::F32);
    assert_eq!(q.to_vec::<f32>().unwrap(), vec![1.0, 0.0, 2.0, 1.0]);
    let d = Array::from_slice(&[1.0f64, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
    let r = d.matmul(&f32s(4, &[2, 2], 1.0)).unwrap();
    assert_eq!(r.dtype(), DType::F64);
    assert_eq!(r.to_vec::<f64>().unwrap(), vec![7.0, 10.0, 15.0, 22.0]);
    // K = 0 gives zeros.
    let e = Array::from_slice::<f32>(&[], &[2, 0]).unwrap();
    let z = Array::from_slice::<f32>(&[], &[0, 3]).unwrap();
    check(e.matmul(&z), &[2, 3], &[0.0; 6]);
}

#[test]
fn matmul_errors() {
    let a = f32s(6, &[2, 3], 1.0);
    let err = a.matmul(&a).unwrap_err();
    assert!(matches!(err, Error::Shape { .. }));
    let msg = err.to_string();
    assert!(msg.contains("[2, 3]"), "{msg}");
    let s = Array::scalar(2.0f32).unwrap();
    assert!(matches!(a.matmul(&s), Err(Error::Shape { .. })));
    assert!(matches!(s.matmul(&a), Err(Error::Shape { .. })));
    let v = f32s(2, &[2], 0.0);
    assert!(matches!(v.matmul(&a.transpose(&[]).unwrap().matmul(&v).unwrap()), Err(Error::Shape { .. })));
    let b1 = f32s(18, &[3, 3, 2], 0.0);
    let b2 = f32s(12, &[2, 2, 3], 0.0);
    assert!(matches!(b1.matmul(&b2), Err(Error::Shape { .. })));
}

#[test]
fn outer_products() {
    let a = Array::from_slice(&[1i32, 2, 3], &[3]).unwrap();
    let b = Array::from_slice(&[1i32, -1], &[1, 2]).unwrap();
    let o = a.outer(&b).unwrap();
    assert_eq!(o.shape(), [3, 2]);
    assert_eq!(o.dtype(), DType::I32);
    assert_eq!(o.to_vec::<i32>().unwrap(), vec![1, -1, 2, -2, 3, -3]);
    let f = Array::from_slice(&[0.5f32, 2.0], &[2]).unwrap();
    let o = lazuli::ops::linalg::outer(&f, &a).unwrap();
    assert_eq!(o.dtype(), DType::F32);
    assert_eq!(o.to_vec::<f32>().unwrap(), vec![0.5, 1.0, 1.5, 2.0, 4.0, 6.0]);
    let t = Array::from_slice(&[true, false], &[2]).unwrap();
    let o = t.outer(&t).unwrap();
    assert_eq!(o.to_vec::<bool>().unwrap(), vec![true, false, false, false]);
    let s = Array::scalar(3i32).unwrap();
    assert_eq!(s.outer(&a).unwrap().shape(), [1, 3]);
}

/// A CPU matmul writes its output over a buffer the pool kept (1 MiB and up), holding the
/// last result's values: every element is overwritten, in single and batched products.
#[test]
fn cpu_matmul_over_pooled_buffers() {
    let n = 512;
    let b: Vec<f32> = (0..n * n).map(|i| (i % 7) as f32 - 3.0).collect();
    let b = Array::from_slice(&b, &[n, n]).unwrap();
    let eye = lazuli::eye(n, None, 0, DType::F32).unwrap();
    // Computed first, so that its own output does not take the pooled buffer.
    eye.eval().unwrap();
    for shape in [vec![n as isize, n as isize], vec![2, n as isize / 2, n as isize]] {
        // A result of the same size, dropped: its buffer goes to the pool.
        let ones = lazuli::ones(&[n, n], DType::F32).unwrap();
        drop(ones.matmul(&ones).unwrap().to_vec::<f32>().unwrap());
        let big = ones.matmul(&ones).unwrap();
        big.eval().unwrap();
        drop(big);
        // (Other tests may take it first: the product is checked either way.)
        let pooled = lazuli::memory::cache(lazuli::Device::cpu()) >= (n * n * 4) as u64;
        let rows = eye.reshape(&shape).unwrap();
        let got = rows.matmul(&b).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(got, b.to_vec::<f32>().unwrap(), "{shape:?}, over a pooled buffer: {pooled}");
    }
}

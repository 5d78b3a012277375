//! Host data in and out: `from_slice`, `from_vec`, `from_bytes`, `to_vec`, `to_bytes` keep
//! every value bit for bit on every device, and the `ndarray` conversions (feature
//! `ndarray`) keep shapes, layouts and values.

use lazuli::{Array, DType, Device, Element, Error, bf16, f16};

use crate::common::devices;

/// The dtypes `device` runs (the GPU has no i64, f64 or bf16; f16 depends on the adapter).
fn runs_on(device: Device, dtype: DType) -> bool {
    device == Device::cpu() || matches!(dtype, DType::Bool | DType::U32 | DType::I32 | DType::F32)
}

/// `values` through `from_slice` and `from_vec`, onto `device` and back, bit for bit,
/// and their host bytes are the little-endian encoding `le` gives.
fn round_trip<T: Element + PartialEq>(values: &[T], le: impl Fn(T) -> Vec<u8>, bits: impl Fn(T) -> u64) {
    let want_bytes: Vec<u8> = values.iter().flat_map(|&v| le(v)).collect();
    let want_bits: Vec<u64> = values.iter().map(|&v| bits(v)).collect();
    for d in devices() {
        if !runs_on(d, T::DTYPE) {
            continue;
        }
        for a in [
            Array::from_slice(values, &[values.len()]).unwrap(),
            Array::from_vec(values.to_vec(), &[values.len()]).unwrap(),
        ] {
            let a = a.to_device(d).unwrap();
            let got: Vec<u64> = a.to_vec::<T>().unwrap().into_iter().map(&bits).collect();
            assert_eq!(got, want_bits, "{} on {d}", T::DTYPE);
            assert_eq!(a.to_bytes().unwrap(), want_bytes, "{} bytes on {d}", T::DTYPE);
        }
        let b = Array::from_bytes(&want_bytes, &[values.len()], T::DTYPE).unwrap().to_device(d).unwrap();
        assert_eq!(b.to_vec::<T>().unwrap().into_iter().map(&bits).collect::<Vec<_>>(), want_bits);
    }
}

#[test]
fn host_copies_keep_every_bit_of_every_dtype() {
    // Signed zeros, the smallest subnormal, NaN with a payload, infinities, extremes.
    let f32s = [0.0, -0.0, f32::from_bits(1), f32::from_bits(0x7fc0_0123), f32::INFINITY, f32::MIN, 1.5];
    round_trip(&f32s, |v| v.to_le_bytes().to_vec(), |v| v.to_bits() as u64);
    let f64s = [-0.0, f64::from_bits(1), f64::from_bits(0x7ff8_0000_0000_0042), f64::NEG_INFINITY, f64::MAX, 0.1];
    round_trip(&f64s, |v| v.to_le_bytes().to_vec(), f64::to_bits);
    let f16s = [f16::from_bits(0x8000), f16::from_bits(1), f16::from_bits(0x7e01), f16::MAX, f16::from_f32(0.5)];
    round_trip(&f16s, |v| v.to_bits().to_le_bytes().to_vec(), |v| v.to_bits() as u64);
    let bf16s = [bf16::from_bits(0x8000), bf16::from_bits(1), bf16::from_bits(0x7fc1), bf16::MIN, bf16::from_f32(3.0)];
    round_trip(&bf16s, |v| v.to_bits().to_le_bytes().to_vec(), |v| v.to_bits() as u64);
    round_trip(&[i32::MIN, -1, 0, 7, i32::MAX], |v| v.to_le_bytes().to_vec(), |v| v as u32 as u64);
    round_trip(&[0u32, 1, 0x8000_0000, u32::MAX], |v| v.to_le_bytes().to_vec(), |v| v as u64);
    round_trip(&[i64::MIN, -1, (1 << 53) + 1, i64::MAX], |v| v.to_le_bytes().to_vec(), |v| v as u64);
    round_trip(&[true, false, false, true], |v| vec![v as u8], |v| v as u64);
}

#[test]
fn bool_bytes_other_than_one_read_as_true() {
    // The host layout is 0 or 1; any other non-zero byte means true, as before.
    let a = Array::from_bytes(&[0, 1, 2, 255], &[4], DType::Bool).unwrap();
    assert_eq!(a.to_vec::<bool>().unwrap(), vec![false, true, true, true]);
}

#[test]
fn from_vec_checks_like_from_slice() {
    let a = Array::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    assert_eq!((a.shape(), a.dtype()), (&[2usize, 3][..], DType::F32));
    assert_eq!(a.sum(&[0], false).unwrap().to_vec::<f32>().unwrap(), vec![5.0, 7.0, 9.0]);
    match Array::from_vec(vec![1u32, 2, 3], &[2, 2]) {
        Err(Error::Shape { op: "from_vec", msg }) => assert!(msg.contains("3 elements"), "{msg}"),
        other => panic!("expected a Shape error naming from_vec, got {other:?}"),
    }
    match Array::from_vec(Vec::<f32>::new(), &[usize::MAX, 2]) {
        Err(Error::Shape { op: "from_vec", msg }) => assert!(msg.contains("too large"), "{msg}"),
        other => panic!("expected a Shape error for a too-large shape, got {other:?}"),
    }
    let empty = Array::from_vec(Vec::<i64>::new(), &[0, 3]).unwrap();
    assert_eq!(empty.to_vec::<i64>().unwrap(), Vec::<i64>::new());
    let s = Array::from_vec(vec![f16::from_f32(2.5)], &[]).unwrap();
    assert_eq!(s.item::<f16>().unwrap(), f16::from_f32(2.5));
}

#[test]
fn to_vec_of_the_wrong_type_is_a_dtype_error() {
    let a = Array::from_vec(vec![1i32, 2], &[2]).unwrap();
    assert!(matches!(a.to_vec::<u32>(), Err(Error::DType { op: "to_vec", dtype: DType::U32, .. })));
}

#[cfg(feature = "ndarray")]
mod ndarray_conversions {
    use lazuli::{Array, DType, Error};
    use ndarray::{ArrayD, IxDyn, s};

    use crate::common::{devices, on};

    #[test]
    fn an_owned_array_comes_in_with_its_shape_and_values() {
        let n = ndarray::Array::from_shape_vec((2, 3), vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        let a = Array::try_from(n).unwrap();
        assert_eq!(a.shape(), &[2, 3]);
        assert_eq!(a.to_vec::<f32>().unwrap(), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        // 0-d and empty arrays.
        let z = Array::try_from(ndarray::arr0(7i64)).unwrap();
        assert_eq!((z.shape(), z.item::<i64>().unwrap()), (&[][..], 7));
        let e = Array::try_from(ndarray::Array2::<u32>::zeros((0, 4))).unwrap();
        assert_eq!(e.shape(), &[0, 4]);
    }

    #[test]
    fn other_layouts_come_in_in_logical_order() {
        // [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
        let base = ndarray::Array::from_shape_vec((3, 4), (0..12).collect::<Vec<i32>>()).unwrap();
        // Transposed (Fortran order) owned array.
        let t = Array::try_from(base.clone().reversed_axes()).unwrap();
        assert_eq!(t.shape(), &[4, 3]);
        assert_eq!(t.to_vec::<i32>().unwrap(), vec![0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]);
        // A strided view, and a view in standard layout.
        let v = Array::try_from(base.slice(s![..;2, 1..;2])).unwrap();
        assert_eq!((v.shape(), v.to_vec::<i32>().unwrap()), (&[2, 2][..], vec![1, 3, 9, 11]));
        let row = Array::try_from(base.row(1)).unwrap();
        assert_eq!(row.to_vec::<i32>().unwrap(), vec![4, 5, 6, 7]);
        // An owned array sliced in place keeps the cut elements in its vector.
        let mut cut = base.clone();
        cut.slice_collapse(s![1.., ..]);
        let c = Array::try_from(cut).unwrap();
        assert_eq!((c.shape(), c.to_vec::<i32>().unwrap()), (&[2, 4][..], (4..12).collect()));
        let by_ref = Array::try_from(&base).unwrap();
        assert_eq!(by_ref.to_vec::<i32>().unwrap(), (0..12).collect::<Vec<_>>());
    }

    #[test]
    fn results_go_out_as_arrayd_on_every_device() {
        let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
        for d in devices() {
            let m = on(d, || a.matmul(&a.transpose(&[1, 0])?)).unwrap();
            let n = ArrayD::<f32>::try_from(&m).unwrap();
            // [[1,2,3],[4,5,6]] @ its transpose, by hand.
            let want = ArrayD::from_shape_vec(IxDyn(&[2, 2]), vec![14.0, 32.0, 32.0, 77.0]).unwrap();
            assert_eq!(n, want, "on {d}");
            let b = ArrayD::<bool>::try_from(on(d, || m.gt(20.0)).unwrap()).unwrap();
            assert_eq!(b.into_raw_vec_and_offset().0, vec![false, true, true, true], "on {d}");
        }
    }

    #[test]
    fn out_with_the_wrong_type_is_a_dtype_error() {
        let a = Array::from_slice(&[1i32, 2], &[2]).unwrap();
        assert!(matches!(ArrayD::<f32>::try_from(&a), Err(Error::DType { dtype: DType::F32, .. })));
        let back = ArrayD::<f32>::try_from(&a.astype(DType::F32).unwrap()).unwrap();
        assert_eq!(back.into_raw_vec_and_offset().0, vec![1.0, 2.0]);
    }
}

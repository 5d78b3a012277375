//! The device rule (`lazuli::stream` docs): an op runs inside a `with_stream` scope on the
//! scope's stream; otherwise it follows its inputs, and inputs on several devices meet on
//! the one that is not the default device. Values are checked against literals.

use crate::common;
use lazuli::{Array, DType, Device};

#[test]
fn ops_follow_their_inputs_device() {
    if !common::gpu_available() {
        return;
    }
    let gpu = Device::gpu(0);
    let host = Array::from_slice(&[1.0f32, 2.0, 4.0], &[3]).unwrap();
    assert_eq!(host.device(), Device::cpu());
    let g = host.to_device(gpu).unwrap();
    assert_eq!(g.device(), gpu);

    // Unary, binary with a scalar, reductions (also empty ones), composites: on the GPU.
    let e = g.exp().unwrap();
    assert_eq!(e.device(), gpu);
    let s = (&(&g * 2.0).unwrap() + 1).unwrap();
    assert_eq!(s.device(), gpu);
    assert_eq!(s.to_vec::<f32>().unwrap(), vec![3.0, 5.0, 9.0]);
    let m = g.reshape(&[3, 1]).unwrap().softmax(&[0]).unwrap().sum(&[], false).unwrap();
    assert_eq!(m.device(), gpu);
    assert!((m.item::<f32>().unwrap() - 1.0).abs() < 1e-6);
    let empty = g.slice(&[(0..0).into()]).unwrap().mean(&[], false).unwrap();
    assert_eq!(empty.device(), gpu);
    assert!(empty.item::<f32>().unwrap().is_nan());
    let w = lazuli::where_(&g.gt(1.5).unwrap(), &g, 0.0).unwrap();
    assert_eq!(w.device(), gpu);
    assert_eq!(w.to_vec::<f32>().unwrap(), vec![0.0, 2.0, 4.0]);
    let oh = lazuli::one_hot(&g.astype(DType::I32).unwrap(), 5, DType::F32).unwrap();
    assert_eq!(oh.device(), gpu);
    assert_eq!(oh.sum(&[0], false).unwrap().to_vec::<f32>().unwrap(), vec![0.0, 1.0, 1.0, 0.0, 1.0]);

    // A CPU array meeting a GPU array: the op runs on the GPU, whichever side it is on.
    let mixed = host.add(&g).unwrap();
    assert_eq!(mixed.device(), gpu);
    assert_eq!(mixed.to_vec::<f32>().unwrap(), vec![2.0, 4.0, 8.0]);
    let mixed = g.mul(&host).unwrap();
    assert_eq!(mixed.device(), gpu);
    assert_eq!(mixed.to_vec::<f32>().unwrap(), vec![1.0, 4.0, 16.0]);

    // A scope wins over the inputs.
    let cpu = lazuli::default_stream(Device::cpu()).unwrap();
    let back = lazuli::with_stream(&cpu, || g.exp()).unwrap();
    assert_eq!(back.device(), Device::cpu());
    for (c, g) in back.to_vec::<f32>().unwrap().iter().zip(e.to_vec::<f32>().unwrap()) {
        assert!((c - g).abs() <= 1e-6 * c.abs(), "cpu {c} vs gpu {g}");
    }

    // An array whose stream was closed still feeds work, on its device's default stream.
    let own = lazuli::new_stream(gpu).unwrap();
    let x = lazuli::with_stream(&own, || host.mul(3.0)).unwrap();
    x.eval().unwrap();
    lazuli::close_stream(&own).unwrap();
    let y = x.add(1.0).unwrap();
    assert_eq!(y.stream(), lazuli::default_stream(gpu).unwrap());
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![4.0, 7.0, 13.0]);
}

#[test]
fn ops_follow_their_inputs_stream() {
    let s = lazuli::new_stream(Device::cpu()).unwrap();
    let a = lazuli::with_stream(&s, || Array::from_slice(&[1i32, 2], &[2])).unwrap();
    let b = a.mul(5).unwrap().sum(&[], false).unwrap();
    assert_eq!(b.stream(), s);
    assert_eq!(b.item::<i32>().unwrap(), 15);
    // No inputs, no scope: the default device's default stream.
    let z = lazuli::zeros(&[2], DType::F32).unwrap();
    assert_eq!(z.stream(), lazuli::default_stream(lazuli::default_device()).unwrap());
}

#[test]
fn devices_parse_and_shutdown_is_recognised() {
    assert_eq!("cpu".parse::<Device>().unwrap(), Device::cpu());
    assert_eq!("gpu".parse::<Device>().unwrap(), Device::gpu(0));
    assert_eq!("GPU:2".parse::<Device>().unwrap(), Device::gpu(2));
    assert_eq!("gpu(1)".parse::<Device>().unwrap(), Device::gpu(1));
    for bad in ["", "tpu", "gpu:x", "cpu0"] {
        assert!(matches!(bad.parse::<Device>(), Err(lazuli::Error::Device(_))), "{bad:?}");
    }
    assert!(lazuli::Error::ShutDown.is_shutdown());
    assert!(lazuli::Error::eval("exp", lazuli::Error::ShutDown).is_shutdown());
    assert!(!lazuli::Error::Device("x".into()).is_shutdown());
}

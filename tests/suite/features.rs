//! What each Cargo feature changes for a user: a build without `gpu` still compiles code
//! that names `Device::gpu`, and says at run time why there is no GPU.

#[cfg(not(feature = "gpu"))]
#[test]
fn without_the_gpu_feature_the_gpu_is_a_clear_device_error() {
    use lazuli::{Array, Device, Error};
    for result in [lazuli::default_stream(Device::gpu(0)).map(drop), lazuli::new_stream(Device::gpu(1)).map(drop)] {
        match result {
            Err(Error::Device(msg)) => assert!(msg.contains("built without the `gpu` feature"), "{msg}"),
            other => panic!("expected Err(Error::Device), got {other:?}"),
        }
    }
    assert!(matches!(lazuli::backend::gpu::adapter_summary(), Err(Error::Device(_))));
    assert!(matches!(lazuli::backend::gpu::kernel_times(), Err(Error::Device(_))));
    lazuli::backend::gpu::reset_kernel_times();
    assert!(!lazuli::backend::gpu::is_software_adapter());
    // The CPU works as ever.
    let a = Array::from_slice(&[1.0f32, 4.0], &[2]).unwrap();
    assert_eq!(a.sqrt().unwrap().to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
}

#[cfg(feature = "gpu")]
#[test]
fn with_the_gpu_feature_a_missing_adapter_is_not_blamed_on_the_build() {
    // gpu(1) never exists; its error must name the real reason, not the feature.
    match lazuli::new_stream(lazuli::Device::gpu(1)) {
        Err(lazuli::Error::Device(msg)) => assert!(!msg.contains("feature"), "{msg}"),
        other => panic!("expected Err(Error::Device), got {other:?}"),
    }
}

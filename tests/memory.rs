//! `lazuli::memory` on every device: active and peak bytes follow arrays, the cache holds
//! released buffers until cleared, and a memory limit turns an allocation past it
//! into an `Err` naming the sizes. The counts and the limit are process-wide, so this is
//! its own test binary with one test (the suite's other tests would move the counts).

#[path = "suite/common/mod.rs"]
mod common;

use lazuli::{DType, Device, Error, memory};

const MIB: u64 = 1 << 20;

#[test]
fn memory_is_counted_and_limited_on_every_device() {
    for d in common::devices() {
        let z = |n: usize| common::on(d, || lazuli::zeros(&[n], DType::F32));

        // Active and peak follow one 4 MiB array.
        let x = z(1 << 20).unwrap();
        x.eval().unwrap();
        drop(x);
        memory::reset_peak(d);
        let base = memory::active(d);
        assert_eq!(memory::peak(d), base, "{d}: reset_peak starts from active");
        let x = z(1 << 20).unwrap();
        x.eval().unwrap();
        assert_eq!(memory::active(d), base + 4 * MIB, "{d}");
        assert_eq!(memory::peak(d), base + 4 * MIB, "{d}");
        drop(x);
        assert_eq!(memory::active(d), base, "{d}: a dropped array's bytes are not active");
        assert_eq!(memory::peak(d), base + 4 * MIB, "{d}: the peak stays");

        // The released buffer waits in the device's cache; clearing frees it; a zero
        // cache limit keeps nothing.
        assert!(memory::cache(d) >= 4 * MIB, "{d}: cache {}", memory::cache(d));
        memory::clear_cache(d).unwrap();
        assert_eq!(memory::cache(d), 0, "{d}");
        let old = memory::set_cache_limit(d, 0).unwrap();
        // The default limit is the high-water mark, on the GPU at least 1 GiB.
        let floor = if d == Device::cpu() { 4 * MIB } else { 1 << 30 };
        assert!(old >= floor, "{d}: default cache limit {old}");
        let y = z(1 << 18).unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap().len(), 1 << 18);
        drop(y);
        assert_eq!(memory::cache(d), 0, "{d}: nothing is kept under a zero limit");
        assert_eq!(memory::set_cache_limit(d, old).unwrap(), 0);

        // A limit 1 MiB above what is held: a 4 MiB array is refused, naming the sizes;
        // a small one is not.
        let limit = memory::active(d) + MIB;
        assert_eq!(memory::set_memory_limit(d, Some(limit)).unwrap(), None, "{d}: no limit by default");
        let err = z(1 << 20).unwrap().eval().unwrap_err();
        match err.root_cause() {
            Error::OutOfMemory { requested, limit: Some(l), .. } => {
                assert_eq!((*requested, *l), (4 * MIB, limit), "{d}: {err}");
            }
            other => panic!("{d}: expected OutOfMemory, got {other}"),
        }
        assert!(err.to_string().contains("set_memory_limit"), "{d}: the message names the cause: {err}");
        let small = z(1024).unwrap();
        assert_eq!(small.sum(&[], false).unwrap().item::<f32>().unwrap(), 0.0, "{d}");
        drop(small);
        assert_eq!(memory::set_memory_limit(d, None).unwrap(), Some(limit));
        assert_eq!(z(1 << 20).unwrap().sum(&[], false).unwrap().item::<f32>().unwrap(), 0.0, "{d}");
    }

    // Devices lazuli does not manage: queries are 0, setters say why.
    let other = Device::gpu(3);
    assert_eq!((memory::active(other), memory::peak(other), memory::cache(other)), (0, 0, 0));
    let e = memory::set_memory_limit(other, Some(1)).unwrap_err();
    assert!(e.to_string().contains("gpu(3)") || e.to_string().contains("gpu:3"), "{e}");
    assert!(memory::clear_cache(other).is_err());
}

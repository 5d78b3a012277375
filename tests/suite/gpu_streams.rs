//! GPU streams record independently (issue 12, item 4): a read-back or synchronize on one
//! stream leaves another stream's recorded work unsubmitted, and work that crosses
//! streams (a consumer on another stream, a pooled buffer reused by another stream) still
//! sees the values it must.

use crate::common::gpu_available;
use lazuli::backend::gpu::unsubmitted;
use lazuli::{Array, Device, Result, Stream, with_stream};

/// Two fresh GPU streams, after one kernel has run and been read back (the first kernel
/// of a process submits everything once, for the exit hook).
fn two_streams() -> Result<(Stream, Stream)> {
    // Streams whose indices agree modulo 64 share an encoder; the default GPU stream is
    // the one every other GPU test records on. Take two that share with neither.
    let lane = |s: &Stream| s.index % 64;
    let default = lane(&lazuli::default_stream(Device::gpu(0))?);
    let fresh = || loop {
        let s = lazuli::new_stream(Device::gpu(0))?;
        if lane(&s) != default {
            return Ok::<_, lazuli::Error>(s);
        }
    };
    let a = fresh()?;
    let b = loop {
        let b = fresh()?;
        if lane(&b) != lane(&a) {
            break b;
        }
    };
    with_stream(&a, || Array::from_slice(&[1.0f32], &[1])?.neg()?.to_vec::<f32>())?;
    Ok((a, b))
}

fn ramp(n: usize) -> Vec<f32> {
    (0..n).map(|i| (i % 17) as f32 * 0.125).collect()
}

#[test]
fn a_read_back_leaves_other_streams_unsubmitted() {
    if !gpu_available() {
        return;
    }
    let (a, b) = two_streams().unwrap();
    let x = with_stream(&b, || Array::from_slice(&[0.0f32, 1.0, 2.0, 3.0], &[4])?.mul(2.0)?.add(1.0)).unwrap();
    x.eval().unwrap();
    let pending = unsubmitted(&b);
    assert!(pending > 0, "eval records without submitting");
    let y = with_stream(&a, || Array::from_slice(&[1.0f32, 2.0], &[2])?.mul(3.0)).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![3.0, 6.0]);
    assert_eq!(unsubmitted(&b), pending, "a read-back on stream a submitted stream b's work");
    lazuli::synchronize(&a).unwrap();
    assert_eq!(unsubmitted(&b), pending, "synchronize on stream a submitted stream b's work");
    // Stream b's own read-back submits it.
    assert_eq!(x.to_vec::<f32>().unwrap(), vec![1.0, 3.0, 5.0, 7.0]);
    assert_eq!(unsubmitted(&b), 0);
}

#[test]
fn streams_of_other_devices_record_nothing_on_the_gpu() {
    let cpu = lazuli::new_stream(Device::cpu()).unwrap();
    with_stream(&cpu, || Array::from_slice(&[1.0f32, 2.0], &[2])?.exp()?.eval()).unwrap();
    assert_eq!(unsubmitted(&cpu), 0);
}

#[test]
fn synchronize_submits_its_own_stream() {
    if !gpu_available() {
        return;
    }
    let (a, _) = two_streams().unwrap();
    let x = with_stream(&a, || Array::from_slice(&[2.0f32; 8], &[8])?.sqrt()).unwrap();
    x.eval().unwrap();
    assert!(unsubmitted(&a) > 0);
    lazuli::synchronize(&a).unwrap();
    assert_eq!(unsubmitted(&a), 0);
    assert_eq!(x.to_vec::<f32>().unwrap(), vec![2.0f32.sqrt(); 8]);
}

/// A consumer on stream a of an array stream b has recorded but not submitted: without
/// ordering, a's kernel would run before b's and read garbage.
#[test]
fn a_consumer_on_another_stream_sees_the_producer() {
    if !gpu_available() {
        return;
    }
    let (a, b) = two_streams().unwrap();
    let n = 3000;
    let x = with_stream(&b, || Array::from_slice(&ramp(n), &[n])?.mul(4.0)?.add(1.0)).unwrap();
    x.eval().unwrap();
    assert!(unsubmitted(&b) > 0);
    let y = with_stream(&a, || x.mul(0.5)?.sum(&[0], false)).unwrap();
    let want: f64 = ramp(n).iter().map(|&v| (f64::from(v) * 4.0 + 1.0) * 0.5).sum();
    assert_eq!(f64::from(y.item::<f32>().unwrap()), want);
}

/// Stream b reads a temporary in a command it has not submitted, and drops it; stream a
/// then asks the pool for a buffer of its size and writes it. Had a got the temporary's
/// buffer, a's write would reach the queue before b's read.
#[test]
fn a_pooled_buffer_reused_by_another_stream_keeps_its_readers() {
    if !gpu_available() {
        return;
    }
    let (a, b) = two_streams().unwrap();
    // An odd size, so the pool bucket is unlikely to be one another test takes meanwhile.
    let n = 23_456;
    let t = with_stream(&b, || Array::from_slice(&ramp(n), &[n])?.add(2.0)).unwrap();
    t.eval().unwrap();
    // The write of t is submitted; the read below is not.
    lazuli::synchronize(&b).unwrap();
    let s = with_stream(&b, || t.sum(&[0], false)).unwrap();
    s.eval().unwrap();
    drop(t);
    assert!(unsubmitted(&b) > 0);
    let w = with_stream(&a, || Array::from_slice(&vec![1.0f32; n], &[n])?.neg()).unwrap();
    assert_eq!(w.to_vec::<f32>().unwrap(), vec![-1.0; n]);
    let want: f64 = ramp(n).iter().map(|&v| f64::from(v) + 2.0).sum();
    assert_eq!(f64::from(s.item::<f32>().unwrap()), want);
}

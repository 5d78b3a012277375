//! Large CPU buffers kept for reuse when they drop ([`Pool`], the GPU pool's policy): an
//! eval that allocates outputs of the sizes the last one freed gets them back instead of
//! fresh pages.
//!
//! Why: glibc serves an allocation of a few MiB from its heap or from a fresh mapping,
//! depending on the history of earlier frees (its mmap threshold and trimming move with
//! them), and fresh pages cost a fault each on first write. `ops_bench`'s 1M-element
//! `tanh(exp(a*b+c)*0.5)`, which allocates five 4 MiB outputs per eval, ran at 1.4-1.6 GB/s
//! with 270-660k page faults, or at 5.6-6.3 GB/s with 10-19k, by nothing but the order of
//! earlier allocations (the rows asked for; `perf stat`, session 17).

use std::sync::{Mutex, MutexGuard, OnceLock};

use super::storage::{CpuData, CpuElem};
use crate::backend::pool::{Cap, Pool};

/// Buffers below this size are freed as usual: the allocator's bins reuse them, and the
/// pool's lock would cost the many small ops more than it saves.
pub(crate) const MIN_BYTES: usize = 1 << 20;

fn pool() -> &'static Mutex<Pool<CpuData>> {
    // Leaked: buffers may drop during process exit, after statics with destructors.
    static P: OnceLock<&'static Mutex<Pool<CpuData>>> = OnceLock::new();
    // The default cap follows the most bytes live at once, with no floor: idle memory
    // stays within the largest working set.
    P.get_or_init(|| Box::leak(Box::new(Mutex::new(Pool::new(Cap::HighWater(0))))))
}

fn lock() -> MutexGuard<'static, Pool<CpuData>> {
    pool().lock().unwrap_or_else(|e| e.into_inner())
}

/// Keeps a dropped buffer's vector for reuse, if it is large enough (freeing what the
/// cap evicts).
pub(crate) fn release(d: CpuData) {
    let size = d.capacity_bytes();
    if size < MIN_BYTES {
        return;
    }
    let high = crate::memory::CPU.high_water();
    let evicted = lock().put(d, size as u64, high);
    // Freed outside the lock.
    drop(evicted);
}

/// An idle vector with room for exactly `n` elements, holding its old values, if the pool
/// has one.
fn take<T: CpuElem>(n: usize) -> Option<Vec<T>> {
    let bytes = n * std::mem::size_of::<T>();
    if bytes < MIN_BYTES {
        return None;
    }
    let d = lock().take(bytes as u64, |d| d.dtype() == T::DTYPE)?;
    T::into_vec(d)
}

/// `n` copies of `value`: written over an idle vector when the pool has one, else a new
/// one (`vec!`, which takes zeroed pages from the system for zeros).
pub(crate) fn filled<T: CpuElem>(n: usize, value: T) -> Vec<T> {
    match take(n) {
        Some(mut v) => {
            v.clear();
            v.resize(n, value);
            v
        }
        None => vec![value; n],
    }
}

/// `n` elements for a kernel that writes every one: an idle vector keeps its old values
/// (of the same dtype), so nothing is written twice (zeroing a pooled 4 MiB output cost
/// the CPU's `add` about a tenth of its time); a new one is zeros: zero pages from the
/// system when large, a small allocation filled when small (`calloc` cost a 4-element
/// fused region more than `malloc` and the fill, callgrind, session 24).
pub(crate) fn output<T: CpuElem>(n: usize) -> Vec<T> {
    if n * std::mem::size_of::<T>() < MIN_BYTES {
        let mut v = Vec::with_capacity(n);
        v.resize(n, T::default());
        return v;
    }
    match take(n) {
        Some(mut v) => {
            v.truncate(n);
            v.resize(n, T::default());
            v
        }
        None => vec![T::default(); n],
    }
}

/// Idle bytes in the pool (for `lazuli::memory::cache`).
pub(crate) fn pooled_bytes() -> u64 {
    lock().bytes
}

/// Sets the pool's cap in bytes, evicting down to it now; returns the previous cap.
pub(crate) fn set_cap(bytes: u64) -> u64 {
    let high = crate::memory::CPU.high_water();
    let (old, evicted) = lock().set_cap(Cap::Bytes(bytes), high);
    drop(evicted);
    old.bytes(high)
}

/// Frees every idle buffer (the cap stays).
pub(crate) fn clear() {
    // Freed after the lock is released (the guard is a temporary of this statement).
    let evicted = lock().take_all();
    drop(evicted);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::CpuBuffer;

    #[test]
    fn a_dropped_buffer_comes_back_for_its_size_and_dtype() {
        // An unusual size, so no other test's buffer is taken (the pool is process-wide).
        let n = (MIN_BYTES / 4) * 3 + 12_345;
        let v: Vec<f32> = vec![1.0; n];
        let at = v.as_ptr();
        // Held as a buffer first: the default cap follows the bytes live buffers held.
        drop(CpuBuffer::new(CpuData::F32(v)));
        assert!(take::<i32>(n).is_none(), "another dtype does not take it");
        // A kernel's output: the same allocation, not fresh pages, with its old values (it
        // writes every element itself).
        let o = output::<f32>(n);
        assert_eq!(o.as_ptr(), at);
        assert_eq!(o.len(), n);
        assert!(o.iter().all(|&x| x == 1.0));
    }
}

//! Memory control, as MLX has it, per device: how many bytes live arrays hold
//! ([`active`]) and at most held ([`peak`]), how many idle bytes a device keeps for reuse
//! ([`cache`]), and limits on both.
//!
//! ```
//! use lazuli::{Device, memory};
//! let cpu = Device::cpu();
//! memory::reset_peak(cpu);
//! let before = memory::active(cpu);
//! let a = lazuli::zeros(&[1024], lazuli::DType::F32)?;
//! a.eval()?;
//! assert!(memory::active(cpu) >= before + 4096 || memory::peak(cpu) >= 4096);
//! // A limit turns an allocation past it into an `Err` naming both sizes.
//! let old = memory::set_memory_limit(cpu, Some(memory::active(cpu) + 1024))?;
//! let big = lazuli::zeros(&[1 << 20], lazuli::DType::F32)?;
//! assert!(matches!(big.eval(), Err(e) if matches!(e.root_cause(), lazuli::Error::OutOfMemory { .. })));
//! memory::set_memory_limit(cpu, old)?;
//! # Ok::<(), lazuli::Error>(())
//! ```
//!
//! # What is counted
//! - **Active**: bytes of the buffers that evaluated arrays (and kernels still running)
//!   hold on the device, as the device allocated them: on the GPU the pool's bucket size
//!   (powers of two to 1 MiB, then whole MiB), so a 1-byte array counts 256 bytes. A host
//!   array read by GPU ops also holds its uploaded copy there until it is dropped.
//! - **Peak**: the largest active value since the process started or [`reset_peak`].
//! - **Cache**: idle bytes kept for reuse. The GPU keeps released storage buffers in a
//!   pool by bucket size (the most recently released of a size is reused first; past the
//!   cache limit the least recently released go first) and read-back buffers up to
//!   512 MiB. The default cache limit is the most bytes live buffers have held at once
//!   since the start (at least 1 GiB): a loop keeps reusing its working set, and the
//!   device holds at most about twice its largest working set; [`set_cache_limit`]
//!   fixes it instead. The CPU keeps released buffers of 1 MiB or more the same way,
//!   with no floor under the default limit (smaller ones go back to the system
//!   allocator, which reuses them): an allocation of a size released before gets it
//!   back instead of fresh pages, whose faults made a 1M-element fused chain 4x slower
//!   depending on how earlier allocations had gone (BENCHMARKS.md, session 17).
//!
//! # Limits
//! [`set_memory_limit`] bounds active bytes: an allocation that would pass it fails with
//! [`Error::OutOfMemory`] before anything is allocated (the check and the count are not
//! one atomic step, so threads allocating at the same moment can pass the limit by one
//! allocation each). Without a limit, what the device refuses is still an `Err` (the
//! adapter's buffer-size limit and wgpu's out-of-memory errors on the GPU; a failed
//! allocation on the CPU), never an abort.
//!
//! Devices are [`Device::cpu`] and [`Device::gpu`]`(0)`; other GPU indices do not exist
//! (queries give 0, setters an `Err`), and custom backends manage their own memory.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};
use crate::stream::{Device, DeviceKind};

/// Byte counts of one device. Atomics in a static with no destructor: buffers dropped
/// during exit may still count down.
pub(crate) struct Ledger {
    active: AtomicU64,
    peak: AtomicU64,
    /// The largest `active` value since the start ([`reset_peak`] leaves it): the GPU
    /// pool's default cache limit follows it.
    high: AtomicU64,
    /// `u64::MAX`: no limit.
    limit: AtomicU64,
}

impl Ledger {
    pub(crate) const fn new() -> Self {
        Ledger {
            active: AtomicU64::new(0),
            peak: AtomicU64::new(0),
            high: AtomicU64::new(0),
            limit: AtomicU64::new(u64::MAX),
        }
    }

    /// `Err` if `bytes` more would pass the limit; `what` names the allocation (made
    /// only for the error: this runs on every allocation).
    pub(crate) fn check(&self, what: impl FnOnce() -> String, bytes: u64) -> Result<()> {
        let limit = self.limit.load(Ordering::Relaxed);
        if limit == u64::MAX {
            return Ok(());
        }
        let active = self.active.load(Ordering::Relaxed);
        if active.saturating_add(bytes) > limit {
            return Err(Error::out_of_memory(
                format!("{} (with {active} bytes active; the limit set by lazuli::memory::set_memory_limit)", what()),
                bytes,
                Some(limit),
            ));
        }
        Ok(())
    }

    /// Counts `bytes` allocated.
    pub(crate) fn add(&self, bytes: u64) {
        let now = self.active.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak.fetch_max(now, Ordering::Relaxed);
        self.high.fetch_max(now, Ordering::Relaxed);
    }

    /// The most bytes held at once since the process started (the GPU pool reads it).
    #[cfg_attr(not(feature = "gpu"), allow(dead_code))]
    pub(crate) fn high_water(&self) -> u64 {
        self.high.load(Ordering::Relaxed)
    }

    /// Counts `bytes` freed (or returned to a cache).
    pub(crate) fn sub(&self, bytes: u64) {
        // Every subtraction matches an earlier addition; saturate rather than wrap if a
        // bug ever broke that, so `active` stays meaningful.
        let _ = self.active.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |a| Some(a.saturating_sub(bytes)));
    }

    fn active(&self) -> u64 {
        self.active.load(Ordering::Relaxed)
    }
}

/// The CPU's counts.
pub(crate) static CPU: Ledger = Ledger::new();
/// The GPU's (`gpu(0)`) counts.
pub(crate) static GPU: Ledger = Ledger::new();

fn ledger(device: Device) -> Option<&'static Ledger> {
    match device.kind {
        DeviceKind::Cpu => Some(&CPU),
        DeviceKind::Gpu if device.index == 0 => Some(&GPU),
        DeviceKind::Gpu | DeviceKind::Custom(_) => None,
    }
}

fn ledger_or_err(device: Device, what: &str) -> Result<&'static Ledger> {
    ledger(device).ok_or_else(|| {
        Error::device(format!("lazuli::memory::{what}: {device} has no memory lazuli manages (cpu and gpu(0) do)"))
    })
}

/// Bytes that live buffers hold on `device` now (0 for a device lazuli does not manage).
pub fn active(device: Device) -> u64 {
    ledger(device).map_or(0, Ledger::active)
}

/// The largest [`active`] value on `device` since the start or the last [`reset_peak`].
pub fn peak(device: Device) -> u64 {
    ledger(device).map_or(0, |l| l.peak.load(Ordering::Relaxed))
}

/// Starts [`peak`] again from the current [`active`] value.
pub fn reset_peak(device: Device) {
    if let Some(l) = ledger(device) {
        l.peak.store(l.active(), Ordering::Relaxed);
    }
}

/// Idle bytes `device` keeps for reuse (the GPU's buffer pools; on the CPU, dropped
/// buffers of 1 MiB or more kept for the next allocation of their size).
pub fn cache(device: Device) -> u64 {
    match device.kind {
        DeviceKind::Gpu if device.index == 0 => gpu_cache(),
        DeviceKind::Cpu => crate::backend::cpu::pool::pooled_bytes(),
        DeviceKind::Gpu | DeviceKind::Custom(_) => 0,
    }
}

/// Sets how many idle bytes `device` may keep for reuse (evicting down to it now) and
/// returns the previous limit. By default the limit follows the most bytes held at once,
/// at least 1 GiB on the GPU and with no floor on the CPU (see
/// [What is counted](self#what-is-counted)); a set limit stays fixed. 0 turns the CPU's
/// cache off.
pub fn set_cache_limit(device: Device, bytes: u64) -> Result<u64> {
    ledger_or_err(device, "set_cache_limit")?;
    match device.kind {
        DeviceKind::Gpu => gpu_set_cache_limit(bytes),
        DeviceKind::Cpu => Ok(crate::backend::cpu::pool::set_cap(bytes)),
        DeviceKind::Custom(_) => Ok(0),
    }
}

/// Limits the bytes live buffers may hold on `device` (`None`: no limit) and returns the
/// previous limit. An allocation past it is an [`Error::OutOfMemory`]; buffers already
/// held are not touched, so a limit below [`active`] refuses every new allocation until
/// enough is dropped.
pub fn set_memory_limit(device: Device, bytes: Option<u64>) -> Result<Option<u64>> {
    let l = ledger_or_err(device, "set_memory_limit")?;
    let old = l.limit.swap(bytes.unwrap_or(u64::MAX), Ordering::Relaxed);
    Ok((old != u64::MAX).then_some(old))
}

/// Frees every idle buffer `device` keeps for reuse ([`cache`] becomes 0).
pub fn clear_cache(device: Device) -> Result<()> {
    ledger_or_err(device, "clear_cache")?;
    match device.kind {
        DeviceKind::Gpu => gpu_clear_cache(),
        DeviceKind::Cpu => {
            crate::backend::cpu::pool::clear();
            Ok(())
        }
        DeviceKind::Custom(_) => Ok(()),
    }
}

fn gpu_cache() -> u64 {
    crate::backend::gpu::cached_bytes()
}

fn gpu_set_cache_limit(bytes: u64) -> Result<u64> {
    crate::backend::gpu::set_cache_limit(bytes)
}

fn gpu_clear_cache() -> Result<()> {
    crate::backend::gpu::clear_cache()
}

#[cfg(test)]
mod tests {
    use super::Ledger;

    #[test]
    fn ledger_counts_peak_and_limit() {
        let l = Ledger::new();
        l.add(100);
        l.add(50);
        l.sub(120);
        assert_eq!((l.active(), l.peak.load(std::sync::atomic::Ordering::Relaxed)), (30, 150));
        l.peak.store(l.active(), std::sync::atomic::Ordering::Relaxed);
        assert_eq!(l.high_water(), 150, "a reset peak leaves the high-water mark");
        assert!(l.check(|| "x".into(), u64::MAX - 10).is_ok(), "no limit by default");
        l.limit.store(100, std::sync::atomic::Ordering::Relaxed);
        assert!(l.check(|| "x".into(), 70).is_ok());
        let e = l.check(|| "cpu: zeros output".into(), 71).unwrap_err().to_string();
        assert!(e.contains("71 bytes") && e.contains("100 bytes") && e.contains("30 bytes active"), "{e}");
        l.sub(1000);
        assert_eq!(l.active(), 0, "saturates");
    }
}

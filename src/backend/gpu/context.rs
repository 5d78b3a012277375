//! The wgpu instance, adapter, device and queue: made once, on first use, and leaked.
//!
//! Why leaked: driver threads (lavapipe's queue thread, NVIDIA's completion callbacks)
//! can still run while the process exits. A `Device`/`Queue` dropped by a static
//! destructor waits for idle and fires map callbacks mid-exit, and pointers the driver
//! holds into them dangle (MLX #3126, see shared/facts/teardown.md). A leaked context is
//! never dropped, so nothing it owns is freed under a running driver thread.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::error::{Error, Result};

/// Everything the backend needs from wgpu, alive for the rest of the process.
pub(crate) struct Context {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) limits: wgpu::Limits,
    /// `SHADER_F16` was granted: f16 kernels can be built.
    pub(crate) has_f16: bool,
    /// Cooperative matrices (16x16x16, f16 in, f32 accumulate) on 32-wide subgroups were
    /// granted: the tensor-core f16 matmul can run.
    pub(crate) has_coop: bool,
    /// Timestamp queries were asked for (`LAZULI_GPU_TIMING=1`) and granted: kernels are
    /// timed (see `timing`).
    pub(crate) timing: bool,
    /// Adapter name and backend, for messages.
    pub(crate) description: String,
    pub(crate) info: wgpu::AdapterInfo,
    /// Errors no error scope caught (the uncaptured-error handler records them).
    uncaptured: Mutex<Vec<String>>,
    /// Set when `uncaptured` is not empty, so the check after every dispatch is one
    /// atomic load rather than a lock.
    has_uncaptured: AtomicBool,
    /// Set by the device-lost callback; every later call fails.
    lost: AtomicBool,
    lost_reason: Mutex<String>,
}

/// Set once device creation has begun: from then on exit must end the process itself
/// rather than let the driver's exit-time teardown run (`GpuBackend::exit_policy`).
pub(crate) static CREATION_BEGUN: AtomicBool = AtomicBool::new(false);

/// Set while the device is being created (exit then ends the process at once).
pub(crate) static CREATING: AtomicBool = AtomicBool::new(false);

/// The context, or why there is none. Initialisation (including failure) is attempted
/// once and cached, so a machine without a GPU pays for the probe only once.
pub(crate) fn context() -> Result<&'static Context> {
    static CTX: OnceLock<std::result::Result<&'static Context, String>> = OnceLock::new();
    let made = match CTX.get() {
        Some(made) => made,
        None => {
            // Device creation is device work: the exit hook waits for it, and once exit has
            // begun it is refused (a driver torn down under a half-made device crashed). The
            // refusal is returned as `Error::ShutDown`, not cached: only a real probe result
            // is kept for the rest of the process.
            let _guard = crate::lifecycle::WorkGuard::enter()?;
            CTX.get_or_init(|| {
                CREATION_BEGUN.store(true, Ordering::SeqCst);
                CREATING.store(true, Ordering::SeqCst);
                let ctx = init().map(|c| &*Box::leak(Box::new(c)));
                CREATING.store(false, Ordering::SeqCst);
                ctx
            })
        }
    };
    match made {
        Ok(c) => {
            c.install_handlers();
            Ok(c)
        }
        Err(msg) => Err(Error::Device(msg.clone())),
    }
}

/// Vulkan, Metal and DX12 only: GL/EGL loaded alongside causes exit-time crashes
/// (gfx-rs/wgpu#7655). `WGPU_BACKEND` overrides.
fn backends() -> wgpu::Backends {
    wgpu::Backends::from_env().unwrap_or(wgpu::Backends::VULKAN | wgpu::Backends::METAL | wgpu::Backends::DX12)
}

fn no_adapter(detail: &str) -> String {
    format!(
        "gpu(0): no usable GPU adapter ({detail}). Backends tried: {:?}. Install a Vulkan driver \
         (on Linux without a GPU: the lavapipe software driver, package mesa-vulkan-drivers), or \
         choose a backend with WGPU_BACKEND=vulkan|metal|dx12 and an adapter with WGPU_ADAPTER_NAME",
        backends()
    )
}

fn init() -> std::result::Result<Context, String> {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle().with_env();
    desc.backends = backends();
    // Drivers register exit-time teardown as they load and start (the ICD at instance
    // creation, more at device creation and at first compile). Exit handlers run in
    // reverse order, so the lifecycle hook is registered again after each step, and
    // runs before the driver's own teardown (see `crate::lifecycle`).
    let instance = wgpu::Instance::new(desc);
    crate::lifecycle::driver_step();
    let adapter = pick_adapter(&instance)?;
    crate::lifecycle::driver_step();
    let info = adapter.get_info();
    log::info!(
        "gpu(0): adapter {} ({:?}, {:?}, driver {} {})",
        info.name,
        info.backend,
        info.device_type,
        info.driver,
        info.driver_info
    );
    let coop = wants_coop(&adapter, &info);
    let mut features = adapter.features() & wgpu::Features::SHADER_F16;
    if coop {
        features |= wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX;
    }
    if super::timing::wanted() {
        if adapter.features().contains(wgpu::Features::TIMESTAMP_QUERY) {
            features |= wgpu::Features::TIMESTAMP_QUERY;
        } else {
            log::warn!(
                "gpu(0): LAZULI_GPU_TIMING=1, but {} offers no timestamp queries; kernels are not timed",
                info.name
            );
        }
    }
    let limits = adapter.limits();
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("lazuli"),
        required_features: features,
        required_limits: limits.clone(),
        // SAFETY: wgpu marks experimental features unsafe because they are less tested. Only
        // cooperative matrices are used, only where the adapter reports the exact shape the
        // kernel needs, and `LAZULI_NO_COOP=1` turns them off.
        experimental_features: if coop {
            unsafe { wgpu::ExperimentalFeatures::enabled() }
        } else {
            wgpu::ExperimentalFeatures::disabled()
        },
        ..Default::default()
    }))
    .map_err(|e| format!("gpu(0): {} ({:?}) refused a device: {e}", info.name, info.backend))?;
    crate::lifecycle::driver_step();
    // The instance and adapter are not needed after this; the device keeps what it uses.
    // They are leaked too, so no wgpu object is ever destroyed at exit.
    std::mem::forget(adapter);
    std::mem::forget(instance);
    // The device keeps the adapter's limits; kernels plan their grids from this copy, which
    // LAZULI_GPU_MAX_WORKGROUPS may lower so that tests reach the grid-splitting paths
    // (matmul blocks, 2-D grids, batch chunks) at sizes a software driver runs quickly.
    let mut limits = limits;
    if let Some(cap) = std::env::var("LAZULI_GPU_MAX_WORKGROUPS").ok().and_then(|v| v.parse::<u32>().ok()) {
        limits.max_compute_workgroups_per_dimension = limits.max_compute_workgroups_per_dimension.min(cap.max(1));
    }
    Ok(Context {
        device,
        queue,
        has_f16: features.contains(wgpu::Features::SHADER_F16),
        has_coop: coop,
        timing: features.contains(wgpu::Features::TIMESTAMP_QUERY),
        description: format!("{} ({:?})", info.name, info.backend),
        info,
        limits,
        uncaptured: Mutex::new(Vec::new()),
        has_uncaptured: AtomicBool::new(false),
        lost: AtomicBool::new(false),
        lost_reason: Mutex::new(String::new()),
    })
}

/// Whether to ask for cooperative matrices: the adapter offers them with f16 and 16x16x16
/// f16 x f16 -> f32 fragments, its subgroups are exactly 32 wide (the coop matmul's layout),
/// and `LAZULI_NO_COOP` is not `1`.
fn wants_coop(adapter: &wgpu::Adapter, info: &wgpu::AdapterInfo) -> bool {
    use wgpu::CooperativeScalarType as S;
    let want = wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX | wgpu::Features::SHADER_F16;
    // The first reason that applies, so a user who expected tensor cores can see why not.
    let off = if std::env::var("LAZULI_NO_COOP").is_ok_and(|v| v == "1") {
        Some("LAZULI_NO_COOP=1".to_string())
    } else if !adapter.features().contains(want) {
        Some("the adapter lacks EXPERIMENTAL_COOPERATIVE_MATRIX with SHADER_F16".to_string())
    } else if (info.subgroup_min_size, info.subgroup_max_size) != (32, 32) {
        Some(format!("subgroups are {}..={} wide, not 32", info.subgroup_min_size, info.subgroup_max_size))
    } else if !adapter
        .cooperative_matrix_properties()
        .iter()
        .any(|p| (p.m_size, p.n_size, p.k_size) == (16, 16, 16) && p.ab_type == S::F16 && p.cr_type == S::F32)
    {
        Some("no 16x16x16 f16 x f16 -> f32 fragment".to_string())
    } else {
        None
    };
    match &off {
        Some(why) => {
            log::debug!("gpu(0): cooperative-matrix f16 matmul off ({why}): f16 matmul runs on the SIMT kernel")
        }
        None => log::info!("gpu(0): cooperative-matrix f16 matmul on"),
    }
    off.is_none()
}

/// `WGPU_ADAPTER_NAME` (a case-insensitive substring) picks among the adapters; else
/// wgpu's default choice. wgpu's own env helper panics when the name matches nothing.
fn pick_adapter(instance: &wgpu::Instance) -> std::result::Result<wgpu::Adapter, String> {
    if let Ok(name) = std::env::var("WGPU_ADAPTER_NAME") {
        let want = name.to_lowercase();
        let adapters = pollster::block_on(instance.enumerate_adapters(backends()));
        let names: Vec<String> = adapters.iter().map(|a| a.get_info().name).collect();
        return adapters
            .into_iter()
            .find(|a| a.get_info().name.to_lowercase().contains(&want))
            .ok_or_else(|| no_adapter(&format!("WGPU_ADAPTER_NAME={name} matches none of {names:?}")));
    }
    pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::HighPerformance,
        ..Default::default()
    }))
    .map_err(|e| no_adapter(&e.to_string()))
}

impl Context {
    fn install_handlers(&'static self) {
        static ONCE: OnceLock<()> = OnceLock::new();
        ONCE.get_or_init(|| {
            // Record instead of panicking (wgpu's default handler panics).
            self.device.on_uncaptured_error(std::sync::Arc::new(move |e: wgpu::Error| {
                let mut errs = self.uncaptured.lock().unwrap_or_else(|p| p.into_inner());
                errs.push(e.to_string());
                // Under the lock, so `check` cannot clear the flag between push and store.
                self.has_uncaptured.store(true, Ordering::Release);
            }));
            self.device.set_device_lost_callback(move |reason, msg| self.mark_lost(format!("{reason:?}: {msg}")));
        });
    }

    /// Marks the device lost (the first reason is kept): every later GPU call returns
    /// `Err(Error::Gpu)` naming it at its first check, without touching the device.
    pub(crate) fn mark_lost(&self, why: String) {
        let mut reason = self.lost_reason.lock().unwrap_or_else(|p| p.into_inner());
        if reason.is_empty() {
            *reason = why;
        }
        self.lost.store(true, Ordering::Release);
    }

    /// `Err` if the device was lost (cheap: one atomic load unless it was).
    pub(crate) fn check_lost(&self) -> Result<()> {
        if self.lost.load(Ordering::Acquire) {
            let why = self.lost_reason.lock().unwrap_or_else(|p| p.into_inner()).clone();
            return Err(Error::Gpu(format!("{}: device lost ({why})", self.description)));
        }
        Ok(())
    }

    /// `Err` if the device was lost or an uncaptured error was recorded since the last check.
    pub(crate) fn check(&self) -> Result<()> {
        self.check_lost()?;
        if !self.has_uncaptured.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut errs = self.uncaptured.lock().unwrap_or_else(|p| p.into_inner());
        // Cleared under the lock the handler pushes under, so no error is missed.
        self.has_uncaptured.store(false, Ordering::Release);
        if errs.is_empty() {
            return Ok(());
        }
        let msg = errs.join("; ");
        errs.clear();
        Err(Error::Gpu(msg))
    }

    /// Runs `f` inside validation and out-of-memory error scopes, turning any error
    /// they catch into `Err(Error::Gpu)` that names `what`.
    pub(crate) fn scoped<T>(&self, what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let val = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let out = f();
        let e1 = pollster::block_on(val.pop());
        let e2 = pollster::block_on(oom.pop());
        if let Some(e) = e1 {
            return Err(Error::Gpu(format!("{what}: {e}")));
        }
        if let Some(e) = e2 {
            // The size is the caller's to fill in (see `buffer::alloc`).
            return Err(Error::out_of_memory(format!("gpu: {what} ({e})"), 0, None));
        }
        self.check()?;
        out
    }

    /// Checks a buffer size against the device limits before creating it: one buffer
    /// is bound whole, so the smaller of the two limits applies.
    pub(crate) fn check_size(&self, what: &str, bytes: u64) -> Result<()> {
        let l = &self.limits;
        let limit = l.max_buffer_size.min(l.max_storage_buffer_binding_size);
        if bytes > limit {
            return Err(Error::out_of_memory(
                format!("gpu: {what} (the adapter's max_buffer_size / max_storage_buffer_binding_size)"),
                bytes,
                Some(limit),
            ));
        }
        Ok(())
    }
}

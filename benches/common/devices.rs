//! The devices a bench runs on, shared by the benches.

use lazuli::Device;

/// The CPU, and `gpu(0)` when a stream opens on it; otherwise a line says why the `what`
/// bench skips the GPU.
pub fn devices(what: &str) -> Vec<Device> {
    let mut devices = vec![Device::cpu()];
    match lazuli::new_stream(Device::gpu(0)) {
        Ok(_) => devices.push(Device::gpu(0)),
        Err(e) => println!("skipping gpu {what} bench: {e}"),
    }
    devices
}

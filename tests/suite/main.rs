//! The test suite as one binary: one link instead of one per file keeps `cargo test`'s
//! build to a few hundred MB. Tests that change process-wide state (shut down, destroy
//! the GPU device, set environment limits read once) stay in their own binaries beside it.

mod abuse;
mod async_eval;
mod basics;
mod common;
mod compile;
mod cpu_math;
mod custom_backend;
mod devices;
mod features;
mod format;
mod fusion;
mod gpu_engine;
mod gpu_numerics;
mod gpu_parity;
mod gpu_streams;
mod indexing;
mod interop;
mod io;
mod nn_init;
mod numerics;
mod numpy_diff;
mod ops_elementwise;
mod ops_index;
mod ops_linalg;
mod ops_nn;
mod ops_random;
mod ops_reduce;
mod ops_shape;
mod optim;
mod prop_broadcast;
mod prop_reference;
mod prop_shape;
// Reads the WGSL sources, which only a build with the `gpu` feature has.
#[cfg(feature = "gpu")]
mod shaders_naga;
mod teardown;
mod train;
mod transforms;

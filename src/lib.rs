//! # lazuli
//!
//! A lazy array engine in the spirit of MLX, with a CPU backend and a portable GPU
//! backend on wgpu (Vulkan, Metal, DX12).
//!
//! Data flows one way: user code builds [`Array`]s (ops check shapes and dtypes, nothing
//! runs) → [`eval()`] orders the graph → each node goes to the backend of its stream's
//! device → evaluated nodes drop their inputs. Lifecycle state (the stream registry,
//! shutdown, process exit) sits in one place beside that flow: [`stream`] and
//! [`lifecycle`]. Each [`primitive`] carries its own rules (shape and dtype inference,
//! derivatives, fusion class, decomposition); `ARCHITECTURE.md` in the repository has the
//! layout and the recipes for adding an op, a backend or a transform rule.
//!
//! ```
//! use lazuli::{Array, Device};
//! let a = Array::from_slice(&[1.0f32, 2.0, 3.0, 4.0], &[2, 2])?;
//! let c = a.matmul(&a)?.add(&a)?.exp()?.sum(&[-1], false)?;
//! let d = (&a * 2.0)?;
//! lazuli::eval(&[&c, &d])?;
//! assert_eq!(d.to_vec::<f32>()?, vec![2.0, 4.0, 6.0, 8.0]);
//! # Ok::<(), lazuli::Error>(())
//! ```
//!
//! ## A thread that owns streams
//!
//! At process exit lazuli refuses new work with [`Error::ShutDown`] (README, Lifecycle).
//! A worker thread should take that as "stop now" rather than `unwrap()` it (which
//! prints a panic message at every exit); [`Error::is_shutdown`] also sees it behind an
//! evaluation error:
//!
//! ```
//! use lazuli::{DType, Device};
//! fn work() -> lazuli::Result<()> {
//!     let s = lazuli::new_stream(Device::cpu())?;
//!     lazuli::with_stream(&s, || {
//!         let x = lazuli::random::normal(&lazuli::random::key(1)?, &[32, 32], 0.0, 1.0, DType::F32)?;
//!         x.matmul(&x)?.eval()
//!     })
//! }
//! let worker = std::thread::spawn(|| match work() {
//!     Err(e) if !e.is_shutdown() => eprintln!("worker failed: {e}"),
//!     _ => {} // done, or the process is exiting: nothing to report
//! });
//! worker.join().unwrap();
//! ```
#![warn(missing_docs)]

/// Every Rust snippet of README.md, compiled and run by `cargo test` (doctests).
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

pub mod array;
pub mod backend;
pub mod compile;
pub mod dtype;
pub mod error;
pub mod eval;
pub mod format;
pub mod fusion;
mod interop;
pub mod io;
pub mod lifecycle;
pub mod memory;
pub mod nn;
pub mod ops;
pub mod optim;
pub mod params;
pub mod primitive;
pub mod shape;
pub mod stream;
pub mod transforms;
mod worker;

pub use array::Array;
pub use compile::{Compiled, compile};
pub use dtype::{DType, Element, promote};
pub use error::{Error, Result};
pub use eval::{async_eval, eval, primitives_run, primitives_run_here};
/// The 16-bit float types of [`DType::F16`] and [`DType::BF16`], from the `half` crate.
pub use half::{bf16, f16};
pub use lifecycle::shutdown;
pub use ops::random;
pub use ops::*;
pub use params::Params;
pub use stream::{
    Device, DeviceKind, Stream, close_stream, current_stream, default_device, default_stream, disable_device,
    enable_device, new_stream, set_default_device, synchronize, with_stream,
};
pub use transforms::{
    checkpoint, custom_vjp, grad, grad_params, jvp, stop_gradient, value_and_grad, value_and_grad_params, vjp,
};

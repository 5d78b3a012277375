//! The threads behind [`crate::async_eval`]: a small fixed pool fed by one channel,
//! started on first use, so a program that calls `async_eval` thousands of times holds
//! a handful of threads instead of one per call.
//!
//! A job never waits on a job queued behind it: a queued job has marked no node as
//! running, and `eval` only waits for nodes another thread is actively running. So a
//! bounded pool cannot deadlock. Idle workers sit in `recv`, outside lazuli, so exit
//! does not wait for them (README, Lifecycle).

use std::sync::OnceLock;

use crossbeam::channel::{Sender, unbounded};

use crate::error::{Error, Result};

type Job = Box<dyn FnOnce() + Send>;

/// Workers in the pool: enough to overlap a few streams' evaluations, few enough that
/// thread count stays flat (each evaluation is itself parallel on the CPU backend).
pub(crate) fn pool_size() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(2, 4)
}

// Why a leaked static: the pool lives for the process; worker threads hold the receiver
// and must never see it destroyed by static destruction at exit.
static POOL: OnceLock<std::result::Result<Sender<Job>, String>> = OnceLock::new();

fn start() -> std::result::Result<Sender<Job>, String> {
    let (tx, rx) = unbounded::<Job>();
    for i in 0..pool_size() {
        let rx = rx.clone();
        std::thread::Builder::new()
            .name(format!("lazuli-async-eval-{i}"))
            .spawn(move || {
                while let Ok(job) = rx.recv() {
                    job();
                }
            })
            .map_err(|e| format!("cannot start a worker thread: {e}"))?;
    }
    log::debug!("async_eval pool started with {} workers", pool_size());
    Ok(tx)
}

/// Queues `job` on the pool.
pub(crate) fn submit(job: Job) -> Result<()> {
    match POOL.get_or_init(start) {
        Ok(tx) => tx.send(job).map_err(|_| Error::Device("async_eval: the worker pool has stopped".into())),
        Err(e) => Err(Error::Device(format!("async_eval: {e}"))),
    }
}

//! What starting work on the CPU backend's thread pool costs: a parallel loop over 64
//! empty items on rayon's global pool (the one lazuli's CPU kernels run on; rayon splits
//! the loop among its threads as they wake), right after the previous loop and after the
//! pool has sat idle for a while. A threaded kernel pays this on top of its
//! work, so it bounds how small a product is worth threading (a 256³ matmul is tens of
//! microseconds of arithmetic on 16 cores).
//!
//! ```text
//! cargo run --release --example pool_wake
//! RAYON_NUM_THREADS=4 cargo run --release --example pool_wake
//! ```
//! Prints, for each idle time before a loop, the best, median and mean of 300 loops.

use rayon::prelude::*;
use std::time::{Duration, Instant};

fn main() {
    println!("threads in the pool: {}", rayon::current_num_threads());
    for idle_us in [0u64, 50, 1000] {
        let mut times: Vec<f64> = (0..300)
            .map(|_| {
                if idle_us > 0 {
                    std::thread::sleep(Duration::from_micros(idle_us));
                }
                let t = Instant::now();
                (0..64).into_par_iter().for_each(|i| {
                    std::hint::black_box(i);
                });
                t.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        let mean = times.iter().sum::<f64>() / times.len() as f64;
        times.sort_by(f64::total_cmp);
        println!(
            "idle {idle_us:>4} us before: a loop over 64 empty items takes best {:.1} us, median {:.1} us, mean {mean:.1} us",
            times[0],
            times[times.len() / 2]
        );
    }
}

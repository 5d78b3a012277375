//! The founding problem (MLX #3126) as a program: background threads keep a device busy
//! while `main` returns. lazuli must let the process end with main's status, by no
//! signal, with nothing on stderr.
//!
//! ```text
//! cargo run --release --example teardown -- [--device cpu|gpu] [--size N] [--sleep-ms MS]
//!     [--threads T] [--churn] [--exit-code C] [--runs N]
//! ```
//! Each worker draws a normal `N x N` matrix, prints `START`, then loops
//! `a = matmul(a, a) / max|a @ a|` (so values stay finite), evaluating every step and
//! printing `Step i` every 10 steps. `--churn` instead runs small ops of changing shapes
//! and dtypes, so kernels and buffers are being created while the exit happens. Main
//! sleeps, prints `Main thread exiting.` and returns (or calls
//! `std::process::exit(C)` with `--exit-code C`).
//!
//! `--runs N` is the stress mode: it runs this program N times as a child process with
//! the other options, and prints `crashes: k / N` (a crash: a signal, an unexpected
//! status, or anything on stderr).

use std::time::Duration;

use lazuli::{DType, Device};

struct Opts {
    device: Device,
    size: usize,
    sleep_ms: u64,
    threads: usize,
    churn: bool,
    exit_code: Option<i32>,
    runs: Option<usize>,
}

fn parse() -> Result<Opts, String> {
    let mut o =
        Opts { device: Device::cpu(), size: 256, sleep_ms: 100, threads: 1, churn: false, exit_code: None, runs: None };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--device" => o.device = val()?.parse().map_err(|e| format!("--device: {e}"))?,
            "--size" => o.size = val()?.parse().map_err(|e| format!("--size: {e}"))?,
            "--sleep-ms" => o.sleep_ms = val()?.parse().map_err(|e| format!("--sleep-ms: {e}"))?,
            "--threads" => o.threads = val()?.parse().map_err(|e| format!("--threads: {e}"))?,
            "--exit-code" => o.exit_code = Some(val()?.parse().map_err(|e| format!("--exit-code: {e}"))?),
            "--runs" => o.runs = Some(val()?.parse().map_err(|e| format!("--runs: {e}"))?),
            "--churn" => o.churn = true,
            _ => return Err(format!("unknown option {a}")),
        }
    }
    Ok(o)
}

/// Prints one line in one write. At exit Rust swaps stdout for an unbuffered writer
/// (`std::io::cleanup`), after which `println!` writes the text and the newline apart and
/// another thread's line (lazuli's exit-step line on the shared pipe) can land in between:
/// seen in CI as "Step lazuli: exit begins ..." followed by "2650".
fn say(line: &str) {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(format!("{line}\n").as_bytes());
}

/// The MLX #3126 loop. Returns when lazuli refuses work because the process is exiting.
fn matmul_loop(size: usize, seed: u64) -> lazuli::Result<()> {
    let key = lazuli::random::key(seed)?;
    let mut a = lazuli::random::normal(&key, &[size, size], 0.0, 1.0, DType::F32)?;
    a.eval()?;
    say("START");
    for i in 1..=1000 {
        let b = a.matmul(&a)?;
        a = b.div(&b.abs()?.max(&[], false)?)?;
        a.eval()?;
        if i % 10 == 0 {
            say(&format!("Step {i}"));
        }
    }
    Ok(())
}

/// Small ops of changing shapes and dtypes: new kernels and buffer sizes all the time.
fn churn_loop(seed: u64) -> lazuli::Result<()> {
    let dtypes = [DType::F32, DType::I32, DType::U32];
    say("START");
    for i in 1..=100_000usize {
        let (r, c) = (i % 13 + 1, i % 7 + 2);
        let key = lazuli::random::key(seed + i as u64)?;
        let x = lazuli::random::uniform(&key, &[r, c], 0.0, 10.0, DType::F32)?.astype(dtypes[i % 3])?;
        let y = x.transpose(&[1, 0])?.sum(&[0], false)?.add(&x.max(&[1], false)?)?;
        y.eval()?;
        let _ = y.astype(DType::F32)?.to_vec::<f32>()?;
        if i % 10 == 0 {
            say(&format!("Step {i}"));
        }
    }
    Ok(())
}

fn worker(o: &Opts, t: usize) -> lazuli::Result<()> {
    let stream = lazuli::new_stream(o.device)?;
    lazuli::with_stream(&stream, || if o.churn { churn_loop(t as u64) } else { matmul_loop(o.size, t as u64) })
}

fn stress(runs: usize) -> i32 {
    let exe = std::env::current_exe().expect("own path");
    // Pass every option but `--runs N` to the children.
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = args.iter().position(|a| a == "--runs") {
        args.drain(i..i + 2);
    }
    let expected = args.iter().position(|a| a == "--exit-code").map_or(0, |i| args[i + 1].parse().unwrap_or(0));
    let mut crashes = 0;
    for n in 0..runs {
        let out = std::process::Command::new(&exe).args(&args).output().expect("spawn child");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let unexpected: Vec<&str> = stderr.lines().filter(|l| !harmless(l)).collect();
        if out.status.code() != Some(expected) || !unexpected.is_empty() {
            crashes += 1;
            eprintln!("run {n}: status {:?}, stderr: {:?}", out.status, unexpected);
        }
    }
    println!("crashes: {crashes} / {runs}");
    i32::from(crashes > 0)
}

/// Lines drivers print on their own (lavapipe warns it is not conformant).
pub fn harmless(line: &str) -> bool {
    line.contains("lavapipe is not a conformant vulkan implementation") || line.contains("XDG_RUNTIME_DIR")
}

fn main() {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("teardown: {e}");
            std::process::exit(2);
        }
    };
    if let Some(runs) = o.runs {
        std::process::exit(stress(runs));
    }
    let o = Box::leak(Box::new(o));
    for t in 0..o.threads {
        let o: &'static Opts = o;
        std::thread::spawn(move || match worker(o, t) {
            // The process began to exit under us: lazuli refused new work, as designed. The
            // refusal may come wrapped (a GPU submission reports it as a device error), so ask
            // for the root cause rather than matching one variant.
            Err(e) if !e.is_shutdown() => eprintln!("worker {t}: {e}"),
            _ => {}
        });
    }
    std::thread::sleep(Duration::from_millis(o.sleep_ms));
    say("Main thread exiting.");
    if let Some(code) = o.exit_code {
        std::process::exit(code);
    }
}

//! Process exit with work in flight: runs `examples/teardown.rs` as a child process across
//! variants and checks every exit (MLX #3126). `cargo test` builds the example first.

use crate::common;

use std::path::PathBuf;
use std::process::Command;

fn example() -> PathBuf {
    // target/<profile>/deps/teardown-<hash> -> target/<profile>/examples/teardown
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap().join("examples");
    let path = dir.join(format!("teardown{}", std::env::consts::EXE_SUFFIX));
    if !path.exists() {
        // `cargo test` builds examples, but `cargo test --test teardown` does not.
        // Built in this test binary's profile, where `path` looks for it.
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut args = vec!["build", "--example", "teardown"];
        if dir.parent().is_some_and(|p| p.ends_with("release")) {
            args.push("--release");
        }
        let ok = Command::new(cargo).args(&args).status().is_ok_and(|s| s.success());
        assert!(ok && path.exists(), "could not build {}", path.display());
    }
    path
}

/// Lines drivers print on their own (lavapipe warns it is not conformant).
fn harmless(line: &str) -> bool {
    line.contains("lavapipe is not a conformant vulkan implementation") || line.contains("XDG_RUNTIME_DIR")
}

struct Variant {
    args: Vec<String>,
    threads: usize,
    status: i32,
}

fn variant(device: &str, extra: &[&str], threads: usize, sleep_ms: u64, status: i32) -> Variant {
    let mut args: Vec<String> =
        ["--device", device, "--threads", &threads.to_string(), "--sleep-ms", &sleep_ms.to_string()]
            .iter()
            .map(|s| s.to_string())
            .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    if status != 0 {
        args.extend(["--exit-code".to_string(), status.to_string()]);
    }
    Variant { args, threads, status }
}

fn check(v: &Variant) {
    // stdout and stderr share one pipe, so lines keep their order: the exit-step lines
    // that LAZULI_DEBUG_EXIT prints on stderr mark when exit really began (main's last
    // line only says it is about to return; a loaded machine may run steps in between).
    let (mut reader, writer) = std::io::pipe().unwrap();
    let mut cmd = Command::new(example());
    cmd.args(&v.args)
        .env("XDG_RUNTIME_DIR", "/tmp")
        .env("LAZULI_DEBUG_EXIT", "1")
        .stdout(writer.try_clone().unwrap())
        .stderr(writer);
    let mut child = cmd.spawn().unwrap();
    // The parent's copies of the write end must close, or the read never ends.
    drop(cmd);
    let mut out = String::new();
    std::io::Read::read_to_string(&mut reader, &mut out).unwrap();
    let status = child.wait().unwrap();
    let ctx = format!("args {:?}\nstatus {status:?}\noutput:\n{out}", v.args);
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), None, "killed by a signal: {ctx}");
    }
    assert_eq!(status.code(), Some(v.status), "unexpected exit status: {ctx}");
    let lines: Vec<&str> = out.lines().collect();
    let expected = |l: &str| {
        l == "START" || l == "Main thread exiting." || l.starts_with("Step ") || l.starts_with("lazuli: exit")
    };
    let unexpected: Vec<&&str> = lines.iter().filter(|l| !expected(l) && !harmless(l)).collect();
    assert!(unexpected.is_empty(), "unexpected output: {ctx}");
    assert!(lines.contains(&"Main thread exiting."), "no exit line: {ctx}");
    let exit_at = lines
        .iter()
        .position(|l| l.starts_with("lazuli: exit begins"))
        .unwrap_or_else(|| panic!("no exit step line: {ctx}"));
    // A step already running when exit began may still finish; no new one may start.
    let late = lines[exit_at..].iter().filter(|l| l.starts_with("Step")).count();
    assert!(late <= v.threads, "{late} Step lines after exit began: {ctx}");
}

fn variants(device: &str, size: &str) -> Vec<Variant> {
    let mut v = Vec::new();
    for sleep in [0, 10, 30, 60, 100, 150, 200] {
        for threads in [1, 2] {
            v.push(variant(device, &["--size", size], threads, sleep, 0));
        }
    }
    for sleep in [0, 50, 100, 200] {
        v.push(variant(device, &["--churn"], 1, sleep, 0));
        v.push(variant(device, &["--churn"], 2, sleep, 0));
    }
    for sleep in [0, 50, 100] {
        v.push(variant(device, &["--size", size], 1, sleep, 3));
        v.push(variant(device, &["--churn"], 1, sleep, 7));
    }
    v
}

#[test]
fn cpu_exits_cleanly_with_work_in_flight() {
    let vs = variants("cpu", "128");
    assert!(vs.len() >= 28);
    for v in &vs {
        check(v);
    }
}

#[test]
fn gpu_exits_cleanly_with_work_in_flight() {
    if !common::gpu_available() {
        return;
    }
    let vs = variants("gpu", "64");
    for v in &vs {
        check(v);
    }
}

//! What one reading of a service's accept-queue drops costs (svcbench takes one before and one after
//! each step): a Python listener holding N loopback connections opened here, its drops read 20 times.
//! `cargo run --profile ci --example listen_drops_cost -- 9000` (raise `ulimit -n` first); bench/README.md.
use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const HOLDER: &str = r#"
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(4096)
print(s.getsockname()[1], flush=True)
held = []
while True:
    c, _ = s.accept(); held.append(c)
"#;

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(9000);
    let mut child = Command::new("python3").args(["-c", HOLDER]).stdout(Stdio::piped()).spawn().expect("python3");
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().expect("its output")).read_line(&mut line).expect("its port");
    let port: u16 = line.trim().parse().expect("a port");
    let pid = child.id() as i32;
    let conns: Vec<TcpStream> =
        (0..n).map(|_| TcpStream::connect(("127.0.0.1", port)).expect("a connection")).collect();
    std::thread::sleep(Duration::from_secs(2));
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count());
    let rows = std::fs::read_to_string("/proc/net/tcp").map_or(0, |t| t.lines().count());
    let reps = 20;
    let t = Instant::now();
    let mut drops = None;
    for _ in 0..reps {
        drops = svcbench::sandbox::listen_queue::drops(&[pid]);
    }
    let reading = t.elapsed() / reps;
    let t = Instant::now();
    for _ in 0..reps {
        let _ = std::fs::read_to_string("/proc/net/tcp");
    }
    let table = t.elapsed() / reps;
    println!(
        "{n} connections: the service's descriptors {fds}, /proc/net/tcp rows {rows}; drops {drops:?} read in \
         {:.1} ms (the table alone read in {:.1} ms)",
        reading.as_secs_f64() * 1e3,
        table.as_secs_f64() * 1e3
    );
    drop(conns);
    let _ = child.kill();
    let _ = child.wait();
}

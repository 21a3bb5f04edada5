//! A link's delay line: packets between two parts pass through a TUN device in each part's namespace, and
//! svcbench carries them across after the link's delay, with its jitter and loss — netem's job, done in
//! user space because kernels built without `sch_netem` (this project's VMs among them) cannot do it in
//! the kernel. The parts keep their addresses: a host route in each namespace sends the traffic for the
//! other part through the TUN device instead of the bridge.
//!
//! Each direction has a reader (TUN → queue, stamped with its due time) and a writer (queue → the other
//! TUN at the due time), so a slow write never delays the next read. Packets stay in order, as on a wire.
//! Each direction's queue holds at most [`MAX_IN_FLIGHT_BYTES`]: a packet that would pass it is dropped
//! and counted with the link's losses, as a router's full buffer would.
use super::link::Link;
use super::netns::{self, NsHandle};
use anyhow::{Context, Result};
use rand::Rng;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// A packet on its way, and when it may leave.
struct InFlight {
    due: Instant,
    bytes: Vec<u8>,
}

/// Bytes one direction of a link holds on their way at most: a 1 Gbit/s link's worth of 64 ms, more than
/// a delay line of a few milliseconds ever holds, and a bound on the memory a flood can take.
pub const MAX_IN_FLIGHT_BYTES: usize = 8 << 20;

/// One direction's packets on their way, and their size.
struct Queue {
    line: Mutex<Line>,
    ready: Condvar,
    capacity: usize,
}

#[derive(Default)]
struct Line {
    packets: VecDeque<InFlight>,
    bytes: usize,
}

impl Queue {
    fn new(capacity: usize) -> Queue {
        Queue { line: Mutex::default(), ready: Condvar::new(), capacity }
    }

    /// Queues `pkt`, or drops it (counted with the link's losses, and as an overflow) when the queue would
    /// hold more than its capacity.
    fn push(&self, pkt: InFlight, c: &LinkCounters) -> bool {
        let mut line = self.line.lock().unwrap();
        if line.bytes + pkt.bytes.len() > self.capacity {
            c.dropped.fetch_add(1, Ordering::Relaxed);
            if c.overflowed.fetch_add(1, Ordering::Relaxed) == 0 {
                crate::errln!(
                    "svcbench: WARNING: a link's delay line holds {} MiB in flight; packets beyond it are dropped \
                     and counted as the link's loss",
                    self.capacity >> 20
                );
            }
            return false;
        }
        line.bytes += pkt.bytes.len();
        line.packets.push_back(pkt);
        drop(line);
        self.ready.notify_one();
        true
    }

    /// The next packet, waiting up to `wait` for one.
    fn pop(&self, wait: Duration) -> Option<InFlight> {
        let mut line = self.line.lock().unwrap();
        if line.packets.is_empty() {
            line = self.ready.wait_timeout(line, wait).unwrap().0;
        }
        let pkt = line.packets.pop_front()?;
        line.bytes -= pkt.bytes.len();
        Some(pkt)
    }
}

/// Packets carried and dropped, both directions together.
#[derive(Default)]
pub struct LinkCounters {
    pub carried: AtomicU64,
    /// Every packet that did not cross: the link's loss, and the overflows of its queue.
    pub dropped: AtomicU64,
    /// Of those, the packets dropped because the queue held [`MAX_IN_FLIGHT_BYTES`].
    pub overflowed: AtomicU64,
}

pub struct Relay {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
    pub counters: Arc<LinkCounters>,
    /// What the link does now; a study with a link axis changes it between runs ([`Relay::set`]).
    shape: Arc<Shape>,
}

/// A link's delay, jitter and loss, read by its readers for every packet and set between runs.
#[derive(Default)]
struct Shape {
    delay_ns: AtomicU64,
    jitter_ns: AtomicU64,
    loss_bits: AtomicU64,
}

impl Shape {
    fn set(&self, l: &Link) {
        self.delay_ns.store((l.delay_ms * 1e6) as u64, Ordering::Relaxed);
        self.jitter_ns.store((l.jitter_ms * 1e6) as u64, Ordering::Relaxed);
        self.loss_bits.store((l.loss_pct / 100.0).to_bits(), Ordering::Relaxed);
    }

    /// One direction's share: half the round trip's delay and jitter, and the loss.
    fn direction(&self) -> Direction {
        Direction {
            delay: Duration::from_nanos(self.delay_ns.load(Ordering::Relaxed) / 2),
            jitter: Duration::from_nanos(self.jitter_ns.load(Ordering::Relaxed) / 2),
            loss: f64::from_bits(self.loss_bits.load(Ordering::Relaxed)),
        }
    }
}

/// One end of a link: a part's namespace, its TUN device's name, and the other part's address.
pub struct End<'a> {
    pub ns: &'a Arc<NsHandle>,
    pub own_addr: std::net::Ipv4Addr,
    pub tun: String,
}

/// Opens a TUN device inside `ns` (the device is made in the namespace of the thread that opens it).
fn open_tun(ns: &NsHandle, name: &str) -> Result<tun::Device> {
    netns::within(Some(ns), || {
        let mut cfg = tun::Configuration::default();
        cfg.tun_name(name).up();
        tun::create(&cfg)
            .with_context(|| format!("cannot create TUN device {name} in {} (needs /dev/net/tun)", ns.name))
    })?
}

impl Relay {
    /// Makes the two TUN devices and their routes, and starts carrying packets. `cpus`: where the relay's
    /// threads run (the generator's and dependencies' CPUs, away from the service under test).
    pub fn start(link: &Link, a: End, b: End, cpus: &[usize]) -> Result<Relay> {
        let dev_a = Arc::new(open_tun(a.ns, &a.tun)?);
        let dev_b = Arc::new(open_tun(b.ns, &b.tun)?);
        // Traffic for the other part goes through the link, from the part's own address.
        for (end, other) in [(&a, &b), (&b, &a)] {
            let dst = format!("{}/32", other.own_addr);
            let src = end.own_addr.to_string();
            netns::ip_in(&end.ns.name, &["route", "add", &dst, "dev", &end.tun, "src", &src])?;
        }
        let stop = Arc::new(AtomicBool::new(false));
        let counters = Arc::new(LinkCounters::default());
        let shape = Arc::new(Shape::default());
        shape.set(link);
        let mut threads = Vec::new();
        for (from, to) in [(dev_a.clone(), dev_b.clone()), (dev_b, dev_a)] {
            let q = Arc::new(Queue::new(MAX_IN_FLIGHT_BYTES));
            let (stop_r, q_r, c_r, cpus_r, shape_r) =
                (stop.clone(), q.clone(), counters.clone(), cpus.to_vec(), shape.clone());
            threads.push(std::thread::spawn(move || {
                pin(&cpus_r);
                read_loop(&from, &q_r, &shape_r, &stop_r, &c_r)
            }));
            let (stop_w, c_w, cpus_w) = (stop.clone(), counters.clone(), cpus.to_vec());
            threads.push(std::thread::spawn(move || {
                pin(&cpus_w);
                write_loop(&to, &q, &stop_w, &c_w)
            }));
        }
        Ok(Relay { stop, threads, counters, shape })
    }

    /// From now on the link delays, varies and drops as `link` says (packets already on their way keep
    /// their due times).
    pub fn set(&self, link: &Link) {
        self.shape.set(link);
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn pin(cpus: &[usize]) {
    if let Some(&c) = cpus.first() {
        let _ = loadgen::limits::pin_current_thread(c);
    }
    // Timers as exact as the kernel allows: the default 50 µs slack would be added to every packet.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1) };
}

/// One direction's share of the link at a moment.
#[derive(Clone, Copy)]
struct Direction {
    delay: Duration,
    jitter: Duration,
    loss: f64,
}

fn read_loop(dev: &tun::Device, q: &Queue, shape: &Shape, stop: &AtomicBool, c: &LinkCounters) {
    let mut rng = rand::thread_rng();
    let mut last_due = Instant::now();
    let mut buf = vec![0u8; 65536];
    while !stop.load(Ordering::Relaxed) {
        let n = match dev.recv_timeout(&mut buf, Duration::from_millis(100)) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut || e.kind() == std::io::ErrorKind::Interrupted => {
                continue
            }
            Err(_) => return,
        };
        let d = shape.direction();
        if d.loss > 0.0 && rng.gen::<f64>() < d.loss {
            c.dropped.fetch_add(1, Ordering::Relaxed);
            continue;
        }
        let mut delay = d.delay;
        if !d.jitter.is_zero() {
            let j = d.jitter.as_secs_f64() * rng.gen_range(-1.0..=1.0);
            delay = Duration::from_secs_f64((delay.as_secs_f64() + j).max(0.0));
        }
        // In order, as on a wire: a packet never overtakes the one before it.
        let due = (Instant::now() + delay).max(last_due);
        last_due = due;
        q.push(InFlight { due, bytes: buf[..n].to_vec() }, c);
    }
}

fn write_loop(dev: &tun::Device, q: &Queue, stop: &AtomicBool, c: &LinkCounters) {
    while !stop.load(Ordering::Relaxed) {
        let Some(pkt) = q.pop(Duration::from_millis(100)) else { continue };
        let now = Instant::now();
        if pkt.due > now {
            std::thread::sleep(pkt.due - now);
        }
        if dev.send(&pkt.bytes).is_ok() {
            c.carried.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_queue_drops_what_passes_its_bound_and_counts_it_as_loss() {
        let (q, c) = (Queue::new(3000), LinkCounters::default());
        let pkt = |n: usize| InFlight { due: Instant::now(), bytes: vec![0; n] };
        assert!(q.push(pkt(1500), &c) && q.push(pkt(1500), &c));
        assert!(!q.push(pkt(1), &c), "3000 bytes in flight: not one more");
        assert_eq!((c.dropped.load(Ordering::Relaxed), c.overflowed.load(Ordering::Relaxed)), (1, 1));
        // What leaves makes room again, to the byte.
        assert_eq!(q.pop(Duration::ZERO).map(|p| p.bytes.len()), Some(1500));
        assert!(q.push(pkt(1500), &c) && !q.push(pkt(1), &c));
        assert_eq!(c.dropped.load(Ordering::Relaxed), 2);
        assert_eq!(q.line.lock().unwrap().bytes, 3000);
    }
}

//! A link's delay line: packets between two parts pass through a TUN device in each part's namespace, and
//! svcbench carries them across after the link's delay, with its jitter and loss — netem's job, done in
//! user space because kernels built without `sch_netem` (this project's VMs among them) cannot do it in
//! the kernel. The parts keep their addresses: a host route in each namespace sends the traffic for the
//! other part through the TUN device instead of the bridge.
//!
//! Each direction has a reader (TUN → queue, stamped with its due time) and a writer (queue → the other
//! TUN at the due time), so a slow write never delays the next read. Packets stay in order, as on a wire.
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

#[derive(Default)]
struct Queue {
    packets: Mutex<VecDeque<InFlight>>,
    ready: Condvar,
}

/// Packets carried and dropped, both directions together.
#[derive(Default)]
pub struct LinkCounters {
    pub carried: AtomicU64,
    pub dropped: AtomicU64,
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
            let q = Arc::new(Queue::default());
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
        q.packets.lock().unwrap().push_back(InFlight { due, bytes: buf[..n].to_vec() });
        q.ready.notify_one();
    }
}

fn write_loop(dev: &tun::Device, q: &Queue, stop: &AtomicBool, c: &LinkCounters) {
    while !stop.load(Ordering::Relaxed) {
        let next = {
            let mut p = q.packets.lock().unwrap();
            if p.is_empty() {
                p = q.ready.wait_timeout(p, Duration::from_millis(100)).unwrap().0;
            }
            p.pop_front()
        };
        let Some(pkt) = next else { continue };
        let now = Instant::now();
        if pkt.due > now {
            std::thread::sleep(pkt.due - now);
        }
        if dev.send(&pkt.bytes).is_ok() {
            c.carried.fetch_add(1, Ordering::Relaxed);
        }
    }
}

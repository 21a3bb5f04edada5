//! The `svcbench load` command: flags, their checks, and the run's output.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context, Result};

use crate::client::pacing::Pacing;
use crate::config::{split_url, LoadConfig, Model, MAX_DURATION, MAX_START_DELAY, MAX_TIMEOUT};
use crate::models::RateRamp;
use crate::models::{LoadModel, Open, Ramp};
use crate::request::StatusSet;
use crate::request::{RequestMix, RequestTemplate, ValueList, ValueOrder};
use crate::{histogram, limits, printer};

const AFTER_HELP: &str = "\
Closed model (default): -c connections each keep one request in flight, like wrk.
Open model: --rate R (or --rate A:B to ramp) sends requests at fixed times whatever the
server does, like wrk2; latency counts from the intended send time, and requests that had to
wait for a connection are reported as sent late. --ramp FROM..TO is the open model with its
rate rising linearly over the run (like k6's ramping-arrival-rate), to find where it breaks.

Path, header values and body may hold {name} (a value from --values name=FILE, one value per
line) and {unique} (a number never used before in the run).

Exits 1 when no request succeeded.";

/// Flags of `svcbench load`.
#[derive(clap::Args, Debug, Clone)]
#[command(after_help = AFTER_HELP)]
pub struct LoadArgs {
    /// Target URL: http://HOST:PORT/PATH (the path is the request's, unless --mix is given)
    pub url: String,

    /// Connections, each with one request in flight (closed model)
    #[arg(short = 'c', long, value_name = "N")]
    pub connections: Option<usize>,

    /// How long to run: 10s, 1m, 500ms
    #[arg(short = 'd', long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub duration: Duration,

    /// Stop after this many requests (or at the duration, whichever comes first)
    #[arg(short = 'n', long = "requests", value_name = "N")]
    pub requests: Option<u64>,

    /// Event-loop threads [default: the CPUs this process may use]
    #[arg(short = 't', long, value_name = "N")]
    pub threads: Option<usize>,

    /// Open model: requests per second, constant (1000) or ramped over the run (100:2000)
    // A negative rate reaches the rate's own check, which says what is wrong with it, instead of
    // being taken for a flag.
    #[arg(long, value_name = "R|A:B", allow_negative_numbers = true)]
    pub rate: Option<String>,

    /// Open model whose rate rises linearly over the run: FROM..TO requests per second
    #[arg(long, value_name = "FROM..TO", conflicts_with_all = ["rate", "connections", "rate_steps"])]
    pub ramp: Option<String>,

    /// Ramp the rate in N equal steps instead of linearly
    #[arg(long, value_name = "N")]
    pub rate_steps: Option<u32>,

    /// Open model: most connections to open [default: 1024]
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,

    /// Open model: how to wait for a send: timer (sleep) or spin (poll, a whole CPU per thread)
    /// [default: timer]
    #[arg(long, value_name = "HOW")]
    pub pacing: Option<Pacing>,

    /// HTTP method
    #[arg(short = 'm', long, value_name = "METHOD")]
    pub method: Option<String>,

    /// Request header "Name: value" (repeatable)
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,

    /// Request body
    #[arg(long, value_name = "TEXT", conflicts_with = "body_file")]
    pub body: Option<String>,

    /// Request body read from a file
    #[arg(long, value_name = "FILE")]
    pub body_file: Option<PathBuf>,

    /// Values for {name} in the request, one per line (repeatable)
    #[arg(long = "values", value_name = "NAME=FILE")]
    pub values: Vec<String>,

    /// How --values lists are drawn: random (seeded) or round-robin
    #[arg(long, value_name = "ORDER", default_value = "random")]
    pub values_order: ValueOrder,

    /// Seed for random draws (templates and values): same seed, same requests
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,

    /// Weighted mix of requests from a TOML file ([[request]] tables and [values])
    #[arg(long, value_name = "FILE")]
    pub mix: Option<PathBuf>,

    /// Close the connection after each request (Connection: close)
    #[arg(long)]
    pub no_keepalive: bool,

    /// Request timeout, counted from the send
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_timeout)]
    pub timeout: Duration,

    /// Connect timeout
    #[arg(long, value_name = "DURATION", default_value = "3s", value_parser = parse_timeout)]
    pub connect_timeout: Duration,

    /// Statuses that count as success: ranges and codes, e.g. 200-399,404 [default: the mix
    /// file's `success`, else 200-399]
    #[arg(long, value_name = "LIST")]
    pub success: Option<String>,

    /// Pin the worker threads to these CPUs (e.g. 0 or 0,2 or 0-3)
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,

    /// Print the full report as JSON instead of the summary
    #[arg(long)]
    pub json: bool,

    /// This generator is agent I of N driving one load together: it sends its share of the open
    /// model's schedule and of the {unique} numbers (give each agent the whole rate). Agents'
    /// --json reports merge exactly
    #[arg(long, value_name = "I/N", value_parser = parse_agent)]
    pub agent: Option<(usize, usize)>,

    /// Start at this wall-clock time (seconds since the Unix epoch), so that agents start together
    #[arg(long, value_name = "UNIX_SECONDS")]
    pub start_at: Option<f64>,

    /// End the run (and report) when standard input closes: an agent whose controller went away
    #[arg(long)]
    pub exit_with_stdin: bool,

    /// Write the latency histogram as an HdrHistogram interval log (.hlog, values in µs)
    #[arg(long, value_name = "FILE")]
    pub hdr_out: Option<PathBuf>,
}

/// `I/N` (1-based) to `(index, count)`.
fn parse_agent(s: &str) -> std::result::Result<(usize, usize), String> {
    let bad = || format!("'{s}' is not an agent: write I/N with 1 <= I <= N, e.g. 2/3");
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let (i, n): (usize, usize) = (i.trim().parse().map_err(|_| bad())?, n.trim().parse().map_err(|_| bad())?);
    if i == 0 || i > n {
        return Err(bad());
    }
    Ok((i - 1, n))
}

/// `-d`: a run's length, at most [`MAX_DURATION`].
fn parse_duration(s: &str) -> std::result::Result<Duration, String> {
    parse_duration_within(s, MAX_DURATION, "a day (24h)")
}

/// `--timeout`, `--connect-timeout`: at most [`MAX_TIMEOUT`].
fn parse_timeout(s: &str) -> std::result::Result<Duration, String> {
    parse_duration_within(s, MAX_TIMEOUT, "an hour (1h)")
}

/// A duration no longer than `max` (`most` says it in words), checked before it becomes a
/// `Duration`: a huge number of seconds would not fit one.
pub fn parse_duration_within(s: &str, max: Duration, most: &str) -> std::result::Result<Duration, String> {
    let too_long = || format!("'{s}' is longer than {most}: give at most {}", humantime::format_duration(max));
    // A bare number is seconds, as wrk reads it.
    if let Some(secs) = s.trim().parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0) {
        if secs > max.as_secs_f64() {
            return Err(too_long());
        }
        return Ok(Duration::from_secs_f64(secs));
    }
    let d = humantime::parse_duration(s).map_err(|_| format!("'{s}' is not a duration: write e.g. 10s, 1m, 500ms"))?;
    if d > max {
        return Err(too_long());
    }
    Ok(d)
}

/// Default cap on open-model connections.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// Default closed-model connections (wrk's default).
pub const DEFAULT_CONNECTIONS: usize = 10;

fn parse_header(h: &str) -> Result<(String, String)> {
    match h.split_once(':') {
        Some((name, value)) if !name.trim().is_empty() => Ok((name.trim().to_string(), value.trim().to_string())),
        _ => bail!("header '{h}' must be written 'Name: value'"),
    }
}

impl LoadArgs {
    /// Turns the flags into a run configuration; every error names the flag and the fix.
    pub fn to_config(&self) -> Result<LoadConfig> {
        // Zeros are caught here, naming the flag, before anything connects; the run's own
        // checks (LoadConfig::validate) only know the setting, not how it was given.
        if self.duration.is_zero() {
            bail!("-d/--duration is 0: give a positive duration such as 10s");
        }
        if self.connections == Some(0) {
            bail!("-c/--connections is 0: use at least 1 connection");
        }
        if self.max_connections == Some(0) {
            bail!("--max-connections is 0: allow at least 1 connection, or leave it out for {DEFAULT_MAX_CONNECTIONS}");
        }
        if self.timeout.is_zero() {
            bail!("--timeout is 0: give a positive request timeout such as 10s");
        }
        if self.connect_timeout.is_zero() {
            bail!("--connect-timeout is 0: give a positive connect timeout such as 3s");
        }
        if self.threads == Some(0) {
            bail!("-t/--threads is 0: use at least 1 thread, or leave it out for one per CPU");
        }
        let (target, path) = split_url(&self.url)?;
        let mut mix_success = None;
        let mut mix = match &self.mix {
            Some(file) => {
                if path != "/" {
                    bail!(
                        "with --mix the paths come from the mix file: give the URL without a path (http://HOST:PORT)"
                    );
                }
                if self.method.is_some() || self.body.is_some() || self.body_file.is_some() {
                    bail!(
                        "-m/--body/--body-file describe a single request: put them in the mix file, or leave out --mix"
                    );
                }
                let spec = crate::request::MixSpec::from_toml_file(file)?;
                mix_success = spec.success_set().with_context(|| format!("mix file {}", file.display()))?;
                spec.resolve_file(file)?
            }
            None => {
                let mut t = RequestTemplate::new(self.method.as_deref().unwrap_or("GET"), &path);
                t.body = match (&self.body, &self.body_file) {
                    (Some(b), _) => b.clone().into_bytes(),
                    (None, Some(f)) => {
                        std::fs::read(f).with_context(|| format!("--body-file: cannot read {}", f.display()))?
                    }
                    (None, None) => Vec::new(),
                };
                RequestMix { templates: vec![t], values: Vec::new(), seed: crate::request::DEFAULT_SEED }
            }
        };
        for h in &self.headers {
            let (name, value) = parse_header(h)?;
            for t in &mut mix.templates {
                // -H adds to each request of the mix unless that request sets the header itself.
                if !t.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(&name)) {
                    t.headers.push((name.clone(), value.clone()));
                }
            }
        }
        for v in &self.values {
            let Some((name, file)) = v.split_once('=') else {
                bail!("--values '{v}' must be written NAME=FILE (e.g. --values id=ids.txt)");
            };
            let list = ValueList::from_file(name.trim(), std::path::Path::new(file.trim()), self.values_order)?;
            mix.values.retain(|l| l.name != list.name);
            mix.values.push(list);
        }
        if let Some(seed) = self.seed {
            mix.seed = seed;
        }

        let model = match (&self.rate, &self.ramp) {
            (_, Some(ramp)) => {
                let cap = self.max_connections.unwrap_or(DEFAULT_MAX_CONNECTIONS);
                Model::Ramp(Ramp::parse(ramp, cap).map_err(|e| anyhow::anyhow!("--ramp: {e:#}"))?)
            }
            (Some(rate), None) => {
                if self.connections.is_some() {
                    bail!("-c sets the closed model's connections; with --rate cap connections with --max-connections");
                }
                let mut ramp = RateRamp::parse(rate).map_err(|e| anyhow::anyhow!("--rate: {e:#}"))?;
                if let Some(steps) = self.rate_steps {
                    if steps == 0 {
                        bail!("--rate-steps 0: use at least 1 step, or leave it out for a linear ramp");
                    }
                    if ramp.is_constant() {
                        bail!("--rate-steps needs a ramp: write --rate START:END");
                    }
                    ramp.steps = Some(steps);
                }
                Model::Open(Open {
                    rate: ramp,
                    max_connections: self.max_connections.unwrap_or(DEFAULT_MAX_CONNECTIONS),
                })
            }
            (None, None) => {
                if self.rate_steps.is_some() || self.max_connections.is_some() || self.pacing.is_some() {
                    bail!("--rate-steps, --max-connections and --pacing are for the open model: add --rate R");
                }
                Model::closed(self.connections.unwrap_or(DEFAULT_CONNECTIONS))
            }
        };
        let mut config = LoadConfig::new(target, mix, model);
        config.duration = self.duration;
        config.max_requests = self.requests;
        config.keepalive = !self.no_keepalive;
        config.pacing = self.pacing.unwrap_or_default();
        config.agent = self.agent.unwrap_or((0, 1));
        if let Some(t) = self.start_at {
            config.start_at = Some(start_time(t, SystemTime::now())?);
        }
        config.request_timeout = self.timeout;
        config.connect_timeout = self.connect_timeout;
        config.success = match (&self.success, mix_success) {
            (Some(s), _) => StatusSet::parse(s)?,
            (None, Some(from_mix)) => from_mix,
            (None, None) => StatusSet::default(),
        };
        if let Some(cpus) = &self.cpus {
            let cpus = limits::parse_cpu_list(cpus)?;
            config.threads = cpus.len();
            config.cpu_affinity = Some(cpus);
        }
        if let Some(t) = self.threads {
            config.threads = t;
        }
        // Report the thread count that will actually run.
        config.threads = config.threads.min(config.model.pool().max(1));
        config.validate()?;
        Ok(config)
    }
}

/// `--start-at` (seconds since the Unix epoch) as a time no further than [`MAX_START_DELAY`] after
/// `now`: checked before it becomes a `Duration`, which a huge number would not fit.
fn start_time(t: f64, now: SystemTime) -> Result<SystemTime> {
    if !(t.is_finite() && t > 0.0) {
        bail!("--start-at {t}: give seconds since the Unix epoch, e.g. $(date +%s.%N)");
    }
    let latest = now.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default() + MAX_START_DELAY;
    if t > latest.as_secs_f64() {
        bail!(
            "--start-at {t}: more than {} from now; give a start a few seconds ahead, e.g. $(date -d +5sec +%s)",
            humantime::format_duration(MAX_START_DELAY)
        );
    }
    Ok(SystemTime::UNIX_EPOCH + Duration::from_secs_f64(t))
}

/// Runs `svcbench load`: prints the summary (or JSON) and returns the exit code.
pub fn run_cli(args: &LoadArgs) -> Result<i32> {
    let mut config = args.to_config()?;
    // Ctrl-C ends the run early and still prints what was measured; a second Ctrl-C exits.
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, 130, stop.clone())
            .context("cannot install signal handler")?;
        signal_hook::flag::register(sig, stop.clone()).context("cannot install signal handler")?;
    }
    if args.exit_with_stdin {
        // An agent started over ssh: when svcbench (or the connection) goes, its end of our stdin
        // closes, and the run ends and reports instead of running on unattended.
        let stop = stop.clone();
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        });
    }
    config.stop = Some(stop);
    // Resolved and tried before the header, so a mistyped host or port is one line and nothing runs.
    let addr = config.target.resolve()?;
    let standalone = args.agent.is_none() && args.start_at.is_none() && !args.exit_with_stdin && !args.json;
    if standalone {
        // An agent (or a `--json` report another program reads, as a Job's agents are) is part of a run that
        // counts a dead service's refusals as errors of its step.
        crate::preflight::refuse_closed_port(addr, &args.url, config.connect_timeout)?;
    }

    // Written, never printed: `print!` panics when the reader has gone (`svcbench load … | head`), and a
    // load that ran to its end should end as it would have.
    use std::io::Write as _;
    let header = printer::header(&config, &args.url);
    if args.json {
        let _ = write!(std::io::stderr(), "{header}");
    } else {
        let _ = write!(std::io::stdout(), "{header}");
    }
    let started = SystemTime::now();
    let report = crate::run(&config, None)?;
    if let Some(path) = &args.hdr_out {
        let h = report.histogram()?;
        histogram::write_interval_log(path, &h, started, Duration::from_secs_f64(report.duration_s))?;
    }
    if args.json {
        let _ = writeln!(std::io::stdout(), "{}", serde_json::to_string_pretty(&report)?);
        // Beside the JSON, not in it (the report's fields stay as stored); users and scripts
        // reading stderr still see that the figures are not about the service alone.
        if let Some(line) = printer::not_valid(&report) {
            let _ = writeln!(std::io::stderr(), "{line}");
        }
    } else {
        let _ = write!(std::io::stdout(), "{}", printer::summary(&report));
    }
    Ok(if report.requests_ok > 0 { 0 } else { 1 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: LoadArgs,
    }

    fn config(argv: &[&str]) -> Result<LoadConfig> {
        let cli = Cli::try_parse_from(std::iter::once("load").chain(argv.iter().copied()))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        cli.args.to_config()
    }

    #[test]
    fn closed_and_open_flags() {
        let c = config(&["http://127.0.0.1:8080/x", "-c", "64", "-d", "2s", "-t", "2"]).unwrap();
        assert_eq!(c.model, Model::closed(64));
        assert_eq!((c.duration, c.threads), (Duration::from_secs(2), 2));
        assert_eq!(c.mix.templates[0].path, "/x");
        let c = config(&["http://h:1/", "--rate", "100:500", "--rate-steps", "4", "--max-connections", "50"]).unwrap();
        assert_eq!(
            c.model,
            Model::Open(Open { rate: RateRamp { start: 100.0, end: 500.0, steps: Some(4) }, max_connections: 50 })
        );
    }

    #[test]
    fn a_ramp_is_the_open_model_rising_over_the_run() {
        let c = config(&["http://h:1/", "--ramp", "1000..20000", "-d", "20s", "--max-connections", "64"]).unwrap();
        assert_eq!(c.model, Model::Ramp(Ramp { from: 1000.0, to: 20000.0, max_connections: 64 }));
        let err = |argv: &[&str]| format!("{:#}", config(argv).unwrap_err());
        assert!(err(&["http://h:1/", "--ramp", "1000:2000"]).contains("FROM..TO"));
        assert!(err(&["http://h:1/", "--ramp", "1..2", "--rate", "5"]).contains("--rate"));
    }

    #[test]
    fn bad_flags_say_what_to_do() {
        let err = |argv: &[&str]| format!("{:#}", config(argv).unwrap_err());
        assert!(err(&["http://h:1/", "--rate", "100", "-c", "5"]).contains("--max-connections"));
        assert!(err(&["http://h:1/", "--rate-steps", "3"]).contains("add --rate"));
        assert!(err(&["http://h:1/", "--rate", "fast"]).contains("requests per second"));
        assert!(err(&["http://h:1/", "-H", "NoColon"]).contains("Name: value"));
        assert!(err(&["http://h:1/", "--values", "ids"]).contains("NAME=FILE"));
        assert!(err(&["http://h:1/", "-d", "10x"]).contains("10s"));
        assert!(err(&["http://h:1/{id}"]).contains("--values id=FILE"));
        assert!(err(&["http://h:1/", "--success", "2xx"]).contains("200-399"));
        assert!(err(&["https://h/"]).contains("http://"));
        assert!(err(&["http://h:1/", "-c", "0"]).contains("at least 1"));
    }

    #[test]
    fn zero_and_nan_settings_name_the_flag() {
        let err = |argv: &[&str]| format!("{:#}", config(argv).unwrap_err());
        let e = err(&["http://h:1/", "-d", "0"]);
        assert!(e.contains("-d/--duration") && e.contains("10s"), "{e}");
        let e = err(&["http://h:1/", "-c", "0"]);
        assert!(e.contains("-c/--connections") && e.contains("at least 1"), "{e}");
        let e = err(&["http://h:1/", "--rate", "100", "--max-connections", "0"]);
        assert!(e.contains("--max-connections") && e.contains("at least 1"), "{e}");
        let e = err(&["http://h:1/", "-t", "0"]);
        assert!(e.contains("-t/--threads") && e.contains("at least 1"), "{e}");
        let e = err(&["http://h:1/", "--timeout", "0"]);
        assert!(e.starts_with("--timeout is 0") && e.contains("10s"), "{e}");
        let e = err(&["http://h:1/", "--connect-timeout", "0s"]);
        assert!(e.starts_with("--connect-timeout is 0") && e.contains("3s"), "{e}");
        for rate in ["0", "nan", "NaN", "-5", "0:0", "inf"] {
            let e = err(&["http://h:1/", &format!("--rate={rate}")]);
            assert!(e.starts_with("--rate: ") && e.contains("requests per second"), "{rate}: {e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
        let e = err(&["http://h:1/", "--rate", "-5"]);
        assert!(e.starts_with("--rate: rate '-5' is negative: give a positive number"), "{e}");
    }

    #[test]
    fn durations_timeouts_and_start_times_beyond_their_maximum_are_refused() {
        // Each of these panicked turning the number into a Duration.
        let err = |argv: &[&str]| format!("{:#}", config(argv).unwrap_err());
        for (flag, value, most) in [
            ("-d", "1e20", "a day"),
            ("-d", "25h", "a day"),
            ("--timeout", "1e20", "an hour"),
            ("--timeout", "100000000000years", "an hour"),
            ("--connect-timeout", "2h", "an hour"),
        ] {
            let e = err(&["http://h:1/", flag, value]);
            assert!(e.contains(value) && e.contains(most), "{flag} {value}: {e}");
        }
        for t in ["1e20", "inf", "nan", "-1", "0"] {
            let e = err(&["http://h:1/", &format!("--start-at={t}")]);
            assert!(e.contains("--start-at"), "{t}: {e}");
            assert_eq!(e.lines().count(), 1, "{e}");
        }
        let c = config(&["http://h:1/", "-d", "86400", "--timeout", "1h"]).unwrap();
        assert_eq!((c.duration, c.request_timeout), (MAX_DURATION, MAX_TIMEOUT));
        let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs_f64();
        assert!(config(&["http://h:1/", &format!("--start-at={}", now + 5.0)]).is_ok());
        assert!(config(&["http://h:1/", &format!("--start-at={}", now + 7200.0)]).is_err());
    }

    #[test]
    fn headers_and_body() {
        let c = config(&["http://h:1/p", "-m", "POST", "-H", "X-A: 1", "--body", "{}", "--no-keepalive"]).unwrap();
        let t = &c.mix.templates[0];
        assert_eq!((t.method.as_str(), t.body.as_slice()), ("POST", b"{}".as_slice()));
        assert_eq!(t.headers, vec![("X-A".to_string(), "1".to_string())]);
        assert!(!c.keepalive);
    }

    #[test]
    fn a_mix_files_success_statuses_apply_unless_the_flag_overrides_them() {
        let dir = std::env::temp_dir().join(format!("loadgen-cli-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mix = dir.join("mix.toml");
        std::fs::write(&mix, "success = \"200-399,409\"\n[[request]]\npath = \"/add?name=x\"\n").unwrap();
        let m = mix.to_str().unwrap();
        let c = config(&["http://h:1", "--mix", m]).unwrap();
        assert!(c.success.contains(409) && c.success.contains(200) && !c.success.contains(404));
        let c = config(&["http://h:1", "--mix", m, "--success", "200"]).unwrap();
        assert!(!c.success.contains(409));
        assert!(config(&["http://h:1/"]).unwrap().success.contains(302));
        std::fs::write(&mix, "success = \"ok\"\n[[request]]\npath = \"/\"\n").unwrap();
        let err = format!("{:#}", config(&["http://h:1", "--mix", m]).unwrap_err());
        assert!(err.contains("mix.toml") && err.contains("200-399"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

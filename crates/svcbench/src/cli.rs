//! Command-line interface: one subcommand per job.
use crate::options::{parse_step_duration, LimitsArgs, StartupArgs, MAX_RUNS};
use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(name = "svcbench", version = crate::VERSION, about = "Benchmark lab for HTTP microservices")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Build services, run them under limits through a load profile, and store every figure.
    Run(RunArgs),
    /// Build and start one service, run only its scenario's conformance checks.
    Check(crate::alone::check::CheckArgs),
    /// Build services (and the services of study files) ahead of their runs, several at a time.
    Build(BuildArgs),
    /// Drive HTTP load at a URL (closed model like wrk, open model like wrk2).
    Load(loadgen::cli::LoadArgs),
    /// Print the store as JSON.
    Export(ExportArgs),
    /// The mock third-party service of the `upstream` scenario.
    Upstream(crate::mock_upstream::UpstreamArgs),
    /// Render the store as a self-contained HTML page (charts + tables) or Markdown.
    Report(crate::report::ReportArgs),
    /// Compare two stores (or two filters of one): ratios and verdicts per service and metric.
    Compare(crate::report::CompareArgs),
    /// Each service's figures along its commits over one or several stores (one per CI run), with the change
    /// points e-divisive means finds in them, their size and what else changed there (docs/history.md).
    History(HistoryArgs),
    /// Run a study file: services and variants × a limits axis, interleaved, resumable, with its report.
    Study(StudyArgs),
    /// Two services side by side at the same moment, under the same limits, compared second by second over
    /// several fresh pairs of instances: B/A per metric with its interval and verdict.
    Duet(crate::duet::command::DuetArgs),
    /// A pull request's gate: the service at `--base` against the working tree (or `--head`) by duet, until
    /// it decides: exit 0 no regression, 1 regression, 3 not decided or not measured (docs/ci.md).
    Gate(crate::gate::command::GateArgs),
    /// Print a container service as a Kubernetes Pod spec (YAML): requests equal to limits, its readiness
    /// probe, env and args as a container run fills them (docs/kubernetes.md).
    Pod(PodArgs),
    /// Start a service under its limits with its scenario's dependencies (data loaded), print their URLs,
    /// and keep them until Ctrl-C, for your own tools.
    Up(crate::alone::up::UpArgs),
    /// Print this machine's facts (CPU, memory, kernel) as JSON: svcbench reads them from the generator
    /// hosts of a hosts file over ssh, to store them with the session.
    #[command(hide = true)]
    HostFacts,
    /// Start a scenario's dependencies on this machine for svcbench on another, which reaches it over ssh
    /// (a hosts file's `[store]`), and keep them until the input closes.
    #[command(hide = true)]
    ServeDeps(crate::remote::serve_deps::ServeDepsArgs),
    /// Build and start services on this machine for svcbench on another, which reaches it over ssh (a
    /// hosts file's `[service] at`) and measures them, until the input closes.
    #[command(hide = true)]
    ServeService(crate::remote::serve_service::ServeServiceArgs),
}

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Service folders (each with a svcbench.toml).
    #[arg(required_unless_present = "image")]
    pub services: Vec<PathBuf>,
    /// An image to run as a service without a manifest (with --scenario; docs/containers.md).
    #[arg(long, requires = "scenario")]
    pub image: Option<String>,
    /// The port the --image listens on (default: it is told one in PORT, and HOST the address).
    #[arg(long, requires = "image")]
    pub port: Option<u16>,
    /// Scenario name or folder (default: the services' manifest).
    #[arg(long)]
    pub scenario: Option<String>,
    /// Load profile: a name from profiles/ or a .toml path.
    #[arg(long, default_value = "quick")]
    pub profile: String,
    /// Fresh runs per service, interleaved (A1 B1 A2 B2 …). Three is the fewest `compare` decides on.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=MAX_RUNS as i64))]
    pub runs: u32,
    #[command(flatten)]
    pub limits: LimitsArgs,
    /// How container services start: `engine` (`<engine> run`) or `kube` (their Pod spec, as `svcbench pod`
    /// writes it, played by `podman kube play`; docs/kubernetes.md).
    #[arg(long, value_enum, default_value = "engine")]
    pub runtime: crate::sandbox::container::Runtime,
    /// CPUs of the load generator and dependencies (default: the CPUs the service does not get).
    #[arg(long)]
    pub loadgen_cpuset: Option<String>,
    /// The store (SQLite).
    #[arg(long, default_value = "results/svcbench.db")]
    pub db: PathBuf,
    /// A label for this session (for report filters and compare).
    #[arg(long)]
    pub label: Option<String>,
    /// Override every step's duration (e.g. a short CI variant of a profile).
    #[arg(long, value_parser = parse_step_duration)]
    pub step_duration: Option<std::time::Duration>,
    /// Request mix of the scenario for steps that name none (default: `default`).
    #[arg(long)]
    pub mix: Option<String>,
    #[command(flatten)]
    pub startup: StartupArgs,
    /// Expose the current step's figures in the Prometheus text format at http://ADDR/metrics.
    #[arg(long)]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// Seed of the request value draws (runs are repeatable).
    #[arg(long, default_value_t = crate::runner::SEED)]
    pub seed: u64,
    #[command(flatten)]
    pub session: crate::options::SessionArgs,
}

#[derive(clap::Args, Debug)]
pub struct PodArgs {
    /// The service: a folder or folder@variant whose manifest has a [container].
    pub service: String,
    #[command(flatten)]
    pub limits: LimitsArgs,
    /// The port the service is told in {port} (default: the image's fixed `port`, else 8080).
    #[arg(long)]
    pub port: Option<u16>,
    /// Write the spec to FILE instead of the standard output.
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Use the service and its image as they are built (the tag is the context's as it is now).
    #[arg(long)]
    pub no_build: bool,
    /// Where build logs go.
    #[arg(long, default_value = "results/work/pod")]
    pub work_dir: PathBuf,
}

#[derive(clap::Args, Debug)]
pub struct BuildArgs {
    /// Service folders, `folder@variant` or `folder@*` (the base and every variant).
    pub services: Vec<String>,
    /// Also every service and variant of this study file (repeatable).
    #[arg(long)]
    pub study: Vec<PathBuf>,
    /// Of the study files, the services of their --quick form.
    #[arg(long, requires = "study")]
    pub quick: bool,
    /// Builds at a time; builds with the same tool (cargo, mvn, go, npm) still run one after the other.
    #[arg(long, default_value_t = 2)]
    pub jobs: usize,
    /// Where build logs go.
    #[arg(long, default_value = "results/work/build")]
    pub work_dir: PathBuf,
}

#[derive(clap::Args, Debug)]
pub struct StudyArgs {
    /// The study file, e.g. studies/sizing-hello.toml.
    pub file: PathBuf,
    /// Print the cells, the runs and the estimated duration, and run nothing.
    #[arg(long)]
    pub plan: bool,
    /// Continue a study whose store already holds some of it: cells' completed runs are not run again.
    #[arg(long)]
    pub resume: bool,
    /// With --resume, after the study's profile, step plan or a service's code changed: run it again as a new
    /// generation, its runs stored and reported apart from the earlier ones.
    #[arg(long, requires = "resume")]
    pub new_cell: bool,
    /// With --resume: run again, in their place, the runs that measured nothing of their service (no step
    /// valid, the first left out for the generator's or this machine's reasons only), so each cell gets its
    /// runs with figures; those runs stay in the store and in the report.
    #[arg(long, requires = "resume")]
    pub make_up: bool,
    /// The study's short form (its [quick] table: fewer runs, shorter steps), as CI runs it.
    #[arg(long)]
    pub quick: bool,
    /// The store (default: results/studies/<study>.db).
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Only render the study's report from what the store holds.
    #[arg(long)]
    pub report_only: bool,
    /// The study report (HTML; a .md beside it). Default: beside the store, named after it (<store>.html,
    /// <store>-quick.html for --quick).
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub session: crate::options::SessionArgs,
}

#[derive(clap::Args, Debug)]
pub struct HistoryArgs {
    /// A store (SQLite); repeat for several, e.g. one per CI run.
    #[arg(long = "db", value_name = "STORE", required = true)]
    pub db: Vec<std::path::PathBuf>,
    /// The repository whose history orders the commits the sessions measured (git rev-list --topo-order).
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// Only this service: its name without a `#revision` suffix (repeatable).
    #[arg(long)]
    pub service: Vec<String>,
    /// Metrics, as compare names them (default: cpu_per_req, peak_rps, p99_ms, startup_ms, peak_mem; `all`).
    #[arg(long, value_name = "METRIC[,METRIC…]")]
    pub metric: Vec<String>,
    /// Also write the history as a page: FILE.md or FILE.html (a chart per metric).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Exit 1 when the newest change point of any selected series is a regression.
    #[arg(long, value_enum)]
    pub fail_on: Option<FailOnHistory>,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// A change point stands when its t-test's p is at most this.
    #[arg(long, default_value_t = 0.001)]
    pub max_pvalue: f64,
    /// Sessions per window of the search (a long history is searched in overlapping windows).
    #[arg(long, default_value_t = 50)]
    pub window: usize,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailOnHistory {
    /// The newest change point makes the metric worse.
    Regression,
}

#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    #[arg(long, default_value = "results/svcbench.db")]
    pub db: PathBuf,
    /// JSON output (the only format for now; kept explicit for scripts).
    #[arg(long, default_value_t = true)]
    pub json: bool,
    /// Only this session.
    #[arg(long)]
    pub session: Option<i64>,
    /// Include every sampler reading.
    #[arg(long)]
    pub samples: bool,
}

#[cfg(test)]
mod tests {
    #[test]
    fn run_defaults_are_the_runners() {
        use clap::Parser;
        let super::Command::Run(a) = super::Cli::parse_from(["svcbench", "run", "x"]).command else { unreachable!() };
        assert_eq!(a.startup.startup_timeout, crate::runner::STARTUP_TIMEOUT);
        assert_eq!(a.seed, crate::runner::SEED);
    }
}

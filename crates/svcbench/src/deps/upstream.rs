//! The `upstream` dependency: `svcbench upstream` (the mock third-party service) as a child process in
//! a sandbox of its own, on the load generator's CPUs, so its CPU use is measured and kept off the service.
use super::{opt_u64, reject_unknown, DepContext, Dependency};
use crate::http_client::READ_TIMEOUT;
use crate::sandbox::{process::shell_quote, Limits, Probe, Sandbox};
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

pub struct Upstream {
    sandbox: Sandbox,
    addr: std::net::SocketAddr,
    cpus: usize,
    /// What its control endpoints want (mock_upstream::TOKEN_HEADER): made for this start, handed to it in
    /// its environment, never in a placeholder, so that the service under test cannot steer it.
    token: String,
}

impl Upstream {
    pub fn start(options: &toml::Table, ctx: &DepContext) -> Result<Upstream> {
        reject_unknown("upstream", options, &["kind", "delay_ms"])?;
        let delay = opt_u64(options, "delay_ms", 1000)?;
        let port = crate::readiness::free_port()?;
        let exe = std::env::current_exe()?;
        let limits = Limits { cpuset: ctx.cpuset.clone(), ..Limits::default() };
        let mut sandbox = Sandbox::new(&format!("{}-upstream", ctx.session_tag), &limits, ctx.cgroup);
        sandbox.place_on(&ctx.host);
        let addr = std::net::SocketAddr::from((ctx.host.addr, port));
        let cpus = ctx.cpuset.as_deref().map(crate::cpus::count).unwrap_or(1);
        let log = crate::safe_fs::create_file(&ctx.work_dir.join("upstream.log"))?;
        let token = crate::mock_upstream::new_token();
        sandbox.start(
            &format!(
                "{} upstream --listen {addr} --delay-ms {delay} --threads {cpus}",
                shell_quote(&exe.display().to_string())
            ),
            ctx.work_dir,
            // svcbench's own program: the allow-list alone and its control token, nothing else of svcbench's.
            &{
                let mut env = crate::child::env(crate::child::Needs::Nothing);
                env.push((crate::mock_upstream::TOKEN_ENV.to_string(), token.clone()));
                env
            },
            log,
        )?;
        let up = Upstream { sandbox, addr, cpus, token };
        crate::readiness::wait_http(addr, "/_svcbench/calls", Duration::from_secs(10)).with_context(|| {
            format!("the mock upstream did not answer on {addr}; see {}", ctx.work_dir.join("upstream.log").display())
        })?;
        Ok(up)
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Dependency for Upstream {
    fn placeholders(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("dep.upstream.url".to_string(), self.url())])
    }

    fn probe(&self) -> Option<Arc<dyn Probe>> {
        Some(self.sandbox.probe())
    }

    fn cpus(&self) -> usize {
        self.cpus
    }

    fn set_delay_ms(&mut self, ms: u64) -> Result<bool> {
        let r = crate::http_client::agent(READ_TIMEOUT)
            .put(&format!("{}/_svcbench/delay?ms={ms}", self.url()))
            .set(crate::mock_upstream::TOKEN_HEADER, &self.token)
            .call();
        match r {
            Ok(_) => Ok(true),
            Err(e) => bail!("cannot set the upstream delay: {}", crate::http_client::describe(&e, READ_TIMEOUT)),
        }
    }

    fn calls(&self) -> Option<u64> {
        let agent = crate::http_client::agent(READ_TIMEOUT);
        let resp = agent
            .get(&format!("{}/_svcbench/calls", self.url()))
            .set(crate::mock_upstream::TOKEN_HEADER, &self.token)
            .call()
            .ok()?;
        crate::bounded::text_body(resp, crate::http_client::MAX_SHORT_ANSWER_BYTES).ok()?.trim().parse().ok()
    }
}

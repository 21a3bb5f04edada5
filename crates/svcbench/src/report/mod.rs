//! Placeholder: being written (issue 4). Replaced by the report module.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {}
#[derive(clap::Args, Debug)]
pub struct CompareArgs {}
pub fn run_report(_a: &ReportArgs) -> anyhow::Result<i32> {
    anyhow::bail!("svcbench report is not built yet")
}
pub fn run_compare(_a: &CompareArgs) -> anyhow::Result<i32> {
    anyhow::bail!("svcbench compare is not built yet")
}

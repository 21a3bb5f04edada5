//! One cell of a study's axes: the limits a run is measured under and, with a link axis, the links; and its
//! key in the store (`cpus=0.5 memory=256M`, with a link axis followed by ` links=service-store=delay:2ms`),
//! formatted and read here only.
use crate::network::Link;
use crate::sandbox::Limits;

#[derive(Debug, Clone, PartialEq)]
pub struct AxisCell {
    pub limits: Limits,
    /// None: the session's links (`--link`), the same for every cell.
    pub links: Option<Vec<Link>>,
}

const LINKS: &str = " links=";

impl AxisCell {
    /// The store's key of the cell (`links=none` for a cell of a link axis without delay).
    pub fn key(&self) -> String {
        let l = &self.limits;
        let cpus = l.cpus.map(|c| format!("{c}")).unwrap_or_else(|| "none".into());
        let mem = match l.memory_bytes {
            Some(b) if b % (1 << 30) == 0 => format!("{}G", b >> 30),
            Some(b) => format!("{}M", b >> 20),
            None => "none".into(),
        };
        match &self.links {
            Some(links) => {
                format!("cpus={cpus} memory={mem}{LINKS}{}", crate::network::link::describe(links).replace(' ', ""))
            }
            None => format!("cpus={cpus} memory={mem}"),
        }
    }
}

/// The links part of a cell key (`service-store=delay:2ms`, `none`), where the cell has a link axis.
pub fn links_of_key(key: &str) -> Option<&str> {
    key.split_once(LINKS).map(|(_, links)| links)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_formatted_and_read_back() {
        let limits = Limits { cpus: Some(0.5), memory_bytes: Some(256 << 20), cpuset: None, pids: None };
        let plain = AxisCell { limits: limits.clone(), links: None };
        assert_eq!(plain.key(), "cpus=0.5 memory=256M");
        assert_eq!(links_of_key(&plain.key()), None);
        let none = AxisCell { limits: Limits { memory_bytes: Some(1 << 30), ..limits }, links: Some(Vec::new()) };
        assert_eq!(none.key(), "cpus=0.5 memory=1G links=none");
        assert_eq!(links_of_key(&none.key()), Some("none"));
    }
}

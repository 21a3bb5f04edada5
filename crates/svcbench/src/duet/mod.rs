//! `svcbench duet A B`: two services measured side by side at the same moment, their figures compared slice by
//! slice. verdict.rs: the statistic over pairs; slices.rs: a slice's figures and the rules that invalidate
//! it; deps.rs: the scenario's dependencies, shared or one per side; pair.rs: one pair of fresh instances driven together; alternate.rs: the same pair driven in turns; command.rs: the command; table.rs: its answer.
pub mod alternate;
pub mod command;
pub mod deps;
pub mod pair;
pub mod reading;
pub mod setup;
pub mod slices;
pub mod table;
pub mod verdict;

//! svcbench's change-point detector on series given one per line (numbers separated by spaces or commas),
//! printing the change points' indexes of each, one line per series: what bench/history-vs-otava.sh holds
//! against Apache Otava. `cargo run --profile ci --example change_points < series.txt`.
use std::io::BufRead;
use svcbench::history::change_points::{change_points, Settings};

fn main() {
    let settings = Settings::default();
    for line in std::io::stdin().lock().lines() {
        let line = line.expect("a line of the input");
        let values: Vec<f64> = line
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|t| !t.is_empty())
            .map(|t| t.parse().expect("a number"))
            .collect();
        let found: Vec<String> =
            change_points(&values, &|_| true, &settings).iter().map(|c| c.index.to_string()).collect();
        println!("{}", found.join(" "));
    }
}

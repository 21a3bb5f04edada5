//! One table model for both outputs (HTML and Markdown), and the number formatting they share.
use super::stats::Spread;

#[derive(Debug, Clone, Default)]
pub struct Table {
    /// HTML id, e.g. "summary".
    pub id: String,
    pub caption: String,
    /// A sentence under the table: definitions, how to read it.
    pub note: String,
    pub head: Vec<String>,
    pub rows: Vec<Row>,
}

#[derive(Debug, Clone, Default)]
pub struct Row {
    pub cells: Vec<Cell>,
    /// data-* attributes of the row (e.g. data-service), without the "data-" prefix.
    pub data: Vec<(String, String)>,
}

#[derive(Debug, Clone, Default)]
pub struct Cell {
    pub text: String,
    /// "num", "fail", "ok", "warn" (CSS classes; Markdown marks "fail" in bold).
    pub class: &'static str,
    /// data-* attributes, e.g. the exact median behind a rounded number.
    pub data: Vec<(String, String)>,
    /// Hover text (HTML title), e.g. a failed check's reason.
    pub title: Option<String>,
    /// A row header (the service name).
    pub header: bool,
    /// A second, smaller line under the text (the min–max range in HTML; Markdown appends it in brackets).
    pub sub: Option<String>,
}

impl Cell {
    pub fn text(t: impl Into<String>) -> Cell {
        Cell { text: t.into(), ..Cell::default() }
    }

    pub fn header(t: impl Into<String>) -> Cell {
        Cell { text: t.into(), header: true, ..Cell::default() }
    }

    pub fn num(x: Option<f64>) -> Cell {
        Cell { text: x.map(num).unwrap_or_else(|| "–".into()), class: "num", ..Cell::default() }
    }

    /// Median with its min–max range; the exact figures go into data-median/-min/-max/-n.
    pub fn spread(metric: &str, s: Option<Spread>) -> Cell {
        let mut c = Cell { class: "num", ..Cell::default() };
        c.data.push(("metric".into(), metric.into()));
        match s {
            None => c.text = "–".into(),
            Some(s) => {
                // Whole numbers only when all three are (connections); otherwise one precision rule for all.
                let whole = [s.median, s.min, s.max].iter().all(|x| x.fract() == 0.0);
                let f = |x: f64| if whole { num(x) } else { num_fractional(x) };
                c.text = f(s.median);
                let (lo, hi) = (f(s.min), f(s.max));
                if s.n > 1 && lo != hi {
                    c.sub = Some(format!("{lo}–{hi}"));
                }
                c.data.push(("median".into(), s.median.to_string()));
                c.data.push(("min".into(), s.min.to_string()));
                c.data.push(("max".into(), s.max.to_string()));
                c.data.push(("n".into(), s.n.to_string()));
            }
        }
        c
    }

    /// The text with its second line, on one line: "1,234 (1,200–1,260)".
    pub fn full_text(&self) -> String {
        match &self.sub {
            Some(sub) => format!("{} ({sub})", self.text),
            None => self.text.clone(),
        }
    }

    pub fn class(mut self, class: &'static str) -> Cell {
        self.class = class;
        self
    }

    pub fn title(mut self, t: impl Into<String>) -> Cell {
        self.title = Some(t.into());
        self
    }

    pub fn data(mut self, k: &str, v: impl Into<String>) -> Cell {
        self.data.push((k.into(), v.into()));
        self
    }
}

/// A readable number: thousands separators for large ones, three significant digits for small ones.
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    let a = x.abs();
    // Counts and connections are whole numbers: no decimals that were never measured.
    if x.fract() == 0.0 && a < 1e15 {
        return group_thousands(x);
    }
    num_fractional(x)
}

/// `num` for a measured quantity that merely happens to be whole (9.0 MiB shows as 9.00 next to 7.13).
pub fn num_fractional(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    let a = x.abs();
    if a >= 1000.0 {
        group_thousands(x)
    } else if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else if a == 0.0 {
        "0".into()
    } else {
        let decimals = (2 - a.log10().floor() as i32).clamp(0, 12) as usize;
        format!("{x:.decimals$}")
    }
}

/// Rounds to a whole number and writes it as 12,345.
fn group_thousands(x: f64) -> String {
    let s = format!("{:.0}", x.abs());
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    if x < 0.0 && out != "0" {
        out.insert(0, '-');
    }
    out
}

/// "1,234 (1,200–1,260)": median, and the range when there is more than one run.
pub fn spread(s: &Spread) -> String {
    if s.n <= 1 || s.min == s.max {
        num(s.median)
    } else {
        format!("{} ({}–{})", num(s.median), num(s.min), num(s.max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(num(12345.6), "12,346");
        assert_eq!(num(-1234.0), "-1,234");
        assert_eq!(num(123.4), "123");
        assert_eq!(num(12.34), "12.3");
        assert_eq!(num(1.234), "1.23");
        assert_eq!(num(0.01234), "0.0123");
        assert_eq!(num(0.0), "0");
        assert_eq!(num(64.0), "64");
        assert_eq!(num(2.5), "2.50");
        assert_eq!(num_fractional(9.0), "9.00");
        let c = Cell::spread("m", Some(Spread { median: 8.07, min: 7.13, max: 9.0, n: 2 }));
        assert_eq!((c.text.as_str(), c.sub.as_deref()), ("8.07", Some("7.13–9.00")));
        let c = Cell::spread("m", Some(Spread { median: 96.71, min: 96.70, max: 96.72, n: 2 }));
        assert_eq!((c.text.as_str(), c.sub.as_deref()), ("96.7", None));
        let c = Cell::spread("m", Some(Spread { median: 16.0, min: 16.0, max: 64.0, n: 2 }));
        assert_eq!((c.text.as_str(), c.sub.as_deref()), ("16", Some("16–64")));
        assert_eq!(spread(&Spread { median: 2.5, min: 1.5, max: 3.5, n: 3 }), "2.50 (1.50–3.50)");
        assert_eq!(spread(&Spread { median: 64.0, min: 64.0, max: 64.0, n: 2 }), "64");
    }
}

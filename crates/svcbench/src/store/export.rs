//! `svcbench export --json`: the whole store (or one session) as JSON, rows as objects keyed by column.
use super::Reader;
use anyhow::Result;
use serde_json::{Map, Value};

fn rows(store: &Reader, sql: &str, param: Option<i64>) -> Result<Vec<Value>> {
    let mut stmt = store.conn.prepare(sql)?;
    let names: Vec<String> = stmt.column_names().iter().map(|s| s.to_string()).collect();
    let map_row = |r: &rusqlite::Row| -> rusqlite::Result<Value> {
        let mut obj = Map::new();
        for (i, n) in names.iter().enumerate() {
            let v = match r.get_ref(i)? {
                rusqlite::types::ValueRef::Null => Value::Null,
                rusqlite::types::ValueRef::Integer(x) => Value::from(x),
                rusqlite::types::ValueRef::Real(x) => Value::from(x),
                rusqlite::types::ValueRef::Text(t) => {
                    let s = String::from_utf8_lossy(t).into_owned();
                    // JSON columns (warnings, status_counts, timeline) are exported as JSON, not strings.
                    if (s.starts_with('[') || s.starts_with('{')) && n != "latency_hdr" {
                        serde_json::from_str(&s).unwrap_or(Value::String(s))
                    } else {
                        Value::String(s)
                    }
                }
                rusqlite::types::ValueRef::Blob(b) => Value::from(b.len()),
            };
            obj.insert(n.clone(), v);
        }
        Ok(Value::Object(obj))
    };
    let out = match param {
        Some(p) => stmt.query_map([p], map_row)?.collect::<rusqlite::Result<Vec<_>>>()?,
        None => stmt.query_map([], map_row)?.collect::<rusqlite::Result<Vec<_>>>()?,
    };
    Ok(out)
}

/// Sessions with their services, and runs with their checks and steps nested.
pub fn export(store: &Reader, session: Option<i64>, with_samples: bool) -> Result<Value> {
    let sessions = match session {
        Some(id) => rows(store, "SELECT * FROM session WHERE id = ?1", Some(id))?,
        None => rows(store, "SELECT * FROM session ORDER BY id", None)?,
    };
    let mut out = Vec::new();
    for mut s in sessions {
        let sid = s["id"].as_i64().unwrap_or_default();
        s["services"] =
            Value::Array(rows(store, "SELECT * FROM service WHERE session_id = ?1 ORDER BY name", Some(sid))?);
        let mut runs = rows(store, "SELECT * FROM run WHERE session_id = ?1 ORDER BY id", Some(sid))?;
        for r in &mut runs {
            let rid = r["id"].as_i64().unwrap_or_default();
            r["checks"] = Value::Array(rows(
                store,
                "SELECT seq, name, passed, reason FROM check_result WHERE run_id = ?1 ORDER BY seq",
                Some(rid),
            )?);
            r["figures"] =
                Value::Array(rows(store, "SELECT name, value FROM run_figure WHERE run_id = ?1", Some(rid))?);
            let mut steps = rows(store, "SELECT * FROM step WHERE run_id = ?1 ORDER BY seq", Some(rid))?;
            if with_samples {
                for st in &mut steps {
                    let stid = st["id"].as_i64().unwrap_or_default();
                    st["sample_rows"] = Value::Array(rows(
                        store,
                        "SELECT t_s, cpu_s, mem_mib, rss_mib, threads, throttled_s FROM sample WHERE step_id = ?1",
                        Some(stid),
                    )?);
                }
            }
            r["steps"] = Value::Array(steps);
        }
        s["runs"] = Value::Array(runs);
        out.push(s);
    }
    Ok(serde_json::json!({ "schema_version": super::SCHEMA_VERSION, "sessions": out, "duets": duets(store, session)? }))
}

/// Duets with their verdict lines and slices nested. With `--session`, none: a duet is not a run session.
fn duets(store: &Reader, session: Option<i64>) -> Result<Vec<Value>> {
    if session.is_some() || !store.has_table("duet")? {
        return Ok(Vec::new());
    }
    let mut duets = rows(store, "SELECT * FROM duet ORDER BY id", None)?;
    for d in &mut duets {
        let id = d["id"].as_i64().unwrap_or_default();
        d["lines"] =
            Value::Array(rows(store, "SELECT * FROM duet_line WHERE duet_id = ?1 ORDER BY step, metric", Some(id))?);
        d["slices"] = Value::Array(rows(
            store,
            "SELECT * FROM duet_slice WHERE duet_id = ?1 ORDER BY pair, step, second",
            Some(id),
        )?);
    }
    Ok(duets)
}

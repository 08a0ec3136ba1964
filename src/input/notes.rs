//! What a Trace2 session says about its own process — regions, data, timers, counters — as the
//! model's [`Event::Region`] and [`Event::Data`]. Shared by the Trace2 input (`analyze`) and the
//! live listener (`run --trace2`), so both read a stream the same way.
//!
//! Regions are paired per session and thread: `region_enter` pushes, `region_leave` pops and
//! yields the region (git writes enter/leave properly nested on each thread). A leave with no
//! enter (the stream began mid-region, or `GIT_TRACE2_EVENT_NESTING` dropped the enter) yields
//! a region that starts `t_rel` before the leave. Regions still open at the end (the process was
//! killed) are yielded by [`NoteBuilder::close_open`], ending at the last time seen.

use foldhash::HashMap;

use trace2::{EventKind, Timestamp};

use crate::model::event::{Data, DataValue, Event, Pid, Region};

/// Trace2 times (UTC, microseconds) on the model's clock: `ns = utc_ns - offset_ns`. Live,
/// `offset_ns` is the header's `real_minus_mono`; offline it is 0 (the model's clock is UTC).
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    /// CLOCK_REALTIME − model clock, ns.
    pub offset_ns: i64,
}

impl Clock {
    /// A Trace2 time on the model's clock (0 before its start).
    pub fn ns(&self, t: Timestamp) -> u64 {
        let ns = t.as_micros().saturating_mul(1000) - self.offset_ns as i128;
        ns.clamp(0, u64::MAX as i128) as u64
    }
}

fn secs_to_ns(s: f64) -> u64 {
    if s.is_finite() && s > 0.0 {
        (s * 1e9).round().min(u64::MAX as f64) as u64
    } else {
        0
    }
}

struct Open {
    ts: u64,
    category: String,
    label: String,
    msg: Option<String>,
    nesting: u32,
}

/// Pairs regions and converts data points, per (SID, thread).
#[derive(Default)]
pub struct NoteBuilder {
    /// SID → thread → (process, regions open): looked up by `&str`, no key made per event.
    open: HashMap<String, HashMap<String, (Pid, Vec<Open>)>>,
    last_ts: u64,
}

impl NoteBuilder {
    /// A builder with nothing open.
    pub fn new() -> NoteBuilder {
        NoteBuilder::default()
    }

    /// Takes one event of process `tgid` at `ts` (its time on the model's clock; the caller
    /// decides what to use when the event has none) and returns the model event it completes,
    /// if any. Events that are not about regions or data return `None`.
    pub fn on_event(&mut self, tgid: Pid, ts: u64, ev: &trace2::Event<'_>) -> Option<Event> {
        self.last_ts = self.last_ts.max(ts);
        let thread = ev.thread.as_ref();
        let data = |category: &str, key: &str, value: DataValue| {
            Some(Event::Data {
                tgid,
                data: Data {
                    ts,
                    thread: thread.to_string(),
                    category: category.to_string(),
                    key: key.to_string(),
                    nesting: ev.nesting,
                    value,
                },
            })
        };
        match &ev.kind {
            EventKind::RegionEnter { category, label, msg } => {
                let sid = ev.sid.as_ref();
                if !self.open.contains_key(sid) {
                    self.open.insert(sid.to_string(), HashMap::default());
                }
                let threads = self.open.get_mut(sid)?;
                if !threads.contains_key(thread) {
                    threads.insert(thread.to_string(), (tgid, Vec::new()));
                }
                let slot = threads.get_mut(thread)?;
                slot.0 = tgid;
                slot.1.push(Open {
                    ts,
                    category: category.as_deref().unwrap_or("").to_string(),
                    label: label.as_deref().unwrap_or("").to_string(),
                    msg: msg.as_ref().map(|m| m.to_string()),
                    nesting: ev.nesting,
                });
                None
            }
            EventKind::RegionLeave {
                t_rel,
                category,
                label,
                ..
            } => {
                let open = self
                    .open
                    .get_mut(ev.sid.as_ref())
                    .and_then(|t| t.get_mut(thread))
                    .and_then(|(_, v)| v.pop());
                let region = match open {
                    Some(o) => Region {
                        ts: o.ts.min(ts),
                        end: ts,
                        thread: thread.to_string(),
                        category: o.category,
                        label: o.label,
                        msg: o.msg,
                        nesting: o.nesting,
                    },
                    None => Region {
                        ts: ts.saturating_sub(secs_to_ns(*t_rel)),
                        end: ts,
                        thread: thread.to_string(),
                        category: category.as_deref().unwrap_or("").to_string(),
                        label: label.as_deref().unwrap_or("").to_string(),
                        msg: None,
                        nesting: ev.nesting,
                    },
                };
                Some(Event::Region { tgid, region })
            }
            EventKind::Data {
                category, key, value, ..
            } => data(category, key, DataValue::Text(value.to_string())),
            EventKind::DataJson {
                category, key, value, ..
            } => data(category, key, DataValue::Json(value.to_string())),
            EventKind::Timer {
                per_thread,
                category,
                name,
                intervals,
                t_total,
                t_min,
                t_max,
            } => data(
                category,
                name,
                DataValue::Timer {
                    intervals: *intervals,
                    total_ns: secs_to_ns(*t_total),
                    min_ns: secs_to_ns(*t_min),
                    max_ns: secs_to_ns(*t_max),
                    per_thread: *per_thread,
                },
            ),
            EventKind::Counter {
                per_thread,
                category,
                name,
                count,
            } => data(
                category,
                name,
                DataValue::Counter {
                    count: *count,
                    per_thread: *per_thread,
                },
            ),
            _ => None,
        }
    }

    /// Regions of session `sid` still open, closed at `end` (the session ended without leaving
    /// them: killed, or `exit` called inside a region), innermost first.
    pub fn close_session(&mut self, sid: &str, end: u64) -> Vec<Event> {
        let mut out = Vec::new();
        for (thread, (tgid, stack)) in self.open.remove(sid).unwrap_or_default() {
            {
                out.extend(stack.into_iter().rev().map(|o| Event::Region {
                    tgid,
                    region: Region {
                        ts: o.ts.min(end),
                        end,
                        thread: thread.clone(),
                        category: o.category,
                        label: o.label,
                        msg: o.msg,
                        nesting: o.nesting,
                    },
                }));
            }
        }
        out
    }

    /// Every region still open, each closed at `end(sid)` (its session's end), in one pass
    /// (calling [`close_session`](Self::close_session) per session would be quadratic).
    pub fn close_all_at(&mut self, end: impl Fn(&str) -> u64) -> Vec<Event> {
        let mut out = Vec::new();
        for (sid, threads) in self.open.drain() {
            let end = end(&sid);
            for (thread, (tgid, stack)) in threads {
                out.extend(stack.into_iter().rev().map(|o| Event::Region {
                    tgid,
                    region: Region {
                        ts: o.ts.min(end),
                        end,
                        thread: thread.clone(),
                        category: o.category,
                        label: o.label,
                        msg: o.msg,
                        nesting: o.nesting,
                    },
                }));
            }
        }
        out
    }

    /// Every region still open, closed at the last time seen.
    pub fn close_open(&mut self) -> Vec<Event> {
        let sids: Vec<String> = self.open.keys().cloned().collect();
        let end = self.last_ts;
        let mut out = Vec::new();
        for s in sids {
            out.extend(self.close_session(&s, end));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace2::reader::parse_line;

    fn ev(line: &str) -> trace2::Event<'static> {
        parse_line(line.as_bytes()).unwrap().0
    }

    #[test]
    fn pairs_nested_regions_per_thread_and_converts_data() {
        let mut b = NoteBuilder::new();
        let enter = |l: &str, n: u32| {
            ev(&format!(
                r#"{{"event":"region_enter","sid":"s","thread":"main","nesting":{n},"category":"c","label":"{l}"}}"#
            ))
        };
        assert!(b.on_event(7, 100, &enter("outer", 1)).is_none());
        assert!(b.on_event(7, 150, &enter("inner", 2)).is_none());
        let leave = ev(
            r#"{"event":"region_leave","sid":"s","thread":"main","t_rel":0.00005,"nesting":2,"category":"c","label":"inner"}"#,
        );
        match b.on_event(7, 200, &leave) {
            Some(Event::Region { tgid: 7, region }) => {
                assert_eq!(
                    (region.ts, region.end, region.label.as_str(), region.nesting),
                    (150, 200, "inner", 2)
                )
            }
            other => panic!("{other:?}"),
        }
        let d = ev(
            r#"{"event":"data","sid":"s","thread":"main","nesting":2,"category":"fetch","key":"k","value":"5"}"#,
        );
        match b.on_event(7, 210, &d) {
            Some(Event::Data { data, .. }) => assert_eq!(data.value, DataValue::Text("5".into())),
            other => panic!("{other:?}"),
        }
        // The outer region is still open when the session ends.
        let left = b.close_session("s", 300);
        assert_eq!(left.len(), 1);
        match &left[0] {
            Event::Region { region, .. } => assert_eq!(
                (region.ts, region.end, region.label.as_str()),
                (100, 300, "outer")
            ),
            other => panic!("{other:?}"),
        }
        // A leave with no enter starts t_rel before it.
        let lone = ev(
            r#"{"event":"region_leave","sid":"s","thread":"th01:x","t_rel":0.000001,"nesting":1,"category":"c","label":"l"}"#,
        );
        match b.on_event(7, 5000, &lone) {
            Some(Event::Region { region, .. }) => assert_eq!((region.ts, region.end), (4000, 5000)),
            other => panic!("{other:?}"),
        }
    }
}

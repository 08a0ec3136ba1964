//! Wall-clock timestamps and the three textual shapes git gives them.
//!
//! git prints UTC in the event target (`2024-05-01T12:34:56.123456Z`), UTC in
//! SID components (`20240501T123456.123456Z`) and local time in the normal and
//! perf targets (`12:34:56.123456`). This module formats all three without a
//! date crate; it must never panic, whatever the timestamp.

use std::time::{SystemTime, UNIX_EPOCH};

/// A wall-clock instant with microsecond resolution (seconds since the Unix
/// epoch plus microseconds), the resolution git's `gettimeofday` gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp {
    /// Whole seconds since 1970-01-01T00:00:00Z (may be negative).
    pub secs: i64,
    /// Microseconds within the second, `0..1_000_000`.
    pub micros: u32,
}

impl Timestamp {
    /// The current wall-clock time.
    pub fn now() -> Self {
        Self::from_system_time(SystemTime::now())
    }

    /// Converts a [`SystemTime`], truncating to microseconds.
    pub fn from_system_time(t: SystemTime) -> Self {
        match t.duration_since(UNIX_EPOCH) {
            Ok(d) => Timestamp {
                secs: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
                micros: d.subsec_micros(),
            },
            Err(e) => {
                let d = e.duration();
                let mut secs = -i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
                let mut micros = d.subsec_micros();
                if micros > 0 {
                    secs -= 1;
                    micros = 1_000_000 - micros;
                }
                Timestamp { secs, micros }
            }
        }
    }

    /// Microseconds since the epoch.
    pub fn as_micros(&self) -> i128 {
        i128::from(self.secs) * 1_000_000 + i128::from(self.micros)
    }

    /// Builds a timestamp from microseconds since the epoch.
    pub fn from_micros(us: i128) -> Self {
        let secs = us.div_euclid(1_000_000);
        let micros = us.rem_euclid(1_000_000);
        Timestamp {
            secs: i64::try_from(secs).unwrap_or(if secs < 0 { i64::MIN } else { i64::MAX }),
            micros: u32::try_from(micros).unwrap_or(0),
        }
    }

    /// Adds (possibly negative) seconds, as when rebuilding times from
    /// `version.time + t_abs` in brief streams.
    pub fn add_seconds(&self, s: f64) -> Self {
        if !s.is_finite() {
            return *self;
        }
        // Saturating, and within the years `parse_utc` reads back (0000–9999): `s` comes from
        // files (a `t_abs` of 1e300 must not overflow, nor make a `time` no reader takes).
        const MIN_US: i128 = -62_167_219_200 * 1_000_000; // 0000-01-01T00:00:00Z
        const MAX_US: i128 = 253_402_300_800 * 1_000_000 - 1; // 9999-12-31T23:59:59.999999Z
        let us = self.as_micros().saturating_add((s * 1e6).round() as i128);
        Self::from_micros(us.clamp(MIN_US.min(self.as_micros()), MAX_US.max(self.as_micros())))
    }

    /// Appends `YYYY-MM-DDTHH:MM:SS.uuuuuuZ` (UTC), the event target's `time`.
    pub fn write_utc_extended(&self, out: &mut Vec<u8>) {
        let c = Civil::utc(self.secs);
        push_num(out, c.year, 4);
        out.push(b'-');
        push_num(out, c.month, 2);
        out.push(b'-');
        push_num(out, c.day, 2);
        out.push(b'T');
        push_num(out, c.hour, 2);
        out.push(b':');
        push_num(out, c.min, 2);
        out.push(b':');
        push_num(out, c.sec, 2);
        out.push(b'.');
        push_num(out, i64::from(self.micros), 6);
        out.push(b'Z');
    }

    /// Appends `YYYYMMDDTHHMMSS.uuuuuuZ` (UTC), the time part of a SID.
    pub fn write_sid_utc(&self, out: &mut Vec<u8>) {
        let c = Civil::utc(self.secs);
        push_num(out, c.year, 4);
        push_num(out, c.month, 2);
        push_num(out, c.day, 2);
        out.push(b'T');
        push_num(out, c.hour, 2);
        push_num(out, c.min, 2);
        push_num(out, c.sec, 2);
        out.push(b'.');
        push_num(out, i64::from(self.micros), 6);
        out.push(b'Z');
    }

    /// Appends `HH:MM:SS.uuuuuu` in the local time zone, the normal and perf
    /// targets' time column.
    pub fn write_local_time(&self, out: &mut Vec<u8>) {
        self.write_time_at_offset(self.local_utc_offset(), out);
    }

    /// The local time zone's offset from UTC at this instant, in seconds
    /// east of UTC (0 if the C library cannot tell).
    pub fn local_utc_offset(&self) -> i64 {
        crate::sys::utc_offset_seconds(self.secs)
    }

    /// Appends `HH:MM:SS.uuuuuu` at `utc_offset` seconds east of UTC: the
    /// normal and perf time column for a fixed zone.
    pub fn write_time_at_offset(&self, utc_offset: i64, out: &mut Vec<u8>) {
        let c = Civil::utc(self.secs.saturating_add(utc_offset));
        push_num(out, c.hour, 2);
        out.push(b':');
        push_num(out, c.min, 2);
        out.push(b':');
        push_num(out, c.sec, 2);
        out.push(b'.');
        push_num(out, i64::from(self.micros), 6);
    }

    /// Parses the event target's `time`: `YYYY-MM-DDTHH:MM:SS[.frac](Z|+00:00|+00:00Z)`.
    /// Other producers use other precisions and offsets; any offset is applied.
    pub fn parse_utc(s: &str) -> Option<Self> {
        let b = s.as_bytes();
        if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || (b[10] != b'T' && b[10] != b' ') {
            return None;
        }
        // Every range below has two to four places: all digits, folded as read (no `str::parse`,
        // which was most of this function's time in a Trace2 `analyze`).
        let num = |r: std::ops::Range<usize>| -> Option<i64> {
            b.get(r)?.iter().try_fold(0i64, |v, &c| {
                c.is_ascii_digit().then(|| v * 10 + i64::from(c - b'0'))
            })
        };
        let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
        let (hour, min, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
        if b[13] != b':' || b[16] != b':' || !(1..=12).contains(&month) || !(1..=31).contains(&day) {
            return None;
        }
        let mut i = 19;
        let mut micros: i64 = 0;
        if i < b.len() && b[i] == b'.' {
            i += 1;
            let mut digits = 0;
            while i < b.len() && b[i].is_ascii_digit() {
                if digits < 6 {
                    micros = micros * 10 + i64::from(b[i] - b'0');
                }
                digits += 1;
                i += 1;
            }
            while digits < 6 {
                micros *= 10;
                digits += 1;
            }
        }
        let mut offset: i64 = 0;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            let sign = if b[i] == b'-' { -1 } else { 1 };
            let oh = num(i + 1..i + 3)?;
            let om = if b.get(i + 3) == Some(&b':') {
                num(i + 4..i + 6)?
            } else {
                num(i + 3..i + 5)?
            };
            offset = sign * (oh * 3600 + om * 60);
            i += if b.get(i + 3) == Some(&b':') { 6 } else { 5 };
        }
        if i < b.len() && b[i] == b'Z' {
            i += 1;
        }
        if i != b.len() {
            return None;
        }
        let days = days_from_civil(year, month, day);
        let secs = days * 86400 + hour * 3600 + min * 60 + sec - offset;
        Some(Timestamp {
            secs,
            micros: u32::try_from(micros).unwrap_or(0),
        })
    }
}

struct Civil {
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    min: i64,
    sec: i64,
}

impl Civil {
    fn utc(secs: i64) -> Civil {
        let days = secs.div_euclid(86400);
        let rem = secs.rem_euclid(86400);
        let (year, month, day) = civil_from_days(days);
        Civil {
            year,
            month,
            day,
            hour: rem / 3600,
            min: (rem % 3600) / 60,
            sec: rem % 60,
        }
    }
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian
/// (Howard Hinnant's public-domain algorithm).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Appends `v` zero-padded to `width` digits (like `%0Nd`; wider values are
/// written in full, negative ones with a sign).
pub(crate) fn push_num(out: &mut Vec<u8>, v: i64, width: usize) {
    let mut buf = [0u8; 24];
    let mut i = buf.len();
    let neg = v < 0;
    let mut u = v.unsigned_abs();
    loop {
        i -= 1;
        buf[i] = b'0' + (u % 10) as u8;
        u /= 10;
        if u == 0 {
            break;
        }
    }
    let digits = buf.len() - i;
    if neg {
        out.push(b'-');
    }
    for _ in digits..width {
        out.push(b'0');
    }
    out.extend_from_slice(&buf[i..]);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// Found by fuzzing the reader (`cargo fuzz run trace2_reader`): a brief stream's `t_abs`
    /// can be anything.
    #[test]
    fn adding_huge_seconds_saturates() {
        let t = Timestamp {
            secs: 1_800_000_000,
            micros: 42,
        };
        // Saturates at the last (first) instant of the years a `time` can be written in and
        // read back: 9999 (0000).
        assert_eq!(t.add_seconds(1e300).secs, 253_402_300_799);
        assert_eq!(t.add_seconds(-1e300).secs, -62_167_219_200);
        assert_eq!(t.add_seconds(f64::INFINITY), t);
        assert_eq!(t.add_seconds(1.5).as_micros(), t.as_micros() + 1_500_000);
    }

    #[test]
    fn utc_shapes() {
        let t = Timestamp {
            secs: 1_800_000_000,
            micros: 42,
        };
        let mut v = Vec::new();
        t.write_utc_extended(&mut v);
        assert_eq!(String::from_utf8(v).unwrap(), "2027-01-15T08:00:00.000042Z");
        let mut v = Vec::new();
        t.write_sid_utc(&mut v);
        assert_eq!(String::from_utf8(v).unwrap(), "20270115T080000.000042Z");
        let mut v = Vec::new();
        t.write_time_at_offset(-5 * 3600 - 1800, &mut v);
        assert_eq!(String::from_utf8(v).unwrap(), "02:30:00.000042");
    }

    #[test]
    fn parse_roundtrip_and_offsets() {
        let t = Timestamp {
            secs: 1_800_000_000,
            micros: 42,
        };
        assert_eq!(Timestamp::parse_utc("2027-01-15T08:00:00.000042Z"), Some(t));
        assert_eq!(Timestamp::parse_utc("2027-01-15T08:00:00.000042+00:00"), Some(t));
        assert_eq!(Timestamp::parse_utc("2027-01-15T08:00:00.000042+00:00Z"), Some(t));
        assert_eq!(Timestamp::parse_utc("2027-01-15T09:00:00.000042+01:00"), Some(t));
        assert_eq!(Timestamp::parse_utc("2027-01-15T08:00:00.0000421Z"), Some(t));
        assert_eq!(Timestamp::parse_utc("garbage"), None);
        assert_eq!(Timestamp::parse_utc("2027-13-15T08:00:00Z"), None);
    }

    #[test]
    fn before_epoch() {
        let t = Timestamp::from_micros(-1);
        assert_eq!(
            t,
            Timestamp {
                secs: -1,
                micros: 999_999
            }
        );
        let mut v = Vec::new();
        t.write_utc_extended(&mut v);
        assert_eq!(String::from_utf8(v).unwrap(), "1969-12-31T23:59:59.999999Z");
    }
}

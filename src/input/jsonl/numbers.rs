//! Numbers as the format has them: decimal seconds to nanoseconds exactly (no float), any JSON
//! number form scaled in decimal, counts, context switches.

use super::*;

/// Decimal seconds (`12.000000345`, at most nine decimals, no sign or exponent) as
/// nanoseconds, exactly.
pub fn parse_seconds(s: &[u8]) -> Option<u64> {
    let (int, frac) = match s.iter().position(|&b| b == b'.') {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, &s[s.len()..]),
    };
    if int.is_empty() || frac.len() > 9 || (s.len() > int.len() && frac.is_empty()) {
        return None;
    }
    let mut secs: u64 = 0;
    for &b in int {
        if !b.is_ascii_digit() {
            return None;
        }
        secs = secs.checked_mul(10)?.checked_add((b - b'0') as u64)?;
    }
    let mut ns: u64 = 0;
    for i in 0..9 {
        let d = match frac.get(i) {
            Some(&b) if b.is_ascii_digit() => (b - b'0') as u64,
            Some(_) => return None,
            None => 0,
        };
        ns = ns * 10 + d;
    }
    secs.checked_mul(1_000_000_000)?.checked_add(ns)
}

/// A JSON number (its grammar already checked) times 10^`scale`, as its sign and magnitude
/// (`true` for a `-`), in decimal arithmetic, never through a float: `5.3688e-05` at scale 9
/// (seconds to nanoseconds) is 53688. Digits below the unit are rounded to the nearest, ties to
/// even, when `round`; else they must be zeros (an integer written `3.0` or `3e0`) or it is
/// `None`. `None` too when the magnitude exceeds `u64`. Time is linear in the number's length,
/// whatever its exponent.
pub(super) fn scaled(n: &[u8], scale: u32, round: bool) -> Option<(bool, u64)> {
    let (neg, n) = match n.strip_prefix(b"-") {
        Some(rest) => (true, rest),
        None => (false, n),
    };
    let e_at = n.iter().position(|&c| c == b'e' || c == b'E').unwrap_or(n.len());
    let (mantissa, e) = n.split_at(e_at);
    let exp: i64 = match e.get(1..) {
        None => 0,
        Some(e) => {
            let (minus, digits) = match e.first() {
                Some(b'-') => (true, &e[1..]),
                Some(b'+') => (false, &e[1..]),
                _ => (false, e),
            };
            if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                return None;
            }
            // Held at 2^40, far beyond any line's length: the answer (0 or too big) is the same.
            let v = digits
                .iter()
                .fold(0i64, |v, &d| (v * 10 + i64::from(d - b'0')).min(1 << 40));
            if minus { -v } else { v }
        }
    };
    let (int, frac) = match mantissa.iter().position(|&c| c == b'.') {
        Some(i) => (&mantissa[..i], &mantissa[i + 1..]),
        None => (mantissa, &b""[..]),
    };
    if int.is_empty() || !int.iter().chain(frac).all(u8::is_ascii_digit) {
        return None;
    }
    let digit = |i: usize| {
        int.get(i)
            .or_else(|| frac.get(i - int.len()))
            .map_or(0, |&d| u64::from(d - b'0'))
    };
    let total = int.len() + frac.len();
    let zeros = (0..total).take_while(|&i| digit(i) == 0).count();
    if zeros == total {
        return Some((neg, 0));
    }
    // The value is 0.d1d2…dm × 10^point, d1 the first digit that is not 0.
    let m = (total - zeros) as i64;
    let point = int.len() as i64 - zeros as i64 + exp + i64::from(scale);
    if point > 20 {
        return None; // at least 10^20
    }
    let d = |j: i64| digit(zeros + j as usize);
    let mut v: u64 = 0;
    for j in 0..point.clamp(0, m) {
        v = v.checked_mul(10)?.checked_add(d(j))?;
    }
    if point > m {
        v = v.checked_mul(10u64.checked_pow((point - m) as u32)?)?;
    }
    let below = point.max(0);
    if (below..m).all(|j| d(j) == 0) {
        return Some((neg, v));
    }
    if !round {
        return None;
    }
    // Under a tenth of the unit (point < 0) rounds down; else by the first digit below it.
    let up = point >= 0 && {
        let r = d(point);
        r > 5 || (r == 5 && ((point + 1..m).any(|j| d(j) != 0) || v & 1 == 1))
    };
    Some((neg, if up { v.checked_add(1)? } else { v }))
}

/// Seconds in any JSON form (`5.3688e-05`, `1.5`, `12.0000000004`) as nanoseconds, rounded
/// half to even; not negative (`-0` is 0).
pub(super) fn general_seconds(s: &[u8]) -> Option<u64> {
    match scaled(s, 9, true)? {
        (true, 0) => Some(0),
        (true, _) => None,
        (false, v) => Some(v),
    }
}

/// Seconds that may be negative (the clock offset), as [`parse_seconds`] reads them with a
/// leading `-`, or in any JSON form.
pub(super) fn parse_signed_seconds(s: &[u8]) -> Option<i64> {
    let quick = match s.strip_prefix(b"-") {
        Some(rest) => parse_seconds(rest)
            .and_then(|v| i64::try_from(v).ok())
            .map(|v| -v),
        None => parse_seconds(s).and_then(|v| i64::try_from(v).ok()),
    };
    quick.or_else(|| {
        let (neg, v) = scaled(s, 9, true)?;
        i64::try_from(if neg { -i128::from(v) } else { i128::from(v) }).ok()
    })
}

pub(super) fn secs(v: Option<Val<'_>>, key: &str) -> Res<Option<u64>> {
    match v {
        None | Some(Val::Null) => Ok(None),
        Some(Val::Num(t)) => parse_seconds(t.as_bytes())
            .or_else(|| general_seconds(t.as_bytes()))
            .map(Some)
            .ok_or_else(|| {
                format!(
                    "\"{key}\" is not a number of seconds (not negative, at most {} s): {t}",
                    u64::MAX / 1_000_000_000
                )
            }),
        Some(_) => Err(format!("\"{key}\" is not a number")),
    }
}

/// The count at the start of `s` as JSON writes one (digits, no leading zero, within u64) and
/// what follows it.
pub(super) fn leading_count(s: &str) -> Option<(u64, &str)> {
    let n = s.bytes().take_while(u8::is_ascii_digit).count();
    let (d, rest) = s.split_at(n);
    if n == 0 || n > 20 || (n > 1 && d.starts_with('0')) {
        return None;
    }
    Some((d.parse().ok()?, rest))
}

/// `{"voluntary":N,"involuntary":M}` (checked as JSON when the line was scanned; its keys are
/// [`CTX_SWITCHES_KEYS`]).
pub(super) fn ctx_switches(raw: &str) -> Res<(u64, u64)> {
    let [vol, invol] = CTX_SWITCHES_KEYS;
    // As proctrace writes it (one on every measured exit): read in place, no JSON value built.
    pub(super) fn key<'a>(r: &'a str, k: &str) -> Option<&'a str> {
        r.strip_prefix('"')?.strip_prefix(k)?.strip_prefix("\":")
    }
    if let Some((v, r)) = raw
        .strip_prefix('{')
        .and_then(|r| key(r, vol))
        .and_then(leading_count)
        && let Some((i, "}")) = r
            .strip_prefix(',')
            .and_then(|r| key(r, invol))
            .and_then(leading_count)
    {
        return Ok((v, i));
    }
    // Any other layout (spaces, the keys in another order or escaped, a count written `1e3`):
    // scanned as the line was; other keys ignored, a missing or `null` count is 0.
    let mut counts = [0u64; 2];
    let mut p = Scan::new(raw);
    p.ws();
    p.eat(b'{')?;
    p.ws();
    if p.peek() == Some(b'}') {
        return Ok((0, 0));
    }
    loop {
        p.ws();
        let (k, esc) = p.string()?;
        let k = if esc {
            Cow::Owned(unescape(k))
        } else {
            Cow::Borrowed(k)
        };
        p.ws();
        p.eat(b':')?;
        p.ws();
        let v = p.value(1)?;
        if let Some(i) = CTX_SWITCHES_KEYS.iter().position(|&n| n == k) {
            counts[i] = match v {
                Val::Null => 0,
                Val::Num(n) => {
                    count(n).ok_or_else(|| format!("\"ctx_switches\".\"{k}\" is not a count: {n}"))?
                }
                _ => return Err(format!("\"ctx_switches\".\"{k}\" is not a count")),
            };
        }
        p.ws();
        match p.peek() {
            Some(b',') => p.i += 1,
            Some(b'}') => return Ok((counts[0], counts[1])),
            _ => return Err(format!("\"ctx_switches\": expected ',' or '}}' at byte {}", p.i)),
        }
    }
}

/// A JSON number that is a whole number from 0 to `u64::MAX`, in any form (`12`, `1.2e1`).
pub(super) fn count(n: &str) -> Option<u64> {
    n.parse().ok().or_else(|| match scaled(n.as_bytes(), 0, false)? {
        (true, v) if v != 0 => None,
        (_, v) => Some(v),
    })
}

//! Session ids (SIDs) shaped like git's.
//!
//! A SID component is `<yyyymmdd>T<hhmmss>.<µs6>Z-H<hash8>-P<pid8>` (43 bytes,
//! usable as a file name). A process started under a traced parent gets
//! `<parent sid>/<component>`; the number of `/` is its depth. This module
//! only builds and inspects strings: it never reads or writes the environment.

use crate::time::Timestamp;

/// A full session id: the parent's SID (if any), a `/`, this process's component.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Sid {
    full: String,
}

impl Sid {
    /// Builds the component `<time>-H<hash8>-P<pid8>` for `pid` at `wall`,
    /// hashing this machine's host name like git (`Localhost` if it has none).
    pub fn new_component(pid: u32, wall: Timestamp) -> String {
        let host = crate::sys::hostname();
        Self::component_with_host(pid, wall, host.as_deref())
    }

    /// Like [`Sid::new_component`] with an explicit host name (`None` gives
    /// the literal `Localhost`, as git writes when `gethostname` fails).
    pub fn component_with_host(pid: u32, wall: Timestamp, host: Option<&[u8]>) -> String {
        let mut out = Vec::with_capacity(43);
        wall.write_sid_utc(&mut out);
        out.push(b'-');
        match host {
            Some(h) => {
                out.push(b'H');
                let digest = sha1(h);
                for b in &digest[..4] {
                    out.extend_from_slice(format!("{b:02x}").as_bytes());
                }
            }
            None => out.extend_from_slice(b"Localhost"),
        }
        out.extend_from_slice(format!("-P{pid:08x}").as_bytes());
        String::from_utf8_lossy(&out).into_owned()
    }

    /// A SID for this process: `component`, nested under `parent` when that
    /// is `Some` and non-empty (git does not validate the parent string).
    pub fn nested(parent: Option<&str>, component: &str) -> Sid {
        match parent {
            Some(p) if !p.is_empty() => Sid {
                full: format!("{p}/{component}"),
            },
            _ => Sid {
                full: component.to_string(),
            },
        }
    }

    /// Wraps an existing SID string (for example one read from a stream).
    pub fn from_string(full: impl Into<String>) -> Sid {
        Sid { full: full.into() }
    }

    /// A fresh SID for the current process at the current time.
    pub fn for_current_process(parent: Option<&str>) -> Sid {
        let comp = Self::new_component(std::process::id(), Timestamp::now());
        Self::nested(parent, &comp)
    }

    /// The full SID string.
    pub fn as_str(&self) -> &str {
        &self.full
    }

    /// The last component: the file name used by directory destinations.
    pub fn last_component(&self) -> &str {
        last_component(&self.full)
    }

    /// The parent's SID, if nested.
    pub fn parent(&self) -> Option<&str> {
        self.full.rfind('/').map(|i| &self.full[..i])
    }

    /// Depth: the number of `/` in the SID (perf's `d<N>` column).
    pub fn depth(&self) -> usize {
        depth(&self.full)
    }
}

impl std::fmt::Display for Sid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.full)
    }
}

/// The last `/`-separated component of a SID string.
pub fn last_component(sid: &str) -> &str {
    match sid.rfind('/') {
        Some(i) => &sid[i + 1..],
        None => sid,
    }
}

/// The depth of a SID string: its number of `/`.
pub fn depth(sid: &str) -> usize {
    sid.bytes().filter(|&b| b == b'/').count()
}

/// SHA-1 of `data` (FIPS 180-4), enough for the host-name hash.
pub fn sha1(data: &[u8]) -> [u8; 20] {
    let mut h: [u32; 5] = [0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0];
    let bit_len = (data.len() as u64).wrapping_mul(8);
    let mut msg = data.to_vec();
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&bit_len.to_be_bytes());
    for block in msg.chunks_exact(64) {
        let mut w = [0u32; 80];
        for (i, word) in block.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..80 {
            w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = h;
        for (i, wi) in w.iter().enumerate() {
            let (f, k) = match i {
                0..=19 => ((b & c) | (!b & d), 0x5A82_7999),
                20..=39 => (b ^ c ^ d, 0x6ED9_EBA1),
                40..=59 => ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC),
                _ => (b ^ c ^ d, 0xCA62_C1D6),
            };
            let t = a
                .rotate_left(5)
                .wrapping_add(f)
                .wrapping_add(e)
                .wrapping_add(k)
                .wrapping_add(*wi);
            e = d;
            d = c;
            c = b.rotate_left(30);
            b = a;
            a = t;
        }
        for (hv, v) in h.iter_mut().zip([a, b, c, d, e]) {
            *hv = hv.wrapping_add(v);
        }
    }
    let mut out = [0u8; 20];
    for (i, v) in h.iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&v.to_be_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn hex(d: &[u8]) -> String {
        d.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn sha1_vectors() {
        assert_eq!(hex(&sha1(b"")), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(hex(&sha1(b"abc")), "a9993e364706816aba3e25717850c26c9cd0d89d");
        let long = vec![b'a'; 1000];
        assert_eq!(hex(&sha1(&long)), "291e9a6c66994949b57ba5e650361e98fc36b1ba");
    }

    #[test]
    fn component_shape() {
        let t = Timestamp {
            secs: 1_800_000_000,
            micros: 7,
        };
        let c = Sid::component_with_host(0x27e0, t, Some(b"vm"));
        assert_eq!(c.len(), 43);
        assert_eq!(
            c,
            format!("20270115T080000.000007Z-H{}-P000027e0", &hex(&sha1(b"vm"))[..8])
        );
        let c = Sid::component_with_host(1, t, None);
        assert_eq!(c, "20270115T080000.000007Z-Localhost-P00000001");
        let s = Sid::nested(Some("a/b"), &c);
        assert_eq!(s.depth(), 2);
        assert_eq!(s.last_component(), c);
        assert_eq!(s.parent(), Some("a/b"));
        assert_eq!(Sid::nested(Some(""), "x").as_str(), "x");
    }
}

//! A command line, held compactly: every word in one string and where each ends, two
//! allocations whatever the number of words.
//!
//! Every process record keeps its argv to the end of a run (the tree, the summary, the reports
//! read it), so its shape is the model's memory: as `Vec<String>`, a 25-word compiler command
//! was 26 allocations and 24 bytes of header per word; as [`Argv`], two allocations of exactly
//! the text and a `u32` per word. Built straight from what a backend or a saved trace holds
//! ([`ArgvBuilder`]: a JSON array's words, `/proc/PID/cmdline`'s NUL-separated bytes) without a
//! `String` per word. It serializes as a JSON array of strings, as `Vec<String>` did.

use std::fmt;

/// A command line: its words in order (any UTF-8, empty words and NULs included).
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Argv {
    /// The words, one after the other.
    text: Box<str>,
    /// Where each word ends in `text` (its start is the previous word's end).
    ends: Box<[u32]>,
}

/// Builds [`Argv`]s word by word; reused, it keeps its room, so building one allocates only the
/// two exact-size parts of the result.
#[derive(Debug, Default)]
pub struct ArgvBuilder {
    text: String,
    ends: Vec<u32>,
}

impl ArgvBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts over (keeping the room).
    pub fn clear(&mut self) {
        self.text.clear();
        self.ends.clear();
    }

    /// Appends a word. A command line is far below 4 GiB (the kernel caps it at a quarter of the
    /// stack limit); text beyond that, from a crafted file, is not kept.
    pub fn push(&mut self, word: &str) {
        self.push_with(|t| t.push_str(word));
    }

    /// Appends a word that `write` appends to the text (e.g. a JSON string being unescaped).
    pub fn push_with(&mut self, write: impl FnOnce(&mut String)) {
        let before = self.text.len();
        write(&mut self.text);
        match u32::try_from(self.text.len()) {
            Ok(end) => self.ends.push(end),
            Err(_) => self.text.truncate(before),
        }
    }

    /// Words so far.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// No words so far.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The command line built so far; the builder is cleared for the next.
    pub fn take(&mut self) -> Argv {
        let a = Argv {
            text: Box::from(self.text.as_str()),
            ends: Box::from(self.ends.as_slice()),
        };
        self.clear();
        a
    }
}

impl Argv {
    /// No words.
    pub fn new() -> Self {
        Self::default()
    }

    /// The words of NUL-terminated `bytes` (as `/proc/PID/cmdline` holds them; a last word
    /// without its NUL counts too), every byte kept: what is not UTF-8 is held as
    /// [bytes-in-text](crate::model::bytes).
    pub fn from_nul_separated(bytes: &[u8]) -> Argv {
        let mut b = ArgvBuilder::new();
        b.text.reserve(bytes.len());
        let bytes = bytes.strip_suffix(b"\0").unwrap_or(bytes);
        for w in bytes.split(|&c| c == 0) {
            b.push_with(|t| crate::model::bytes::encode_into(t, w));
        }
        b.take()
    }

    /// Whether every word is exactly the bytes it shows (no byte held by
    /// [bytes-in-text](crate::model::bytes)).
    pub fn is_exact(&self) -> bool {
        crate::model::bytes::is_exact(&self.text)
    }

    /// Number of words.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// No words.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Word `i`.
    pub fn get(&self, i: usize) -> Option<&str> {
        let end = *self.ends.get(i)? as usize;
        let start = match i {
            0 => 0,
            _ => self.ends[i - 1] as usize,
        };
        self.text.get(start..end)
    }

    /// The first word (the program as it was called).
    pub fn first(&self) -> Option<&str> {
        self.get(0)
    }

    /// The last word.
    pub fn last(&self) -> Option<&str> {
        self.get(self.len().checked_sub(1)?)
    }

    /// The words in order.
    pub fn iter(&self) -> Words<'_> {
        Words {
            argv: self,
            front: 0,
            back: self.len(),
        }
    }

    /// The words joined with `sep`.
    pub fn join(&self, sep: &str) -> String {
        let mut s = String::with_capacity(self.text.len() + sep.len() * self.len());
        for (i, w) in self.iter().enumerate() {
            if i > 0 {
                s.push_str(sep);
            }
            s.push_str(w);
        }
        s
    }

    /// The words as owned strings.
    pub fn to_vec(&self) -> Vec<String> {
        self.iter().map(str::to_owned).collect()
    }
}

/// The words of an [`Argv`], in order.
#[derive(Clone)]
pub struct Words<'a> {
    argv: &'a Argv,
    front: usize,
    back: usize,
}

impl<'a> Iterator for Words<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        if self.front >= self.back {
            return None;
        }
        self.front += 1;
        self.argv.get(self.front - 1)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.back - self.front;
        (n, Some(n))
    }

    fn nth(&mut self, n: usize) -> Option<&'a str> {
        self.front = self.front.saturating_add(n).min(self.back);
        self.next()
    }
}

impl DoubleEndedIterator for Words<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.front >= self.back {
            return None;
        }
        self.back -= 1;
        self.argv.get(self.back)
    }
}

impl ExactSizeIterator for Words<'_> {}

impl<'a> IntoIterator for &'a Argv {
    type Item = &'a str;
    type IntoIter = Words<'a>;

    fn into_iter(self) -> Words<'a> {
        self.iter()
    }
}

impl std::ops::Index<usize> for Argv {
    type Output = str;

    /// Word `i`; panics when there is no such word, as a slice does.
    fn index(&self, i: usize) -> &str {
        match self.get(i) {
            Some(w) => w,
            None => panic!("argv index {i} out of range for {} words", self.len()),
        }
    }
}

impl<S: AsRef<str>> FromIterator<S> for Argv {
    fn from_iter<I: IntoIterator<Item = S>>(words: I) -> Argv {
        let mut b = ArgvBuilder::new();
        for w in words {
            b.push(w.as_ref());
        }
        b.take()
    }
}

impl From<Vec<String>> for Argv {
    fn from(v: Vec<String>) -> Argv {
        v.iter().collect()
    }
}

impl From<&[String]> for Argv {
    fn from(v: &[String]) -> Argv {
        v.iter().collect()
    }
}

impl From<&[&str]> for Argv {
    fn from(v: &[&str]) -> Argv {
        v.iter().collect()
    }
}

impl<const N: usize> From<[&str; N]> for Argv {
    fn from(v: [&str; N]) -> Argv {
        v.iter().collect()
    }
}

impl From<&Argv> for Vec<String> {
    fn from(a: &Argv) -> Vec<String> {
        a.to_vec()
    }
}

impl<S: AsRef<str>> PartialEq<[S]> for Argv {
    fn eq(&self, other: &[S]) -> bool {
        self.len() == other.len() && self.iter().zip(other).all(|(a, b)| a == b.as_ref())
    }
}

impl<S: AsRef<str>, const N: usize> PartialEq<[S; N]> for Argv {
    fn eq(&self, other: &[S; N]) -> bool {
        *self == other[..]
    }
}

impl<S: AsRef<str>, const N: usize> PartialEq<[S; N]> for &Argv {
    fn eq(&self, other: &[S; N]) -> bool {
        **self == other[..]
    }
}

impl<S: AsRef<str>> PartialEq<Vec<S>> for Argv {
    fn eq(&self, other: &Vec<S>) -> bool {
        *self == other[..]
    }
}

impl fmt::Debug for Argv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl serde::Serialize for Argv {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> serde::Deserialize<'de> for Argv {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Argv, D::Error> {
        struct Seq;
        impl<'de> serde::de::Visitor<'de> for Seq {
            type Value = Argv;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of strings")
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Argv, A::Error> {
                let mut b = ArgvBuilder::new();
                while seq.next_element_seed(Word(&mut b))?.is_some() {}
                Ok(b.take())
            }
        }
        /// One word, appended to the builder as the deserializer hands it over (no `String`
        /// of its own).
        struct Word<'b>(&'b mut ArgvBuilder);
        impl<'de> serde::de::DeserializeSeed<'de> for Word<'_> {
            type Value = ();

            fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
                d.deserialize_str(self)
            }
        }
        impl<'de> serde::de::Visitor<'de> for Word<'_> {
            type Value = ();

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_str<E: serde::de::Error>(self, w: &str) -> Result<(), E> {
                self.0.push(w);
                Ok(())
            }
        }
        d.deserialize_seq(Seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_in_order_and_back() {
        let a = Argv::from(["cc", "", "-o", "a b", "\0x", "é"]);
        assert_eq!(a.len(), 6);
        assert_eq!(a.iter().collect::<Vec<_>>(), ["cc", "", "-o", "a b", "\0x", "é"]);
        assert_eq!(
            a.iter().rev().collect::<Vec<_>>(),
            ["é", "\0x", "a b", "-o", "", "cc"]
        );
        assert_eq!(
            (a.first(), a.last(), a.get(1), a.get(6)),
            (Some("cc"), Some("é"), Some(""), None)
        );
        assert_eq!(&a[3], "a b");
        assert_eq!(a.join(" "), "cc  -o a b \0x é");
        assert_eq!(a.iter().nth(4), Some("\0x"));
        assert_eq!(a.iter().len(), 6);
        let e = Argv::new();
        assert!(e.is_empty() && e.first().is_none() && e.iter().next().is_none() && e.join(" ").is_empty());
        assert_ne!(Argv::from(["a", "b"]), Argv::from(["ab"]));
        assert_ne!(Argv::from([""]), Argv::new());
    }

    #[test]
    fn from_proc_cmdline() {
        assert_eq!(Argv::from_nul_separated(b"ls\0-l\0\0x\0"), ["ls", "-l", "", "x"]);
        assert_eq!(Argv::from_nul_separated(b"a\0b"), ["a", "b"]);
        // Not UTF-8: every byte kept.
        let a = Argv::from_nul_separated(b"\xff\0caf\xe9");
        assert!(!a.is_exact());
        assert_eq!(crate::model::bytes::decode(&a[1]), &b"caf\xe9"[..]);
        assert_eq!(crate::model::bytes::decode(&a[0]), &b"\xff"[..]);
        assert!(Argv::from_nul_separated(b"ls\0-l").is_exact());
    }

    #[test]
    fn json_as_an_array_of_strings() {
        let a = Argv::from(["sh", "-c", "echo \"é\"\n"]);
        let j = serde_json::to_string(&a).unwrap();
        assert_eq!(j, serde_json::to_string(&a.to_vec()).unwrap());
        assert_eq!(serde_json::from_str::<Argv>(&j).unwrap(), a);
        assert_eq!(format!("{a:?}"), format!("{:?}", a.to_vec()));
        assert!(serde_json::from_str::<Argv>("[1]").is_err());
    }

    #[test]
    fn builder_reused() {
        let mut b = ArgvBuilder::new();
        b.push("x");
        b.push_with(|t| t.push_str("yz"));
        assert_eq!(b.len(), 2);
        assert_eq!(b.take(), ["x", "yz"]);
        assert!(b.is_empty());
        b.push("q");
        assert_eq!(b.take(), ["q"]);
    }
}

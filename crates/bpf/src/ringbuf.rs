//! The BPF ring buffer's reader (`BPF_MAP_TYPE_RINGBUF`, kernel/bpf/ringbuf.c).
//!
//! Layout: page 0 holds the consumer position (mapped read-write: the reader advances it);
//! page 1 the producer position; the data pages follow. The kernel maps the data twice in a row
//! so that a record that wraps is contiguous; this reader maps it once (mapping 16 MiB twice
//! took ~4 ms of proctrace's start-up, and as much again to unmap) and copies the rare record
//! that wraps into a buffer kept for the next. Each record has an 8-byte header: its length
//! with two flag bits (busy: still being written; discard: to be skipped), then the record,
//! rounded up to 8.
//!
//! The producer position is read with acquire ordering (the records before it are complete or
//! busy), each header likewise; the consumer position is written with release ordering once per
//! batch, after the records were read. No allocation per record.

use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use crate::{Error, Map};

const BUSY: u32 = 1 << 31;
const DISCARD: u32 = 1 << 30;
const HDR: usize = 8;

struct Mmap {
    ptr: *mut libc::c_void,
    len: usize,
}

impl Mmap {
    fn new(fd: RawFd, len: usize, prot: i32, offset: usize) -> std::io::Result<Mmap> {
        // SAFETY: a shared mapping of a ring buffer map's fd; the result is checked and owned by
        // the returned value.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED,
                fd,
                offset as libc::off_t,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Mmap { ptr, len })
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, not used after this.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}

/// A ring buffer map, mapped for reading.
pub struct RingBuf {
    map: Map,
    consumer: Mmap,
    producer: Mmap,
    page: usize,
    /// Data size (a power of two).
    size: usize,
    /// The consumer position as read so far (committed at the end of each [`RingBuf::read`]).
    pos: usize,
    /// A record that wraps, made contiguous (grown to the largest such record, then reused).
    wrap: Vec<u8>,
    /// How many records wrapped.
    wrapped: u64,
}

// SAFETY: the mappings are owned by the value; the shared words are accessed atomically.
unsafe impl Send for RingBuf {}

impl RingBuf {
    /// Maps a ring buffer map.
    pub fn new(map: Map) -> Result<RingBuf, Error> {
        let size = map.def().max_entries as usize;
        if map.def().map_type != 27 || !size.is_power_of_two() {
            return Err(Error::Missing(format!(
                "map {} is not a ring buffer",
                map.def().name
            )));
        }
        // SAFETY: sysconf has no memory arguments.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
        let io = |what: &str, e| Error::Sys {
            what: format!("mapping the {what} of ring buffer {}", map.def().name),
            source: e,
            log: String::new(),
        };
        let fd = map.as_raw_fd();
        let consumer =
            Mmap::new(fd, page, libc::PROT_READ | libc::PROT_WRITE, 0).map_err(|e| io("consumer page", e))?;
        let producer = Mmap::new(fd, page + size, libc::PROT_READ, page).map_err(|e| io("data", e))?;
        let mut r = RingBuf {
            map,
            consumer,
            producer,
            page,
            size,
            pos: 0,
            wrap: Vec::new(),
            wrapped: 0,
        };
        r.pos = r.consumer_pos().load(Ordering::Acquire);
        Ok(r)
    }

    fn consumer_pos(&self) -> &AtomicUsize {
        // SAFETY: the consumer page is mapped read-write, page-aligned, for the life of self;
        // the kernel reads this word, the reader alone writes it.
        unsafe { &*(self.consumer.ptr as *const AtomicUsize) }
    }

    fn producer_pos(&self) -> usize {
        // SAFETY: the producer page is mapped for the life of self, page-aligned; the kernel
        // writes this word atomically.
        unsafe { &*(self.producer.ptr as *const AtomicUsize) }.load(Ordering::Acquire)
    }

    /// Calls `f` with each record written since the last call (at most a ring's worth), then
    /// tells the kernel their room is free. Returns how many records there were.
    pub fn read(&mut self, mut f: impl FnMut(&[u8])) -> usize {
        let data = self.producer.ptr as usize + self.page;
        let mask = self.size - 1;
        let start = self.pos;
        let mut n = 0;
        let mut prod = self.producer_pos();
        while self.pos < prod {
            let off = self.pos & mask;
            // SAFETY: off <= size - 8 and 8-aligned (positions advance by multiples of 8): the
            // header is within the data mapping, aligned for a u32.
            let hdr = unsafe { &*((data + off) as *const AtomicU32) }.load(Ordering::Acquire);
            if hdr & BUSY != 0 {
                break;
            }
            let len = (hdr & !(BUSY | DISCARD)) as usize;
            if len > self.size - HDR {
                // The kernel never writes this: stop rather than read past the mapping.
                break;
            }
            if hdr & DISCARD == 0 {
                let start = off + HDR;
                if start + len <= self.size {
                    // SAFETY: start + len <= size: within the data mapping.
                    let rec = unsafe { std::slice::from_raw_parts((data + start) as *const u8, len) };
                    f(rec);
                } else {
                    // It wraps: its end is at the data's start.
                    let first = self.size.saturating_sub(start);
                    self.wrap.clear();
                    // SAFETY: start..size and 0..len-first are within the data mapping
                    // (start <= size, len - first < size).
                    unsafe {
                        self.wrap.extend_from_slice(std::slice::from_raw_parts(
                            (data + start) as *const u8,
                            first,
                        ));
                        self.wrap
                            .extend_from_slice(std::slice::from_raw_parts(data as *const u8, len - first));
                    }
                    self.wrapped += 1;
                    f(&self.wrap);
                }
                n += 1;
            }
            self.pos += (len + HDR).next_multiple_of(8);
            // Not past a ring's worth in one call: the room must be given back.
            if self.pos - start >= self.size {
                break;
            }
            if self.pos >= prod {
                prod = self.producer_pos();
            }
        }
        if self.pos != start {
            self.consumer_pos().store(self.pos, Ordering::Release);
        }
        n
    }

    /// How many records wrapped around the ring's end (copied to be read whole).
    pub fn wrapped(&self) -> u64 {
        self.wrapped
    }

    /// The map.
    pub fn map(&self) -> &Map {
        &self.map
    }
}

impl AsRawFd for RingBuf {
    fn as_raw_fd(&self) -> RawFd {
        self.map.as_raw_fd()
    }
}

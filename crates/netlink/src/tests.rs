//! The socket against the real kernel: generic netlink's controller (`nlctrl`) answers anyone, so
//! these need no privilege beyond what forging a sender needs (root, as the test machine runs).

use super::*;

const NLMSG_ERROR: u16 = 2;
const GENL_ID_CTRL: u16 = 16;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;

/// `CTRL_CMD_GETFAMILY` for `nlctrl` with `NLM_F_ACK`: the kernel answers with the family, then
/// an ack carrying `seq`.
fn get_family(seq: u32) -> Vec<u8> {
    let name = b"nlctrl\0";
    let attr_len = 4 + name.len();
    let len = 16 + 4 + attr_len.next_multiple_of(4);
    let mut m = Vec::with_capacity(len);
    m.extend_from_slice(&(len as u32).to_ne_bytes());
    m.extend_from_slice(&GENL_ID_CTRL.to_ne_bytes());
    m.extend_from_slice(&((libc::NLM_F_REQUEST | libc::NLM_F_ACK) as u16).to_ne_bytes());
    m.extend_from_slice(&seq.to_ne_bytes());
    m.extend_from_slice(&0u32.to_ne_bytes());
    m.extend_from_slice(&[CTRL_CMD_GETFAMILY, 1, 0, 0]);
    m.extend_from_slice(&(attr_len as u16).to_ne_bytes());
    m.extend_from_slice(&CTRL_ATTR_FAMILY_NAME.to_ne_bytes());
    m.extend_from_slice(name);
    m.resize(len, 0);
    m
}

/// The errno of an ack for `seq`, if `data` is one.
fn ack_for(data: &[u8], seq: u32) -> Option<i32> {
    let kind = u16::from_ne_bytes(data.get(4..6)?.try_into().ok()?);
    let s = u32::from_ne_bytes(data.get(8..12)?.try_into().ok()?);
    let err = i32::from_ne_bytes(data.get(16..20)?.try_into().ok()?);
    (kind == NLMSG_ERROR && s == seq).then_some(-err)
}

fn generic<const B: usize, const S: usize>() -> Socket<B, S> {
    let sock = Socket::<B, S>::open(Protocol::GENERIC, 1 << 20).unwrap();
    sock.bind(0).unwrap();
    sock
}

#[test]
fn the_reply_is_found_and_what_came_before_it_is_handed_on() {
    let mut sock = generic::<8, 4096>();
    sock.send_to_kernel(&get_family(7)).unwrap();
    let mut kinds = Vec::new();
    let got = sock
        .wait_reply(Duration::from_secs(5), |d| {
            kinds.push(u16::from_ne_bytes([d[4], d[5]]));
            ack_for(d, 7)
        })
        .unwrap();
    assert_eq!(got, Some(0));
    assert_eq!(kinds, [GENL_ID_CTRL, NLMSG_ERROR], "the family, then the ack");
    let c = sock.counters();
    assert_eq!((c.datagrams, c.rejected_sender, c.rejected_truncated), (2, 0, 0));
}

#[test]
fn no_reply_by_the_deadline_is_none_and_truncated_datagrams_are_counted_not_handed_on() {
    // 16-byte slots: the family reply and the ack (36 bytes and more) are both cut.
    let mut sock = generic::<4, 16>();
    sock.send_to_kernel(&get_family(9)).unwrap();
    let mut handed = 0;
    let got = sock
        .wait_reply(Duration::from_millis(200), |d| {
            handed += 1;
            ack_for(d, 9)
        })
        .unwrap();
    assert_eq!(got, None);
    assert_eq!(handed, 0);
    assert_eq!(sock.counters().rejected_truncated, 2);
}

#[test]
fn a_datagram_from_another_process_is_counted_and_never_handed_on() {
    let mut sock = generic::<8, 256>();
    let forger = generic::<1, 64>();
    let mut dst = kernel_addr();
    dst.nl_pid = sock.port_id().unwrap();
    let msg = get_family(1);
    // SAFETY: msg and dst are live and sized as stated.
    let rc = unsafe {
        libc::sendto(
            forger.as_raw_fd(),
            msg.as_ptr().cast(),
            msg.len(),
            0,
            (&dst as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    };
    assert!(rc > 0, "{}", io::Error::last_os_error());
    let mut handed = 0;
    let done = sock.receive(5000, 4096, |_| handed += 1).unwrap().unwrap();
    assert_eq!(done.datagrams, 1);
    assert_eq!(handed, 0);
    assert_eq!(sock.counters().rejected_sender, 1);
}

#[test]
fn a_wake_ends_a_wait_and_is_consumed() {
    let sock = generic::<1, 64>();
    let waker = sock.waker();
    std::thread::spawn(move || waker.wake()).join().unwrap();
    // Nothing is ever sent to this socket: only the wake can end these waits.
    assert!(!sock.wait(60_000).unwrap());
    // Consumed: a second wait times out (a 0 ms poll) rather than seeing the wake again.
    let mut fds = [libc::pollfd {
        fd: sock.wake_fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }];
    // SAFETY: one valid pollfd.
    assert_eq!(unsafe { libc::poll(fds.as_mut_ptr(), 1, 0) }, 0);
}

#[test]
fn replies_the_kernel_could_not_queue_are_in_the_drop_counter_and_end_in_an_overflow() {
    let sock = Socket::<8, 4096>::open(Protocol::GENERIC, 0).unwrap(); // the smallest buffer
    sock.bind(0).unwrap();
    let mut sock = sock;
    assert_eq!(sock.drops(), Some(0));
    for seq in 0..200 {
        sock.send_to_kernel(&get_family(seq)).unwrap();
    }
    let drops = sock.drops().unwrap();
    assert!(drops > 0, "{drops}");
    assert!(sock.queued_bytes().unwrap() > 0);
    let mut handed = 0u64;
    let done = sock.drain(usize::MAX, |_| handed += 1).unwrap();
    assert!(done.overflowed);
    assert_eq!(sock.counters().overflows, 1);
    assert_eq!(handed + drops, 400, "each request has a reply and an ack");
    assert_eq!(sock.queued_bytes(), Some(0));
}

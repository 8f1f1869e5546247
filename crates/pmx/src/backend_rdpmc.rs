//! The user-space read path of a group: every member's metadata page
//! mapped, each read with `rdpmc` ([`pmx_perf::rdpmc`]) when the kernel
//! allows it, no system call.
//!
//! Used only for groups of hardware events counting the calling thread
//! (software events are never on a hardware counter). When any member
//! cannot be read from user space at this moment (`index` 0: not on a
//! counter now; no `cap_user_rdpmc`), the whole group is read with
//! `read(2)` instead, so the members' values stay consistent.

use pmx_model::count::Count;
use pmx_perf::rdpmc::UserPageMap;
use pmx_perf::Counter;

/// The mapped pages of one group, in slot order.
pub(crate) struct UserRead {
    pages: Vec<UserPageMap>,
    /// `rdpmc` reads the counters of the CPU it runs on: only the thread
    /// the events count may use it (another thread reads the fd).
    owner: std::thread::ThreadId,
}

impl UserRead {
    /// Map every member's page; `None` when mapping fails or the kernel
    /// does not offer `rdpmc` for the leader (then reads use `read(2)`).
    pub(crate) fn new(
        leader: &Counter,
        members: &[Counter],
        slots: &[(u64, usize)],
    ) -> Option<UserRead> {
        let pages: Vec<UserPageMap> = std::iter::once(leader)
            .chain(members.iter())
            .map(UserPageMap::new)
            .collect::<Result<_, _>>()
            .ok()?;
        if pages.len() != slots.len() || pages.len() > 16 || !pages[0].fields().cap_user_rdpmc() {
            return None;
        }
        Some(UserRead {
            pages,
            owner: std::thread::current().id(),
        })
    }

    /// Add every member's count into `out`; `false` (and nothing added)
    /// when some member must be read through the fd now.
    #[inline]
    pub(crate) fn read_add(&self, slots: &[(u64, usize)], out: &mut [Count]) -> bool {
        let mut got = [Count::default(); 16];
        if self.pages.len() > got.len() || std::thread::current().id() != self.owner {
            return false;
        }
        for (i, p) in self.pages.iter().enumerate() {
            match p.read() {
                Some(c) => got[i] = c,
                None => return false,
            }
        }
        for (i, &(_, e)) in slots.iter().enumerate() {
            let c = &mut out[e];
            c.value = c.value.wrapping_add(got[i].value);
            c.enabled += got[i].enabled;
            c.running += got[i].running;
        }
        true
    }
}

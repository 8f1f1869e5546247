//! Work whose effect on the software counters is known exactly: the first
//! write to each page of a fresh private mapping is one minor page fault,
//! so touching `n` fresh pages counts exactly `n` `page-faults`.
//!
//! pmx's tests check counts against it, and the `pmx-workload` program
//! runs it for the command-line tests ([`program`]: the program's
//! commands).

pub mod program;

use crate::mmap::page_size;
use std::io;

/// An anonymous private mapping whose pages have never been touched, so the
/// first write to each is exactly one minor page fault (huge pages are
/// turned off for it, so one fault cannot fill 512 pages). Unmapped on
/// drop.
pub struct Pages {
    ptr: *mut u8,
    pages: usize,
    page: usize,
}

impl Pages {
    /// Map `pages` fresh pages (at least one page is mapped, so that
    /// `fresh(0)` is a valid mapping that [`touch`](Pages::touch) leaves
    /// alone).
    pub fn fresh(pages: usize) -> io::Result<Pages> {
        let page = page_size();
        let len = pages.max(1) * page;
        // SAFETY: an anonymous mapping at an address of the kernel's choice;
        // no existing memory is affected.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the range is the mapping just created. Failure (no THP
        // support) is fine: then there are no huge pages to avoid.
        unsafe { libc::madvise(ptr, len, libc::MADV_NOHUGEPAGE) };
        Ok(Pages {
            ptr: ptr.cast(),
            pages,
            page,
        })
    }

    /// How many pages [`touch`](Pages::touch) writes.
    pub fn len(&self) -> usize {
        self.pages
    }

    /// No pages to touch.
    pub fn is_empty(&self) -> bool {
        self.pages == 0
    }

    /// Write one byte to every page.
    #[inline(never)]
    pub fn touch(&self) {
        for i in 0..self.pages {
            // SAFETY: i * page is inside the mapping, which is writable and
            // lives as long as self.
            unsafe { std::ptr::write_volatile(self.ptr.add(i * self.page), 1) };
        }
    }
}

impl Drop for Pages {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping this value owns; no reference
        // into it outlives self.
        unsafe { libc::munmap(self.ptr.cast(), self.pages.max(1) * self.page) };
    }
}

/// Touch `n` fresh pages of a new mapping, then unmap it: exactly `n`
/// minor page faults on the calling thread.
pub fn touch_pages(n: usize) -> io::Result<()> {
    Pages::fresh(n)?.touch();
    Ok(())
}

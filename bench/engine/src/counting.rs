//! The benchmarks' one counting global allocator. A binary installs it with
//! `#[global_allocator] static GLOBAL: Counting = Counting;` and reads what it needs:
//!
//! - [`calls`] and [`bytes`]: allocator calls (`alloc`, `alloc_zeroed`, `realloc`) and the bytes
//!   they asked for (a `realloc` counts its new size), while counting is on ([`count`]);
//! - [`live`]: bytes allocated and not yet freed, while counting is on;
//! - [`logged`]: every event of one call, to tell the blocks still alive afterwards (its output)
//!   from the ones it freed (overhead), following `realloc` chains.
//!
//! Off, it costs one relaxed load per allocator call, so timings taken with it installed are
//! not skewed by the counting.

#![allow(
    unsafe_code,
    reason = "a global allocator is unsafe to implement, and the event log is a static written by it"
)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering::Relaxed};

/// The allocator: the system's, counted.
pub struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static LOGGING: AtomicBool = AtomicBool::new(false);
static CALLS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);
static LIVE: AtomicI64 = AtomicI64::new(0);

/// Turns counting on or off (off at start).
pub fn count(on: bool) {
    COUNTING.store(on, Relaxed);
}

/// Allocator calls counted so far.
pub fn calls() -> u64 {
    CALLS.load(Relaxed)
}

/// Bytes asked for so far.
pub fn bytes() -> u64 {
    BYTES.load(Relaxed)
}

/// Bytes allocated and not freed, counted while counting was on.
pub fn live() -> i64 {
    LIVE.load(Relaxed)
}

/// One allocator event of a logged call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    Alloc { new: usize },
    Realloc { old: usize, new: usize },
    Free { old: usize },
}

const LOG_CAPACITY: usize = 1 << 17;

/// The events of the call being logged. Written only by the allocator while `LOGGING` is on
/// (a benchmark logs one call on one thread), read after it is switched off.
struct EventLog {
    /// `[kind, old, new]`, kind 1 alloc, 2 realloc, 3 free (zeroes: a static that costs no
    /// space in the binary).
    events: UnsafeCell<[[usize; 3]; LOG_CAPACITY]>,
    len: AtomicUsize,
}

// SAFETY: only the logging thread allocates while logging is on (see `logged`); the log is read
// after logging is switched off.
unsafe impl Sync for EventLog {}

static LOG: EventLog = EventLog {
    events: UnsafeCell::new([[0; 3]; LOG_CAPACITY]),
    len: AtomicUsize::new(0),
};

/// Runs `f` once with counting and logging on: its result, and the allocator events it caused
/// (`None` if there were too many to keep). Only the calling thread may allocate meanwhile.
pub fn logged<R>(f: impl FnOnce() -> R) -> (R, Option<Vec<Event>>) {
    LOG.len.store(0, Relaxed);
    let was_counting = COUNTING.swap(true, Relaxed);
    LOGGING.store(true, Relaxed);
    let result = f();
    LOGGING.store(false, Relaxed);
    COUNTING.store(was_counting, Relaxed);
    let len = LOG.len.load(Relaxed);
    let events = (len <= LOG_CAPACITY).then(|| {
        // SAFETY: logging is off; nothing writes the log any more.
        let events = unsafe { &(&*LOG.events.get())[..len] };
        events
            .iter()
            .map(|&[kind, old, new]| match kind {
                ALLOC => Event::Alloc { new },
                REALLOC => Event::Realloc { old, new },
                _ => Event::Free { old },
            })
            .collect()
    });
    (result, events)
}

/// Counts one allocator call: `[kind, old, new]` as logged, the change in live bytes, and the
/// bytes asked for (none for a free).
fn note(event: [usize; 3], live: i64, asked: usize) {
    if !COUNTING.load(Relaxed) {
        return;
    }
    LIVE.fetch_add(live, Relaxed);
    if event[0] != FREE {
        CALLS.fetch_add(1, Relaxed);
        BYTES.fetch_add(asked as u64, Relaxed);
    }
    if LOGGING.load(Relaxed) {
        let i = LOG.len.fetch_add(1, Relaxed);
        if i < LOG_CAPACITY {
            // SAFETY: see `EventLog`; `i` is in bounds and claimed by this call alone.
            unsafe { (*LOG.events.get())[i] = event };
        }
    }
}

const ALLOC: usize = 1;
const REALLOC: usize = 2;
const FREE: usize = 3;

// SAFETY: every call is passed to the system allocator unchanged; counting touches only atomics
// and the event log, and never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc`, passed on.
        let p = unsafe { System.alloc(layout) };
        note([ALLOC, 0, p as usize], layout.size() as i64, layout.size());
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc_zeroed`, passed on.
        let p = unsafe { System.alloc_zeroed(layout) };
        note([ALLOC, 0, p as usize], layout.size() as i64, layout.size());
        p
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract for `realloc`, passed on.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        let grown = new_size as i64 - layout.size() as i64;
        note([REALLOC, ptr as usize, p as usize], grown, new_size);
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note([FREE, ptr as usize, 0], -(layout.size() as i64), 0);
        // SAFETY: the caller's contract for `dealloc`, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

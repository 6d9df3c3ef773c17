//! The memory tree-sitter's parses hold: counted, bounded for the whole
//! process, and given back off the calling thread.
//!
//! tree-sitter allocates through functions the program may install
//! ([`tree_sitter::set_allocator`]); ours put the block's size in front of
//! it, so a free knows what it returns, and keep a per-thread count of the
//! bytes tree-sitter holds. A parse runs on one thread, so the count's
//! growth since the parse began is what that parse holds, read by the
//! parser's progress callback.
//!
//! A parse first takes a [`Reservation`] from one process-wide pool of
//! [`MAX_TOTAL_PARSE_BYTES`]: what it may hold at most, from its file's
//! size alone. Parses that do not fit beside the ones running wait for
//! them (large files parse one at a time), so the state of every parse at
//! once stays within the pool whatever the number of threads or calls.
//!
//! Freeing a large tree takes a while (hundreds of milliseconds for a
//! gigabyte of small blocks), so trees and parsers are dropped by one
//! reaper thread: a call's answer never waits for it, and the reservation
//! goes back to the pool only once the memory is free.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ffi::c_void;
use std::ptr::null_mut;
use std::sync::mpsc::{self, Sender};
use std::sync::{Condvar, Mutex, Once, OnceLock, PoisonError};
use std::time::{Duration, Instant};

/// Most a single parse may hold, whatever its file: normal source holds
/// 17-48 bytes per byte of its file, counted with the allocator's overhead
/// (u-boot's C and Python, Rust crates; the most in a generated data
/// header), about 100 MB for a 2 MiB file.
pub const MAX_PARSE_BYTES: usize = 256 << 20;
/// Most a parse may hold per byte of its file, twenty times what normal
/// source holds: a large nested list literal holds about 190, ambiguous
/// C++ (`a<b<c<…`) over 3,000 on its way; past it a parse is stopped.
pub const MAX_BYTES_PER_SOURCE_BYTE: usize = 1024;
/// What a parse may hold whatever the size of its file (the parser's own
/// tables and stacks).
const PARSE_FLOOR_BYTES: usize = 4 << 20;
/// Most the parses of the whole process may hold together.
pub const MAX_TOTAL_PARSE_BYTES: usize = 2 * MAX_PARSE_BYTES;
/// How often a parse waiting for the pool looks at its deadline and the
/// cancel flag.
const WAIT_STEP: Duration = Duration::from_millis(20);

/// Bytes in front of each block: its size, and the alignment malloc gives.
const HEADER: usize = 16;
/// What the system allocator keeps beside each block, about: counted, so
/// that the count of a parse's many small blocks is near what it costs.
const BLOCK_OVERHEAD: usize = 16;

thread_local! {
    /// Bytes tree-sitter allocated on this thread less those it freed here.
    // Already `const`; the Windows target's newer clippy flags it anyway.
    #[allow(clippy::missing_const_for_thread_local)]
    static THREAD_HELD: Cell<isize> = const { Cell::new(0) };
}

/// Installs the counting allocator, once, before the first parser exists:
/// a block must be freed by the allocator that made it.
pub fn install() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        // SAFETY: runs once, before any tree-sitter object is made (every
        // parser is made after this call), so no block made by the default
        // allocator is ever given to ours.
        unsafe {
            tree_sitter::set_allocator(
                Some(counted_malloc),
                Some(counted_calloc),
                Some(counted_realloc),
                Some(counted_free),
            );
        }
    });
}

/// What tree-sitter holds on this thread (blocks and their overhead), for
/// a parse to read its growth.
pub fn thread_held() -> isize {
    THREAD_HELD.try_with(Cell::get).unwrap_or(0)
}

fn count(bytes: isize) {
    // `try_with`: a thread being torn down may still free.
    let _ = THREAD_HELD.try_with(|held| held.set(held.get() + bytes));
}

fn block_layout(size: usize) -> Option<Layout> {
    Layout::from_size_align(size.checked_add(HEADER)?, HEADER).ok()
}

/// What a block of `size` bytes for tree-sitter costs: the header, the
/// rounding to the alignment and the allocator's own bytes.
fn cost(size: usize) -> isize {
    let rounded = size.saturating_add(HEADER).saturating_add(HEADER - 1) & !(HEADER - 1);
    rounded.saturating_add(BLOCK_OVERHEAD) as isize
}

fn allocate(size: usize, zeroed: bool) -> *mut c_void {
    let Some(layout) = block_layout(size) else {
        return null_mut();
    };
    // SAFETY: the layout's size is at least HEADER, never zero.
    let block = unsafe {
        if zeroed {
            System.alloc_zeroed(layout)
        } else {
            System.alloc(layout)
        }
    };
    if block.is_null() {
        return null_mut();
    }
    // SAFETY: the block holds HEADER bytes, aligned for a usize, before
    // what tree-sitter gets.
    unsafe {
        block.cast::<usize>().write(size);
        count(cost(size));
        block.add(HEADER).cast()
    }
}

unsafe extern "C" fn counted_malloc(size: usize) -> *mut c_void {
    allocate(size, false)
}

unsafe extern "C" fn counted_calloc(items: usize, size: usize) -> *mut c_void {
    match items.checked_mul(size) {
        Some(total) => allocate(total, true),
        None => null_mut(),
    }
}

/// The block in front of `pointer` (one of ours) and the size it holds.
///
/// # Safety
/// `pointer` came from [`allocate`] or [`counted_realloc`] and is live.
unsafe fn block_of(pointer: *mut c_void) -> (*mut u8, usize) {
    // SAFETY: the caller's promise: HEADER bytes before it are ours.
    unsafe {
        let block = pointer.cast::<u8>().sub(HEADER);
        (block, block.cast::<usize>().read())
    }
}

unsafe extern "C" fn counted_realloc(pointer: *mut c_void, size: usize) -> *mut c_void {
    if pointer.is_null() {
        return allocate(size, false);
    }
    // SAFETY: tree-sitter reallocates only blocks it got from us.
    let (block, old_size) = unsafe { block_of(pointer) };
    let (Some(old_layout), Some(new_layout)) = (block_layout(old_size), block_layout(size)) else {
        return null_mut();
    };
    // SAFETY: `block` was allocated by System with `old_layout`; the new
    // size is not zero and its layout valid.
    unsafe {
        let moved = System.realloc(block, old_layout, new_layout.size());
        if moved.is_null() {
            return null_mut();
        }
        moved.cast::<usize>().write(size);
        count(cost(size) - cost(old_size));
        moved.add(HEADER).cast()
    }
}

unsafe extern "C" fn counted_free(pointer: *mut c_void) {
    if pointer.is_null() {
        return;
    }
    // SAFETY: tree-sitter frees only blocks it got from us.
    unsafe {
        let (block, size) = block_of(pointer);
        if let Some(layout) = block_layout(size) {
            System.dealloc(block, layout);
            count(-cost(size));
        }
    }
}

/// What a parse of `source_bytes` may hold at most.
pub fn parse_limit(source_bytes: usize) -> usize {
    source_bytes
        .saturating_mul(MAX_BYTES_PER_SOURCE_BYTE)
        .saturating_add(PARSE_FLOOR_BYTES)
        .min(MAX_PARSE_BYTES)
}

/// The bytes the parses of the process have reserved.
struct Pool {
    reserved: Mutex<usize>,
    released: Condvar,
}

static POOL: Pool = Pool {
    reserved: Mutex::new(0),
    released: Condvar::new(),
};

/// Why a parse could not have its share of the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitEnded {
    Cancelled,
    OutOfTime,
}

/// A share of the pool, given back when dropped.
#[derive(Debug)]
pub struct Reservation {
    bytes: usize,
}

impl Reservation {
    /// `bytes` of the pool (at most [`MAX_PARSE_BYTES`]), waiting while
    /// the parses running hold too much, until `deadline` or `stop` says so.
    pub fn take(
        bytes: usize,
        deadline: Instant,
        stop: impl Fn() -> bool,
    ) -> Result<Self, WaitEnded> {
        let bytes = bytes.min(MAX_PARSE_BYTES);
        let mut reserved = POOL.reserved.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if *reserved + bytes <= MAX_TOTAL_PARSE_BYTES {
                *reserved += bytes;
                return Ok(Self { bytes });
            }
            if stop() {
                return Err(WaitEnded::Cancelled);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(WaitEnded::OutOfTime);
            }
            let step = WAIT_STEP.min(deadline - now);
            reserved = POOL
                .released
                .wait_timeout(reserved, step)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut reserved = POOL.reserved.lock().unwrap_or_else(PoisonError::into_inner);
        *reserved = reserved.saturating_sub(self.bytes);
        drop(reserved);
        POOL.released.notify_all();
    }
}

/// What a parse leaves (its tree, its parser, its reservation), dropped
/// in that order.
pub type Leftovers = Box<dyn Send>;

/// Hands `leftovers` to the reaper thread; frees them here if it cannot run.
pub fn discard(leftovers: Leftovers) {
    static REAPER: OnceLock<Option<Sender<Leftovers>>> = OnceLock::new();
    let reaper = REAPER.get_or_init(|| {
        let (sender, receiver) = mpsc::channel::<Leftovers>();
        std::thread::Builder::new()
            .name("parse-reaper".to_string())
            .spawn(move || receiver.into_iter().for_each(drop))
            .ok()
            .map(|_| sender)
    });
    if let Some(sender) = reaper {
        // Sent, or handed back when the reaper is gone: dropped here then.
        let _ = sender.send(leftovers);
    }
}

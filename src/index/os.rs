//! What the index asks of the operating system and the log, below every
//! other file of index/: the build, the live model and the file list all
//! use these, and none of them imports another for it.

/// Said wherever the large files' filters are dropped to stay within the
/// memory limit: the build and a refresh of the live model.
pub(super) fn log_filters_left_out(limit_bytes: usize) {
    tracing::info!(
        "index: large-file filters left out to stay within the [index] max_memory_mb limit ({} MB); searches read more candidate files",
        limit_bytes / (1024 * 1024)
    );
}

/// The build's scratch memory, freed on its own thread, would stay with
/// that thread's allocator arena; hand it back to the system. This is
/// glibc's heap: every allocation's on aarch64 Linux, tree-sitter's on
/// x86_64, where jemalloc serves the rest and gives freed pages back at
/// once (see main.rs).
pub(super) fn return_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: glibc's malloc_trim has no safe wrapper; it takes a plain
    // integer and only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// glibc allocator arenas a server process keeps: two (jemalloc, where it
/// is the process's allocator, is held to two as well). Memory freed on one
/// thread after another allocated it (a call's scan, the walk's parts
/// moved into the file list, the background's reads and merges) stays in
/// that thread's arena, and glibc makes up to eight per core: calls
/// scanning every half second while a restore read the tenfold tree's
/// 360,000 changed files peaked at 450 MB, with two arenas at about 305.
/// Small allocations are served from each thread's cache without a lock.
const SERVER_ARENAS: i32 = 2;

/// Sets the allocator up for a server process, before its threads start;
/// whether it took (nothing to set up where the allocator is not glibc's).
pub(super) fn limit_allocator_arenas() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: glibc's mallopt has no safe wrapper; it takes two plain
    // integers and sets one of the allocator's own parameters.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, SERVER_ARENAS) == 1
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        let _ = SERVER_ARENAS;
        true
    }
}

/// The build leaves the CPU to other programs first (it pauses for tool
/// calls on its own, see `pacer.rs`): a lower priority, not the lowest, so
/// that a busy machine slows it down without stopping it for good. Nice
/// 10 on Linux (about a tenth of a core against each busy one), background
/// mode (lower CPU and I/O priority) on Windows.
pub(super) fn lower_priority() {
    // On Linux the calling process's id (`None`) names the calling thread
    // alone. Failing leaves the build at normal priority, which is correct,
    // only slower for the first calls.
    #[cfg(target_os = "linux")]
    let _ = rustix::process::setpriority_process(None, 10);
    #[cfg(windows)]
    // SAFETY: GetCurrentThread returns a pseudo handle of the calling
    // thread, which SetThreadPriority only reads. Failing leaves the build
    // at normal priority, as above.
    unsafe {
        use windows_sys::Win32::System::Threading::{
            GetCurrentThread, SetThreadPriority, THREAD_MODE_BACKGROUND_BEGIN,
        };
        SetThreadPriority(GetCurrentThread(), THREAD_MODE_BACKGROUND_BEGIN);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_allocator_takes_the_servers_arena_limit() {
        assert!(super::limit_allocator_arenas());
    }
}

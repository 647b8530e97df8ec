//! Giving freed heap memory back to the kernel after idle agents are
//! unloaded: an allocator keeps freed pages mapped for reuse, so the
//! metadata of thousands of unloaded agents would still count as
//! resident until it happened to reuse them.

/// Returns the allocators' free pages to the kernel: mimalloc's (the
/// binary's heap, `mi_collect`) and glibc's (`malloc_trim`, on glibc;
/// what C libraries such as SQLite allocate). Takes milliseconds on a
/// large heap: call it on a blocking thread.
pub fn give_back_freed() {
    // SAFETY: `mi_collect` only walks mimalloc's own free pages and has no
    // preconditions; with `force` it returns them at once instead of
    // after its purge delay.
    #[allow(unsafe_code)]
    unsafe {
        libmimalloc_sys::mi_collect(true);
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `malloc_trim` only walks the allocator's own free lists
        // under its locks and has no preconditions; 0 keeps no padding.
        #[allow(unsafe_code)]
        unsafe {
            libc::malloc_trim(0);
        }
    }
}

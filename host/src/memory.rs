//! Giving freed heap memory back to the kernel after idle agents are
//! unloaded: glibc's allocator keeps freed pages of its arenas mapped,
//! so the metadata of thousands of unloaded agents would still count as
//! resident until the allocator happened to reuse it.

/// Returns the allocator's free pages to the kernel (`malloc_trim`, on
/// glibc; nothing elsewhere). Takes milliseconds on a large heap: call it
/// on a blocking thread.
pub fn give_back_freed() {
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

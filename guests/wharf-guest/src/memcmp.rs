//! `memcmp` for Rust guests, eight bytes at a time. wasi-libc's compares
//! one byte at a time, and Rust compares slices (`==` on `[u8]`, `str`,
//! hash map keys) through it: in `perf`, 4.8 % of the `waf` filter's time
//! on a CRS request went to it (1.1 % natively, where libc's is
//! vectorised). Defined here, it is the one a guest links: libc's is then
//! never pulled from its archive.

/// Compares `n` bytes at `a` and `b` as unsigned bytes, as C's `memcmp`.
///
/// # Safety
/// `a` and `b` must be valid for reads of `n` bytes.
#[cfg(target_family = "wasm")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn memcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    unsafe { compare(a, b, n) }
}

/// C's `bcmp` (zero when equal), which LLVM may call for equality.
///
/// # Safety
/// As [`memcmp`].
#[cfg(target_family = "wasm")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bcmp(a: *const u8, b: *const u8, n: usize) -> i32 {
    unsafe { compare(a, b, n) }
}

/// The comparison: whole words while they are equal, the first word
/// that differs read in memory order, then the bytes left.
///
/// # Safety
/// `a` and `b` must be valid for reads of `n` bytes.
#[cfg_attr(not(target_family = "wasm"), allow(dead_code))]
unsafe fn compare(a: *const u8, b: *const u8, n: usize) -> i32 {
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: i + 8 <= n, and both are valid for n bytes.
        let (x, y) = unsafe {
            (
                a.add(i).cast::<u64>().read_unaligned(),
                b.add(i).cast::<u64>().read_unaligned(),
            )
        };
        if x != y {
            // In big-endian order the first byte in memory is the most
            // significant, so the words compare as their bytes do.
            return if u64::from_be(x) < u64::from_be(y) {
                -1
            } else {
                1
            };
        }
        i += 8;
    }
    while i < n {
        // SAFETY: i < n.
        let (x, y) = unsafe { (*a.add(i), *b.add(i)) };
        if x != y {
            return i32::from(x) - i32::from(y);
        }
        i += 1;
    }
    0
}

#[cfg(test)]
mod tests {
    use super::compare;

    #[test]
    fn orders_as_slices_do() {
        // xorshift: random lengths and bytes, with long equal prefixes so
        // that the difference falls in every position of a word.
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for _ in 0..50_000 {
            let n = (next() % 40) as usize;
            let a: Vec<u8> = (0..n).map(|_| next() as u8).collect();
            let mut b = a.clone();
            if n > 0 && next() % 4 != 0 {
                // A first difference, and often more after it in the
                // same word (only the first may decide).
                let at = (next() as usize) % n;
                b[at] = next() as u8;
                if next() % 2 == 0 {
                    for x in &mut b[at + 1..] {
                        *x = next() as u8;
                    }
                }
            }
            // Offsets so that reads are not aligned.
            let off = (next() % 8) as usize;
            let (mut pa, mut pb) = (vec![0u8; off], vec![0u8; 7 - off]);
            pa.extend_from_slice(&a);
            pb.extend_from_slice(&b);
            let got = unsafe { compare(pa[off..].as_ptr(), pb[7 - off..].as_ptr(), n) };
            let want = a.cmp(&b);
            assert_eq!(got.cmp(&0), want, "{a:?} {b:?}");
        }
    }
}

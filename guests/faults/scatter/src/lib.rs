//! `scatter`: test fixture for what a fresh instance's memory starts as.
//! Each call counts the pages of two 512 KiB areas (one in the
//! component's data image, one zero-initialized) that are not as the
//! image made them, answers that count, and writes every other page of
//! both: a call dirties 128 disjoint regions, more than the pool's
//! dirty-page scan reports in one pass. A fresh instance must answer 0;
//! a warm one answers 128 from its second call on.

use wharf_guest::{Card, Error, Health, Request, Response};

const PAGE: usize = 4096;
const LEN: usize = 512 << 10;
/// What the image holds in `IMAGE`, and what a call writes.
const FILLED: u8 = 0x5a;
const MARK: u8 = 0xa5;

/// In the data image: not zero, so its pages are copied from the image.
static mut IMAGE: [u8; LEN] = [FILLED; LEN];
/// Zero-initialized memory.
static mut ZEROED: [u8; LEN] = [0; LEN];

/// The pages of `area` whose first byte is not `fresh`; then every other
/// page is written.
///
/// # Safety
/// `area` points to `LEN` bytes that nothing else uses during the call.
unsafe fn count_and_scatter(area: *mut u8, fresh: u8) -> usize {
    let mut stale = 0;
    for page in 0..LEN / PAGE {
        // SAFETY: within the `LEN` bytes of `area`.
        let p = unsafe { area.add(page * PAGE) };
        // SAFETY: as above; volatile so the compiler keeps every access.
        unsafe {
            if p.read_volatile() != fresh {
                stale += 1;
            }
            if page % 2 == 0 {
                p.write_volatile(MARK);
            }
        }
    }
    stale
}

struct Fixture;

impl wharf_guest::Guest for Fixture {
    fn handle(req: Request) -> Result<Response, Error> {
        let _ = req;
        // SAFETY: a guest call runs alone in its instance; the areas are
        // used by no other code.
        let stale = unsafe {
            count_and_scatter((&raw mut IMAGE).cast(), FILLED)
                + count_and_scatter((&raw mut ZEROED).cast(), 0)
        };
        Ok(Response::new(200, stale.to_string()))
    }

    fn describe() -> Card {
        Card::simple(
            "scatter",
            env!("CARGO_PKG_VERSION"),
            "Test fixture: writes scattered pages, and counts those an earlier instance left written",
        )
    }

    fn health() -> Health {
        Health::Ok
    }
}

wharf_guest::export_agent!(Fixture);

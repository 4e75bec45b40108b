//! Where a delivery may connect: addresses refused unless allowed, checked at connect time.

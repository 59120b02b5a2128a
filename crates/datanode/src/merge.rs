//! The merge of a scan's stored rows with the transaction's own writes, in key order.

use crate::RowBytes;
use pgerror::PgResult;
use std::ops::Bound;

/// A transaction's own writes in a scan range: (key, row or None for a delete).
pub(crate) type OwnIter<'a> =
    Box<dyn Iterator<Item = PgResult<(Vec<u8>, Option<RowBytes>)>> + Send + 'a>;
/// The part of them in its in-memory write set.
pub(crate) type MemoryOwnIter<'a> =
    std::collections::btree_map::Range<'a, Vec<u8>, Option<RowBytes>>;

pub(crate) fn as_ref_bound(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(v) => Bound::Included(v.as_slice()),
        Bound::Excluded(v) => Bound::Excluded(v.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// BTreeMap::range panics on inverted or empty-exclusive ranges; check first.
pub(crate) fn range_nonempty(lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    match (lo, hi) {
        (Bound::Included(a), Bound::Included(b)) => a <= b,
        (Bound::Included(a), Bound::Excluded(b)) | (Bound::Excluded(a), Bound::Included(b)) => {
            a < b
        }
        (Bound::Excluded(a), Bound::Excluded(b)) => a < b,
        _ => true,
    }
}

/// A scan's rows: `Datanode::scan` (with keys) and `Datanode::scan_rows`.
pub type ScanRows<'a, T> = Box<dyn Iterator<Item = PgResult<T>> + Send + 'a>;

/// The key of a merged row: a stored row's is decoded only if asked for.
pub(crate) enum ScanKey {
    Stored(storage::StoredKey),
    Own(Vec<u8>),
}

impl ScanKey {
    pub(crate) fn into_vec(self) -> Vec<u8> {
        match self {
            ScanKey::Stored(k) => k.user_key(),
            ScanKey::Own(k) => k,
        }
    }
}

/// Stored rows with the transaction's own writes merged over them, in key order.
pub(crate) struct MergeIter<'a> {
    pub(crate) stored: std::iter::Peekable<storage::ScanIter>,
    pub(crate) own: std::iter::Peekable<OwnIter<'a>>,
}

impl Iterator for MergeIter<'_> {
    type Item = PgResult<(ScanKey, RowBytes)>;

    fn next(&mut self) -> Option<Self::Item> {
        let stored = |r: PgResult<(storage::StoredKey, RowBytes)>| {
            r.map(|(k, row)| (ScanKey::Stored(k), row))
        };
        loop {
            if self.own.peek().is_none() {
                // the common case: nothing of our own (left) here
                return self.stored.next().map(stored);
            }
            let take_own = match (self.stored.peek(), self.own.peek()) {
                (None, None) => return None,
                (Some(Err(_)), _) => return self.stored.next().map(stored),
                (_, Some(Err(_))) | (None, Some(_)) => true,
                (Some(_), None) => false,
                (Some(Ok((sk, _))), Some(Ok((ok, _)))) => match sk.cmp_user_key(ok) {
                    std::cmp::Ordering::Less => false,
                    std::cmp::Ordering::Equal => {
                        self.stored.next(); // shadowed by our own write
                        true
                    }
                    std::cmp::Ordering::Greater => true,
                },
            };
            if take_own {
                match self.own.next().expect("peeked") {
                    Ok((k, Some(row))) => return Some(Ok((ScanKey::Own(k), row))),
                    Ok((_, None)) => continue, // our own delete
                    Err(e) => return Some(Err(e)),
                }
            } else {
                return self.stored.next().map(stored);
            }
        }
    }
}

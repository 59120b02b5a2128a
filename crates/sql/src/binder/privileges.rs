//! What a statement needs of the ACLs (`crate::acl`), gathered as it is bound: SELECT on
//! every relation a FROM clause reads, INSERT/UPDATE/DELETE on a target, SELECT on a
//! target whose columns the statement reads (WHERE, SET's values, RETURNING), UPDATE on
//! rows locked FOR UPDATE/SHARE, TRUNCATE. A view's relations are checked as its owner.

use super::*;
use crate::acl::{AclMode, Object, Required};

impl Binder<'_> {
    /// `privileges` on `relation`, for whoever the relations being bound are checked as.
    pub(super) fn require(&mut self, relation: Object, privileges: AclMode) {
        let checked_as = self.checked_as;
        let oid = relation.oid();
        match (self.required.iter_mut())
            .find(|r| r.relation.oid() == oid && r.checked_as == checked_as)
        {
            Some(r) => r.privileges |= privileges,
            None => self.required.push(Required {
                relation,
                privileges,
                checked_as,
            }),
        }
    }

    /// `bind` with the relations it reads checked as `owner`'s (a view's query).
    pub(super) fn checked_as_owner<T>(
        &mut self,
        owner: u32,
        bind: impl FnOnce(&mut Self) -> T,
    ) -> T {
        let outer = self.checked_as.replace(owner);
        let bound = bind(self);
        self.checked_as = outer;
        bound
    }

    /// Everything gathered so far (a statement whose relations are checked elsewhere, or
    /// never, as CREATE VIEW's query is not until the view is read).
    pub(super) fn take_required(&mut self) -> Vec<Required> {
        std::mem::take(&mut self.required)
    }
}

/// Whether any of `exprs` reads a column of the row it is evaluated over (of the first
/// `width` columns: an ON CONFLICT row's own, not EXCLUDED's).
pub(super) fn reads_columns<'e>(exprs: impl IntoIterator<Item = &'e Expr>, width: usize) -> bool {
    let mut reads = false;
    for e in exprs {
        e.visit(&mut |e| {
            if let Expr::Column {
                depth: 0, index, ..
            } = e
            {
                reads |= *index < width;
            }
        });
    }
    reads
}

/// The expressions of RETURNING.
pub(super) fn returned(
    returning: &Option<Vec<(Expr, OutputColumn)>>,
) -> impl Iterator<Item = &Expr> {
    returning.iter().flatten().map(|(e, _)| e)
}

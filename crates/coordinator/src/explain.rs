//! EXPLAIN in a cluster: which datanodes each scan and write of the plan goes to
//! (`sql::explain` prints the plan; this says where its rows are).

use crate::server::Shared;
use distribution::RelPlacement;
use sql::catalog::TableDef;
use sql::plan::{Access, Expr};
use sql::Statement;
use types::Value;

/// The lines of `EXPLAIN stmt`, with what its run measured under EXPLAIN ANALYZE.
pub fn explain(
    shared: &Shared,
    stmt: &Statement,
    measured: Option<&sql::explain::Measured>,
) -> Vec<String> {
    sql::explain::explain(stmt, &Cluster(shared), measured)
}

struct Cluster<'s>(&'s Shared);

impl Cluster<'_> {
    /// The datanodes' names, in bucket-map order; None with one datanode.
    fn names(&self) -> Option<Vec<String>> {
        let members = &self.0.cluster.members;
        (members.len() > 1).then(|| {
            members
                .iter()
                .map(|n| format!("datanode{}", n.id))
                .collect()
        })
    }

    /// The datanode of the one row `access` names, if it is known before the statement
    /// runs (its key is constants): Some(None) when it is not.
    fn datanode_of(&self, table: &TableDef, access: &Access) -> Option<Option<usize>> {
        let Access::PrimaryKey(exprs) = access else {
            return None;
        };
        let values: Option<Vec<Value>> = exprs
            .iter()
            .map(|e| match e {
                Expr::Const(v, _) => Some(v.clone()),
                _ => None,
            })
            .collect();
        let key = values.and_then(|v| crate::exec::key_of_values(&v));
        Some(key.and_then(|k| {
            self.0
                .datanodes
                .datanode_of_key(table.rel, &k)
                .ok()
                .flatten()
        }))
    }

    /// What says where the row of a point access lives.
    fn one_row(&self, table: &TableDef, names: &[String], at: Option<usize>) -> String {
        match at {
            Some(i) => format!("Datanode: {}", names[i]),
            None => format!(
                "Datanode: one, by the hash of {}",
                distribution_column(table)
            ),
        }
    }
}

fn distribution_column(table: &TableDef) -> String {
    match table.distribution {
        sql::catalog::Distribution::Hash { column } => table.columns[column].name.clone(),
        _ => "the row id".into(),
    }
}

impl sql::explain::Placement for Cluster<'_> {
    fn scan_lines(&self, table: &TableDef, access: &Access, route: Option<&Expr>) -> Vec<String> {
        let Some(names) = self.names() else {
            return Vec::new();
        };
        let routed = route.map(|r| match r {
            Expr::Const(v, _) => self
                .0
                .datanodes
                .datanode_of_value(table.rel, Some(v))
                .ok()
                .flatten(),
            _ => None,
        });
        let line = match (
            RelPlacement::of(table),
            routed.or(self.datanode_of(table, access)),
        ) {
            (RelPlacement::Replicated, _) => {
                format!("Datanode: one of {} (replicated)", names.join(", "))
            }
            (_, Some(at)) => self.one_row(table, &names, at),
            (_, None) => format!("Datanodes: {}", names.join(", ")),
        };
        vec![line]
    }

    fn write_lines(&self, table: &TableDef, access: &Access) -> Vec<String> {
        let Some(names) = self.names() else {
            return Vec::new();
        };
        let line = match (RelPlacement::of(table), self.datanode_of(table, access)) {
            (RelPlacement::Replicated, _) | (_, None) => {
                format!("Datanodes: {}", names.join(", "))
            }
            (_, Some(at)) => self.one_row(table, &names, at),
        };
        vec![line]
    }

    fn insert_lines(&self, table: &TableDef) -> Vec<String> {
        let Some(names) = self.names() else {
            return Vec::new();
        };
        let line = match RelPlacement::of(table) {
            RelPlacement::Replicated => format!("Datanodes: {}", names.join(", ")),
            _ => format!(
                "Datanodes: {}, by the hash of {}",
                names.join(", "),
                distribution_column(table)
            ),
        };
        vec![line]
    }
}

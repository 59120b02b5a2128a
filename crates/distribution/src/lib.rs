//! Rows over datanodes (decision 0028): the placement of each relation's rows, and the
//! client through which the coordinator reaches all its datanodes as one.
//!
//! `Datanodes` has the calls of `datanode_client::DatanodeClient`, and a `ClusterTxn` is
//! a transaction's part on every datanode (`DatanodeTxn`s with one start timestamp). A
//! call that names a row goes to the datanode of the row's bucket (every datanode for a
//! replicated relation's write); a scan goes to all and merges their rows in key order;
//! a commit is one phase on one participant and two-phase across several.
//!
//! With one datanode (`meridian start`) every call is the datanode client's own call on
//! the one part, with no lookup, so the embedded server pays nothing for the cluster.

mod bulk;
mod commit;
mod datanodes;
mod deadlock;
pub mod placement;
mod prepared;
mod scan;

pub use bulk::ClusterBulkLoad;
pub use commit::AfterDecision;
pub use datanodes::{ClusterSavepoint, ClusterTxn, Datanodes};
pub use placement::{new_row_id, RelPlacement, BUCKETS};
pub use scan::ClusterScan;

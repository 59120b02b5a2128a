//! The coordinator (see README.md): accepts PostgreSQL connections, binds and plans
//! statements, runs transactions against the GTM and the datanode.

pub mod access;
pub mod activity;
pub mod alter_table;
pub mod bulk;
pub mod catalog;
pub mod copy;
pub mod copy_binary;
pub mod copy_out;
pub mod ddl;
pub mod ddl_log;
pub mod dml;
pub mod exec;
pub mod executors;
mod explain;
mod foreign_keys;
mod grant_ddl;
pub mod hot_future;
pub mod index;
pub mod index_ddl;
pub mod information_schema;
pub mod metrics;
pub mod nodes;
pub mod output;
pub mod ownership;
pub mod pending_ddl;
pub mod plan_cache;
pub mod privileges;
pub mod role_ddl;
pub mod role_membership;
pub mod sequence_ddl;
pub mod sequences;
pub mod server;
pub mod session;
pub mod session_io;
pub mod settings;
pub mod spool;
pub mod statement_stats;
pub mod system;
pub mod system_checks;
pub mod system_foreign_keys;
pub mod system_indexes;
pub mod tls;
pub mod type_ddl;
pub mod view_ddl;

pub use server::{ClusterMembership, Connector, Coordinator, CoordinatorConfig};

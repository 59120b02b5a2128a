//! PostgreSQL 15's predefined roles (pg_monitor, pg_read_all_data, …): built in, never
//! stored, found by name and OID beside the catalog's roles (`LiveCatalog::role`), so they
//! can be granted to roles. What membership in one allows is checked where that is
//! decided: reading other roles' sessions and statements (pg_read_all_stats, system.rs),
//! signalling their sessions (pg_signal_backend), and every table's SELECT
//! (pg_read_all_data) or INSERT, UPDATE and DELETE (pg_write_all_data) in `ownership::Who`.
//! They cannot be altered or dropped, and have no members of their own here but
//! pg_monitor's, as in a fresh PostgreSQL cluster.

use sql::role::{Membership, RoleDef, BOOTSTRAP_SUPERUSER_OID};
use std::sync::{Arc, LazyLock};

pub const PG_DATABASE_OWNER: u32 = sql::acl::PG_DATABASE_OWNER;
pub const PG_READ_ALL_DATA: u32 = 6181;
pub const PG_WRITE_ALL_DATA: u32 = 6182;
pub const PG_MONITOR: u32 = 3373;
pub const PG_READ_ALL_SETTINGS: u32 = 3374;
pub const PG_READ_ALL_STATS: u32 = 3375;
pub const PG_STAT_SCAN_TABLES: u32 = 3377;
pub const PG_SIGNAL_BACKEND: u32 = 4200;

const NAMES: &[(&str, u32)] = &[
    ("pg_database_owner", PG_DATABASE_OWNER),
    ("pg_read_all_data", PG_READ_ALL_DATA),
    ("pg_write_all_data", PG_WRITE_ALL_DATA),
    ("pg_monitor", PG_MONITOR),
    ("pg_read_all_settings", PG_READ_ALL_SETTINGS),
    ("pg_read_all_stats", PG_READ_ALL_STATS),
    ("pg_stat_scan_tables", PG_STAT_SCAN_TABLES),
    ("pg_read_server_files", 4569),
    ("pg_write_server_files", 4570),
    ("pg_execute_server_program", 4571),
    ("pg_signal_backend", PG_SIGNAL_BACKEND),
    ("pg_checkpoint", 4544),
];

static ROLES: LazyLock<Vec<Arc<RoleDef>>> = LazyLock::new(|| {
    NAMES
        .iter()
        .map(|&(name, oid)| {
            let mut role = RoleDef::new(oid, name);
            if oid == PG_MONITOR {
                // initdb's GRANTs (system_views.sql)
                role.member_of = [PG_READ_ALL_SETTINGS, PG_READ_ALL_STATS, PG_STAT_SCAN_TABLES]
                    .map(|role| Membership {
                        role,
                        admin: false,
                        grantor: BOOTSTRAP_SUPERUSER_OID,
                    })
                    .into();
            }
            Arc::new(role)
        })
        .collect()
});

/// Every predefined role, in PostgreSQL's pg_authid order.
pub fn all() -> &'static [Arc<RoleDef>] {
    &ROLES
}

pub fn by_name(name: &str) -> Option<Arc<RoleDef>> {
    ROLES.iter().find(|r| r.name == name).cloned()
}

pub fn by_oid(oid: u32) -> Option<Arc<RoleDef>> {
    ROLES.iter().find(|r| r.oid == oid).cloned()
}

pub fn is_predefined(oid: u32) -> bool {
    NAMES.iter().any(|&(_, o)| o == oid)
}

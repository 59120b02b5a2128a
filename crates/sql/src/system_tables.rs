//! The system catalog tables the binder knows: names, PostgreSQL 15 OIDs, and the
//! columns (the subset clients read). Their rows are computed by the coordinator.

use crate::plan::SystemTable;
use types::DataType;

/// The system catalog tables Meridian answers.
pub fn system_table(name: &str) -> Option<SystemTable> {
    use SystemTable::*;
    Some(match name {
        "pg_class" => PgClass,
        "pg_namespace" => PgNamespace,
        "pg_attribute" => PgAttribute,
        "pg_type" => PgType,
        "pg_index" => PgIndex,
        "pg_database" => PgDatabase,
        "pg_am" => PgAm,
        "pg_constraint" => PgConstraint,
        "pg_inherits" => PgInherits,
        "pg_partitioned_table" => PgPartitionedTable,
        "pg_roles" => PgRoles,
        "pg_attrdef" => PgAttrdef,
        "pg_description" => PgDescription,
        "pg_tablespace" => PgTablespace,
        "pg_settings" => PgSettings,
        "pg_range" => PgRange,
        "pg_enum" => PgEnum,
        "pg_proc" => PgProc,
        "pg_collation" => PgCollation,
        "pg_policy" => PgPolicy,
        "pg_statistic_ext" => PgStatisticExt,
        "pg_publication" => PgPublication,
        "pg_publication_rel" => PgPublicationRel,
        "pg_publication_namespace" => PgPublicationNamespace,
        "pg_trigger" => PgTrigger,
        "pg_foreign_table" => PgForeignTable,
        "pg_stat_activity" => PgStatActivity,
        "pg_extension" => PgExtension,
        "pg_user" => PgUser,
        "pg_authid" => PgAuthid,
        "pg_auth_members" => PgAuthMembers,
        "pg_db_role_setting" => PgDbRoleSetting,
        "pg_event_trigger" => PgEventTrigger,
        _ => return None,
    })
}

/// pg_class OIDs of the system catalogs (as in PostgreSQL 15).
pub fn system_table_oid(t: SystemTable) -> u32 {
    use SystemTable::*;
    match t {
        PgClass => 1259,
        PgNamespace => 2615,
        PgAttribute => 1249,
        PgType => 1247,
        PgIndex => 2610,
        PgDatabase => 1262,
        PgAm => 2601,
        PgConstraint => 2606,
        PgInherits => 2611,
        PgPartitionedTable => 3350,
        PgRoles => 12001,
        PgAttrdef => 2604,
        PgDescription => 2609,
        PgTablespace => 1213,
        PgSettings => 12002,
        PgRange => 3541,
        PgEnum => 3501,
        PgProc => 1255,
        PgCollation => 3456,
        PgPolicy => 3256,
        PgStatisticExt => 3381,
        PgPublication => 6104,
        PgPublicationRel => 6106,
        PgPublicationNamespace => 6237,
        PgTrigger => 2620,
        PgForeignTable => 3118,
        PgStatActivity => 12003,
        PgExtension => 3079,
        PgUser => 12004,
        PgAuthid => 1260,
        PgAuthMembers => 1261,
        PgDbRoleSetting => 2964,
        PgEventTrigger => 3466,
    }
}

/// Column names and types of each system table (the subset clients read).
pub fn system_columns(t: SystemTable) -> Vec<(&'static str, DataType)> {
    use DataType::*;
    use SystemTable::*;
    let arr = |t: DataType| Array(Box::new(t));
    match t {
        PgClass => vec![
            ("oid", Oid), ("relname", Name), ("relnamespace", Oid), ("reltype", Oid), ("reloftype", Oid), ("relowner", Oid),
            ("relam", Oid), ("relfilenode", Oid), ("reltablespace", Oid), ("relpages", Int4), ("reltuples", Float4),
            ("relallvisible", Int4), ("reltoastrelid", Oid), ("relhasindex", Bool), ("relisshared", Bool),
            ("relpersistence", Char), ("relkind", Char), ("relnatts", Int2), ("relchecks", Int2), ("relhasrules", Bool),
            ("relhastriggers", Bool), ("relhassubclass", Bool), ("relrowsecurity", Bool), ("relforcerowsecurity", Bool),
            ("relispopulated", Bool), ("relreplident", Char), ("relispartition", Bool), ("relrewrite", Oid),
            ("relfrozenxid", Int8), ("relminmxid", Int8), ("relacl", arr(Text)), ("reloptions", arr(Text)), ("relpartbound", PgNodeTree),
        ],
        PgNamespace => vec![("oid", Oid), ("nspname", Name), ("nspowner", Oid), ("nspacl", arr(Text))],
        PgAttribute => vec![
            ("attrelid", Oid), ("attname", Name), ("atttypid", Oid), ("attstattarget", Int4), ("attlen", Int2), ("attnum", Int2),
            ("attndims", Int4), ("attcacheoff", Int4), ("atttypmod", Int4), ("attbyval", Bool), ("attalign", Char),
            ("attstorage", Char), ("attcompression", Char), ("attnotnull", Bool), ("atthasdef", Bool), ("atthasmissing", Bool),
            ("attidentity", Char), ("attgenerated", Char), ("attisdropped", Bool), ("attislocal", Bool), ("attinhcount", Int4),
            ("attcollation", Oid), ("attacl", arr(Text)), ("attoptions", arr(Text)), ("attfdwoptions", arr(Text)),
        ],
        PgType => vec![
            ("oid", Oid), ("typname", Name), ("typnamespace", Oid), ("typowner", Oid), ("typlen", Int2), ("typbyval", Bool),
            ("typtype", Char), ("typcategory", Char), ("typispreferred", Bool), ("typisdefined", Bool), ("typdelim", Char),
            ("typrelid", Oid), ("typsubscript", RegProc), ("typelem", Oid), ("typarray", Oid), ("typinput", RegProc), ("typoutput", RegProc),
            ("typreceive", RegProc), ("typsend", RegProc), ("typalign", Char), ("typstorage", Char), ("typnotnull", Bool),
            ("typbasetype", Oid), ("typtypmod", Int4), ("typndims", Int4), ("typcollation", Oid), ("typdefault", Text),
        ],
        PgIndex => vec![
            ("indexrelid", Oid), ("indrelid", Oid), ("indnatts", Int2), ("indnkeyatts", Int2), ("indisunique", Bool),
            ("indnullsnotdistinct", Bool), ("indisprimary", Bool), ("indisexclusion", Bool), ("indimmediate", Bool),
            ("indisclustered", Bool), ("indisvalid", Bool), ("indcheckxmin", Bool), ("indisready", Bool), ("indislive", Bool),
            ("indisreplident", Bool), ("indkey", Int2Vector), ("indcollation", OidVector), ("indclass", OidVector),
            ("indoption", Int2Vector), ("indexprs", PgNodeTree), ("indpred", PgNodeTree),
        ],
        PgDatabase => vec![
            ("oid", Oid), ("datname", Name), ("datdba", Oid), ("encoding", Int4), ("datlocprovider", Char), ("datistemplate", Bool),
            ("datallowconn", Bool), ("datconnlimit", Int4), ("datfrozenxid", Int8), ("datminmxid", Int8), ("dattablespace", Oid),
            ("datcollate", Text), ("datctype", Text), ("daticulocale", Text), ("datcollversion", Text), ("datacl", arr(Text)),
        ],
        PgAm => vec![("oid", Oid), ("amname", Name), ("amhandler", Oid), ("amtype", Char)],
        PgConstraint => vec![
            ("oid", Oid), ("conname", Name), ("connamespace", Oid), ("contype", Char), ("condeferrable", Bool),
            ("condeferred", Bool), ("convalidated", Bool), ("conrelid", Oid), ("contypid", Oid), ("conindid", Oid),
            ("conparentid", Oid), ("confrelid", Oid), ("confupdtype", Char), ("confdeltype", Char), ("confmatchtype", Char),
            ("conislocal", Bool), ("coninhcount", Int4), ("connoinherit", Bool), ("conkey", arr(Int2)), ("confkey", arr(Int2)),
            ("conbin", PgNodeTree),
        ],
        PgInherits => vec![("inhrelid", Oid), ("inhparent", Oid), ("inhseqno", Int4), ("inhdetachpending", Bool)],
        PgPartitionedTable => vec![("partrelid", Oid), ("partstrat", Char), ("partnatts", Int2), ("partdefid", Oid)],
        PgRoles | PgUser | PgAuthid => vec![
            ("rolname", Name), ("rolsuper", Bool), ("rolinherit", Bool), ("rolcreaterole", Bool), ("rolcreatedb", Bool),
            ("rolcanlogin", Bool), ("rolreplication", Bool), ("rolconnlimit", Int4), ("rolpassword", Text),
            ("rolvaliduntil", TimestampTz), ("rolbypassrls", Bool), ("rolconfig", arr(Text)), ("oid", Oid),
        ],
        PgAttrdef => vec![("oid", Oid), ("adrelid", Oid), ("adnum", Int2), ("adbin", PgNodeTree)],
        PgDescription => vec![("objoid", Oid), ("classoid", Oid), ("objsubid", Int4), ("description", Text)],
        PgTablespace => vec![("oid", Oid), ("spcname", Name), ("spcowner", Oid), ("spcacl", arr(Text)), ("spcoptions", arr(Text))],
        PgSettings => vec![("name", Text), ("setting", Text), ("unit", Text), ("category", Text), ("short_desc", Text)],
        PgRange => vec![("rngtypid", Oid), ("rngsubtype", Oid), ("rngmultitypid", Oid), ("rngcollation", Oid), ("rngsubopc", Oid)],
        PgEnum => vec![("oid", Oid), ("enumtypid", Oid), ("enumsortorder", Float4), ("enumlabel", Name)],
        PgProc => vec![("oid", Oid), ("proname", Name), ("pronamespace", Oid), ("prorettype", Oid), ("prokind", Char)],
        PgCollation => vec![("oid", Oid), ("collname", Name), ("collnamespace", Oid)],
        PgPolicy => vec![
            ("oid", Oid), ("polname", Name), ("polrelid", Oid), ("polcmd", Char), ("polpermissive", Bool), ("polroles", arr(Oid)),
            ("polqual", PgNodeTree), ("polwithcheck", PgNodeTree),
        ],
        PgStatisticExt => vec![
            ("oid", Oid), ("stxrelid", Oid), ("stxname", Name), ("stxnamespace", Oid), ("stxowner", Oid), ("stxstattarget", Int4),
            ("stxkeys", Int2Vector), ("stxkind", arr(Char)), ("stxexprs", PgNodeTree),
        ],
        PgPublication => vec![
            ("oid", Oid), ("pubname", Name), ("pubowner", Oid), ("puballtables", Bool), ("pubinsert", Bool), ("pubupdate", Bool),
            ("pubdelete", Bool), ("pubtruncate", Bool), ("pubviaroot", Bool),
        ],
        PgPublicationRel => vec![("oid", Oid), ("prpubid", Oid), ("prrelid", Oid), ("prqual", PgNodeTree), ("prattrs", Int2Vector)],
        PgPublicationNamespace => vec![("oid", Oid), ("pnpubid", Oid), ("pnnspid", Oid)],
        PgTrigger => vec![
            ("oid", Oid), ("tgrelid", Oid), ("tgparentid", Oid), ("tgname", Name), ("tgfoid", Oid), ("tgtype", Int2),
            ("tgenabled", Char), ("tgisinternal", Bool), ("tgconstrrelid", Oid), ("tgconstrindid", Oid), ("tgconstraint", Oid),
        ],
        PgForeignTable => vec![("ftrelid", Oid), ("ftserver", Oid), ("ftoptions", arr(Text))],
        PgStatActivity => vec![
            ("datid", Oid), ("datname", Name), ("pid", Int4), ("usename", Name), ("application_name", Text), ("state", Text), ("query", Text),
        ],
        PgExtension => vec![("oid", Oid), ("extname", Name), ("extowner", Oid), ("extnamespace", Oid), ("extversion", Text)],
        PgEventTrigger => vec![
            ("oid", Oid), ("evtname", Name), ("evtevent", Name), ("evtowner", Oid), ("evtfoid", Oid), ("evtenabled", Char),
            ("evttags", arr(Text)),
        ],
        PgDbRoleSetting => vec![("setdatabase", Oid), ("setrole", Oid), ("setconfig", arr(Text))],
        PgAuthMembers => vec![("roleid", Oid), ("member", Oid), ("grantor", Oid), ("admin_option", Bool)],
    }
}

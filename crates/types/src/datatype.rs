//! PostgreSQL data types as Meridian knows them, with their OIDs.

/// Well-known PostgreSQL type OIDs (pg_type.oid).
pub mod oid {
    pub const BOOL: u32 = 16;
    pub const BYTEA: u32 = 17;
    pub const CHAR: u32 = 18; // "char", one byte
    pub const NAME: u32 = 19;
    pub const INT8: u32 = 20;
    pub const INT2: u32 = 21;
    pub const INT2VECTOR: u32 = 22;
    pub const INT4: u32 = 23;
    pub const REGPROC: u32 = 24;
    pub const TEXT: u32 = 25;
    pub const OID: u32 = 26;
    pub const OIDVECTOR: u32 = 30;
    pub const FLOAT4: u32 = 700;
    pub const FLOAT8: u32 = 701;
    pub const UNKNOWN: u32 = 705;
    pub const BOOL_ARRAY: u32 = 1000;
    pub const CHAR_ARRAY: u32 = 1002;
    pub const NAME_ARRAY: u32 = 1003;
    pub const INT2_ARRAY: u32 = 1005;
    pub const INT4_ARRAY: u32 = 1007;
    pub const TEXT_ARRAY: u32 = 1009;
    pub const VARCHAR_ARRAY: u32 = 1015;
    pub const INT8_ARRAY: u32 = 1016;
    pub const FLOAT4_ARRAY: u32 = 1021;
    pub const FLOAT8_ARRAY: u32 = 1022;
    pub const OID_ARRAY: u32 = 1028;
    pub const ACLITEM: u32 = 1033;
    pub const ACLITEM_ARRAY: u32 = 1034;
    pub const BPCHAR: u32 = 1042;
    pub const VARCHAR: u32 = 1043;
    pub const DATE: u32 = 1082;
    pub const TIME: u32 = 1083;
    pub const TIMESTAMP: u32 = 1114;
    pub const TIMESTAMPTZ: u32 = 1184;
    pub const INTERVAL: u32 = 1186;
    pub const NUMERIC: u32 = 1700;
    pub const REGCLASS: u32 = 2205;
    pub const REGTYPE: u32 = 2206;
    pub const REGNAMESPACE: u32 = 4089;
    pub const PG_NODE_TREE: u32 = 194;
}

/// A SQL data type, with the modifiers PostgreSQL keeps in `atttypmod`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DataType {
    Bool,
    Int2,
    Int4,
    Int8,
    Float4,
    Float8,
    /// `numeric(p,s)`: `precision_scale` is `Some((p, s))`, `None` when unconstrained.
    Numeric { precision_scale: Option<(u16, u16)> },
    Text,
    Varchar { max_len: Option<u32> },
    /// `character(n)` (bpchar); `None` is bare `bpchar` (no padding).
    Bpchar { len: Option<u32> },
    Name,
    /// The one-byte `"char"` type of the catalogs.
    Char,
    Bytea,
    Date,
    Time,
    Timestamp,
    TimestampTz,
    Interval,
    Oid,
    RegClass,
    RegProc,
    RegType,
    RegNamespace,
    PgNodeTree,
    Int2Vector,
    OidVector,
    /// One-dimensional array of the element type.
    Array(Box<DataType>),
    /// An untyped literal or a parameter whose type is not known yet.
    Unknown,
}

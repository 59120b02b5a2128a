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
    pub const VOID: u32 = 2278;
    pub const BYTEA_ARRAY: u32 = 1001;
    pub const INT2VECTOR_ARRAY: u32 = 1006;
    pub const REGPROC_ARRAY: u32 = 1008;
    pub const OIDVECTOR_ARRAY: u32 = 1013;
    pub const BPCHAR_ARRAY: u32 = 1014;
    pub const TIMESTAMP_ARRAY: u32 = 1115;
    pub const DATE_ARRAY: u32 = 1182;
    pub const TIME_ARRAY: u32 = 1183;
    pub const TIMESTAMPTZ_ARRAY: u32 = 1185;
    pub const INTERVAL_ARRAY: u32 = 1187;
    pub const NUMERIC_ARRAY: u32 = 1231;
    pub const REGCLASS_ARRAY: u32 = 2210;
    pub const REGTYPE_ARRAY: u32 = 2211;
    pub const REGNAMESPACE_ARRAY: u32 = 4090;
    pub const UUID: u32 = 2950;
    pub const UUID_ARRAY: u32 = 2951;
    pub const JSON: u32 = 114;
    pub const JSON_ARRAY: u32 = 199;
    pub const JSONB: u32 = 3802;
    pub const JSONB_ARRAY: u32 = 3807;
}

/// A SQL data type, with the modifiers PostgreSQL keeps in `atttypmod`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum DataType {
    Bool,
    Int2,
    Int4,
    Int8,
    Float4,
    Float8,
    /// `numeric(p,s)`: `precision_scale` is `Some((p, s))`, `None` when unconstrained.
    Numeric {
        precision_scale: Option<(u16, i16)>,
    },
    Text,
    Varchar {
        max_len: Option<u32>,
    },
    /// `character(n)` (bpchar); `None` is bare `bpchar` (no padding).
    Bpchar {
        len: Option<u32>,
    },
    Name,
    /// The one-byte `"char"` type of the catalogs.
    Char,
    Bytea,
    Date,
    /// `time(p)` / `timestamp(p)` / `timestamptz(p)` / `interval(p)`: `precision` is the
    /// number of fractional-second digits kept (0..=6), `None` when unconstrained.
    Time {
        precision: Option<u8>,
    },
    Timestamp {
        precision: Option<u8>,
    },
    TimestampTz {
        precision: Option<u8>,
    },
    Interval {
        precision: Option<u8>,
    },
    Oid,
    RegClass,
    RegProc,
    RegType,
    RegNamespace,
    PgNodeTree,
    Int2Vector,
    OidVector,
    Uuid,
    /// `json`: its text as given (a `Value::Text`).
    Json,
    /// `jsonb`: a `Value::Jsonb`.
    Jsonb,
    /// One-dimensional array of the element type.
    Array(Box<DataType>),
    /// An enum type (`crate::enums`): its values are `Value::Enum`.
    Enum(std::sync::Arc<crate::enums::EnumType>),
    /// An untyped literal or a parameter whose type is not known yet.
    Unknown,
    /// The pseudo-type of functions that return nothing (pg_sleep): an empty text value.
    Void,
}

use pgerror::{codes, PgError, PgResult};

/// Longest `varchar(n)` / `char(n)` PostgreSQL accepts.
pub const MAX_VARCHAR_LEN: i32 = 10_485_760;
/// Most fractional-second digits `time(p)`, `timestamp(p)` and `interval(p)` keep.
pub const MAX_TIME_PRECISION: u8 = 6;
/// Longest numeric precision PostgreSQL accepts in a type modifier.
pub const MAX_NUMERIC_PRECISION: i32 = 1000;
/// NAMEDATALEN - 1: the most bytes a `name` holds.
pub const NAME_MAX_BYTES: usize = 63;

impl DataType {
    /// Shorthand for `numeric` without modifiers.
    pub const NUMERIC: DataType = DataType::Numeric {
        precision_scale: None,
    };
    pub const VARCHAR: DataType = DataType::Varchar { max_len: None };
    pub const TIME: DataType = DataType::Time { precision: None };
    pub const TIMESTAMP: DataType = DataType::Timestamp { precision: None };
    pub const TIMESTAMPTZ: DataType = DataType::TimestampTz { precision: None };
    pub const INTERVAL: DataType = DataType::Interval { precision: None };

    /// pg_type.oid of this type (arrays: the array type's OID; 0 where PG has none).
    pub fn oid(&self) -> u32 {
        use DataType::*;
        match self {
            Bool => oid::BOOL,
            Int2 => oid::INT2,
            Int4 => oid::INT4,
            Int8 => oid::INT8,
            Float4 => oid::FLOAT4,
            Float8 => oid::FLOAT8,
            Numeric { .. } => oid::NUMERIC,
            Text => oid::TEXT,
            Varchar { .. } => oid::VARCHAR,
            Bpchar { .. } => oid::BPCHAR,
            Name => oid::NAME,
            Char => oid::CHAR,
            Bytea => oid::BYTEA,
            Date => oid::DATE,
            Time { .. } => oid::TIME,
            Timestamp { .. } => oid::TIMESTAMP,
            TimestampTz { .. } => oid::TIMESTAMPTZ,
            Interval { .. } => oid::INTERVAL,
            Oid => oid::OID,
            RegClass => oid::REGCLASS,
            RegProc => oid::REGPROC,
            RegType => oid::REGTYPE,
            RegNamespace => oid::REGNAMESPACE,
            PgNodeTree => oid::PG_NODE_TREE,
            Void => oid::VOID,
            Int2Vector => oid::INT2VECTOR,
            OidVector => oid::OIDVECTOR,
            Uuid => oid::UUID,
            Json => oid::JSON,
            Jsonb => oid::JSONB,
            Unknown => oid::UNKNOWN,
            Enum(e) => e.oid,
            Array(e) => match e.as_ref() {
                Bool => oid::BOOL_ARRAY,
                Int2 => oid::INT2_ARRAY,
                Int4 => oid::INT4_ARRAY,
                Int8 => oid::INT8_ARRAY,
                Float4 => oid::FLOAT4_ARRAY,
                Float8 => oid::FLOAT8_ARRAY,
                Numeric { .. } => oid::NUMERIC_ARRAY,
                Text => oid::TEXT_ARRAY,
                Varchar { .. } => oid::VARCHAR_ARRAY,
                Bpchar { .. } => oid::BPCHAR_ARRAY,
                Name => oid::NAME_ARRAY,
                Char => oid::CHAR_ARRAY,
                Bytea => oid::BYTEA_ARRAY,
                Date => oid::DATE_ARRAY,
                Time { .. } => oid::TIME_ARRAY,
                Timestamp { .. } => oid::TIMESTAMP_ARRAY,
                TimestampTz { .. } => oid::TIMESTAMPTZ_ARRAY,
                Interval { .. } => oid::INTERVAL_ARRAY,
                Oid => oid::OID_ARRAY,
                RegClass => oid::REGCLASS_ARRAY,
                RegProc => oid::REGPROC_ARRAY,
                RegType => oid::REGTYPE_ARRAY,
                RegNamespace => oid::REGNAMESPACE_ARRAY,
                Int2Vector => oid::INT2VECTOR_ARRAY,
                OidVector => oid::OIDVECTOR_ARRAY,
                Uuid => oid::UUID_ARRAY,
                Json => oid::JSON_ARRAY,
                Jsonb => oid::JSONB_ARRAY,
                Enum(e) => e.array_oid,
                PgNodeTree | Unknown | Void | Array(_) => 0,
            },
        }
    }

    /// The type for a pg_type OID (modifiers unknown: `varchar`, `numeric` unconstrained).
    pub fn from_oid(o: u32) -> Option<DataType> {
        use DataType::*;
        let scalar = |o: u32| -> Option<DataType> {
            Some(match o {
                oid::BOOL => Bool,
                oid::INT2 => Int2,
                oid::INT4 => Int4,
                oid::INT8 => Int8,
                oid::FLOAT4 => Float4,
                oid::FLOAT8 => Float8,
                oid::NUMERIC => DataType::NUMERIC,
                oid::TEXT => Text,
                oid::VARCHAR => Varchar { max_len: None },
                oid::BPCHAR => Bpchar { len: None },
                oid::NAME => Name,
                oid::CHAR => Char,
                oid::BYTEA => Bytea,
                oid::DATE => Date,
                oid::TIME => DataType::TIME,
                oid::TIMESTAMP => DataType::TIMESTAMP,
                oid::TIMESTAMPTZ => DataType::TIMESTAMPTZ,
                oid::INTERVAL => DataType::INTERVAL,
                oid::OID => Oid,
                oid::REGCLASS => RegClass,
                oid::REGPROC => RegProc,
                oid::REGTYPE => RegType,
                oid::REGNAMESPACE => RegNamespace,
                oid::PG_NODE_TREE => PgNodeTree,
                oid::VOID => Void,
                oid::INT2VECTOR => Int2Vector,
                oid::OIDVECTOR => OidVector,
                oid::UUID => Uuid,
                oid::JSON => Json,
                oid::JSONB => Jsonb,
                oid::UNKNOWN => Unknown,
                _ => return None,
            })
        };
        if let Some(t) = scalar(o) {
            return Some(t);
        }
        if o >= crate::enums::FIRST_USER_OID {
            if let Some(e) = crate::enums::by_oid(o) {
                return Some(Enum(e));
            }
            return crate::enums::by_array_oid(o).map(|e| Array(Box::new(Enum(e))));
        }
        let elem = match o {
            oid::BOOL_ARRAY => oid::BOOL,
            oid::INT2_ARRAY => oid::INT2,
            oid::INT4_ARRAY => oid::INT4,
            oid::INT8_ARRAY => oid::INT8,
            oid::FLOAT4_ARRAY => oid::FLOAT4,
            oid::FLOAT8_ARRAY => oid::FLOAT8,
            oid::NUMERIC_ARRAY => oid::NUMERIC,
            oid::TEXT_ARRAY => oid::TEXT,
            oid::VARCHAR_ARRAY => oid::VARCHAR,
            oid::BPCHAR_ARRAY => oid::BPCHAR,
            oid::NAME_ARRAY => oid::NAME,
            oid::CHAR_ARRAY => oid::CHAR,
            oid::BYTEA_ARRAY => oid::BYTEA,
            oid::DATE_ARRAY => oid::DATE,
            oid::TIME_ARRAY => oid::TIME,
            oid::TIMESTAMP_ARRAY => oid::TIMESTAMP,
            oid::TIMESTAMPTZ_ARRAY => oid::TIMESTAMPTZ,
            oid::INTERVAL_ARRAY => oid::INTERVAL,
            oid::OID_ARRAY => oid::OID,
            oid::REGCLASS_ARRAY => oid::REGCLASS,
            oid::REGPROC_ARRAY => oid::REGPROC,
            oid::REGTYPE_ARRAY => oid::REGTYPE,
            oid::REGNAMESPACE_ARRAY => oid::REGNAMESPACE,
            oid::INT2VECTOR_ARRAY => oid::INT2VECTOR,
            oid::OIDVECTOR_ARRAY => oid::OIDVECTOR,
            oid::UUID_ARRAY => oid::UUID,
            oid::JSON_ARRAY => oid::JSON,
            oid::JSONB_ARRAY => oid::JSONB,
            _ => return None,
        };
        scalar(elem).map(|e| Array(Box::new(e)))
    }

    /// atttypmod: -1 when the type has no modifier.
    pub fn typmod(&self) -> i32 {
        match self {
            DataType::Varchar { max_len: Some(n) } | DataType::Bpchar { len: Some(n) } => {
                *n as i32 + 4
            }
            DataType::Numeric {
                precision_scale: Some((p, s)),
            } => numeric_typmod(*p, *s),
            DataType::Time { precision: Some(p) }
            | DataType::Timestamp { precision: Some(p) }
            | DataType::TimestampTz { precision: Some(p) } => *p as i32,
            // INTERVAL_TYPMOD(precision, INTERVAL_FULL_RANGE)
            DataType::Interval { precision: Some(p) } => (INTERVAL_FULL_RANGE << 16) | *p as i32,
            DataType::Array(e) => e.typmod(),
            _ => -1,
        }
    }

    /// The type with a typmod applied (as from `atttypmod`); -1 leaves it unconstrained.
    pub fn with_typmod(&self, typmod: i32) -> DataType {
        match self {
            DataType::Varchar { .. } => DataType::Varchar {
                max_len: (typmod >= 4).then(|| (typmod - 4) as u32),
            },
            DataType::Bpchar { .. } => DataType::Bpchar {
                len: (typmod >= 4).then(|| (typmod - 4) as u32),
            },
            DataType::Numeric { .. } => DataType::Numeric {
                precision_scale: (typmod >= 4).then(|| {
                    let t = typmod - 4;
                    // The scale is 11 bits, sign-extended (PostgreSQL's make_numeric_typmod).
                    (
                        ((t >> 16) & 0xffff) as u16,
                        (((t & 0x7ff) ^ 1024) - 1024) as i16,
                    )
                }),
            },
            DataType::Time { .. } => DataType::Time {
                precision: time_precision(typmod),
            },
            DataType::Timestamp { .. } => DataType::Timestamp {
                precision: time_precision(typmod),
            },
            DataType::TimestampTz { .. } => DataType::TimestampTz {
                precision: time_precision(typmod),
            },
            // The low 16 bits (0xffff of -1: none).
            DataType::Interval { .. } => DataType::Interval {
                precision: time_precision(typmod & 0xffff),
            },
            DataType::Array(e) => DataType::Array(Box::new(e.with_typmod(typmod))),
            other => other.clone(),
        }
    }

    /// pg_type.typlen.
    pub fn typlen(&self) -> i16 {
        use DataType::*;
        match self {
            Bool | Char => 1,
            Int2 => 2,
            Enum(_) | Int4 | Float4 | Date | Oid | RegClass | RegProc | RegType | RegNamespace => 4,
            Int8 | Float8 | Time { .. } | Timestamp { .. } | TimestampTz { .. } => 8,
            Interval { .. } | Uuid => 16,
            Name => 64,
            Unknown => -2,
            _ => -1,
        }
    }

    /// pg_type.typbyval.
    pub fn typbyval(&self) -> bool {
        matches!(self.typlen(), 1 | 2 | 4 | 8)
    }

    /// pg_type.typname ("int4", "varchar", "_int4", ...).
    pub fn type_name(&self) -> std::borrow::Cow<'static, str> {
        use DataType::*;
        match self {
            Enum(e) => e.name.clone().into(),
            Array(e) if matches!(**e, Enum(_)) => format!("_{}", e.type_name()).into(),
            other => other.builtin_type_name().into(),
        }
    }

    fn builtin_type_name(&self) -> &'static str {
        use DataType::*;
        match self {
            Bool => "bool",
            Int2 => "int2",
            Int4 => "int4",
            Int8 => "int8",
            Float4 => "float4",
            Float8 => "float8",
            Numeric { .. } => "numeric",
            Text => "text",
            Varchar { .. } => "varchar",
            Bpchar { .. } => "bpchar",
            Name => "name",
            Char => "char",
            Bytea => "bytea",
            Date => "date",
            Time { .. } => "time",
            Timestamp { .. } => "timestamp",
            TimestampTz { .. } => "timestamptz",
            Interval { .. } => "interval",
            Oid => "oid",
            RegClass => "regclass",
            RegProc => "regproc",
            RegType => "regtype",
            RegNamespace => "regnamespace",
            PgNodeTree => "pg_node_tree",
            Void => "void",
            Int2Vector => "int2vector",
            OidVector => "oidvector",
            Uuid => "uuid",
            Json => "json",
            Jsonb => "jsonb",
            Unknown => "unknown",
            Enum(_) => "???",
            Array(e) => match e.as_ref() {
                Bool => "_bool",
                Int2 => "_int2",
                Int4 => "_int4",
                Int8 => "_int8",
                Float4 => "_float4",
                Float8 => "_float8",
                Numeric { .. } => "_numeric",
                Text => "_text",
                Varchar { .. } => "_varchar",
                Bpchar { .. } => "_bpchar",
                Name => "_name",
                Char => "_char",
                Bytea => "_bytea",
                Date => "_date",
                Time { .. } => "_time",
                Timestamp { .. } => "_timestamp",
                TimestampTz { .. } => "_timestamptz",
                Interval { .. } => "_interval",
                Oid => "_oid",
                RegClass => "_regclass",
                RegProc => "_regproc",
                RegType => "_regtype",
                RegNamespace => "_regnamespace",
                Int2Vector => "_int2vector",
                OidVector => "_oidvector",
                Uuid => "_uuid",
                Json => "_json",
                Jsonb => "_jsonb",
                PgNodeTree | Unknown | Void | Array(_) | Enum(_) => "???",
            },
        }
    }

    fn base_sql_name(&self, with_typmod: bool) -> String {
        use DataType::*;
        match self {
            Bool => "boolean".into(),
            Int2 => "smallint".into(),
            Int4 => "integer".into(),
            Int8 => "bigint".into(),
            Float4 => "real".into(),
            Float8 => "double precision".into(),
            Numeric {
                precision_scale: Some((p, s)),
            } if with_typmod => format!("numeric({p},{s})"),
            Numeric { .. } => "numeric".into(),
            Varchar { max_len: Some(n) } if with_typmod => format!("character varying({n})"),
            Varchar { .. } => "character varying".into(),
            Bpchar { len: Some(n) } if with_typmod => format!("character({n})"),
            // format_type(1042, -1) says "bpchar": bare bpchar is not character(1).
            Bpchar { .. } if with_typmod => "bpchar".into(),
            Bpchar { .. } => "character".into(),
            Char => "\"char\"".into(),
            Time { precision: Some(p) } if with_typmod => format!("time({p}) without time zone"),
            Timestamp { precision: Some(p) } if with_typmod => {
                format!("timestamp({p}) without time zone")
            }
            TimestampTz { precision: Some(p) } if with_typmod => {
                format!("timestamp({p}) with time zone")
            }
            Interval { precision: Some(p) } if with_typmod => format!("interval({p})"),
            Time { .. } => "time without time zone".into(),
            Timestamp { .. } => "timestamp without time zone".into(),
            TimestampTz { .. } => "timestamp with time zone".into(),
            Array(e) => format!("{}[]", e.base_sql_name(with_typmod)),
            other => other.type_name().into_owned(),
        }
    }

    /// PostgreSQL's `format_type(oid, typmod)` (with this type's typmod).
    pub fn format_type(&self) -> String {
        self.base_sql_name(true)
    }

    /// PostgreSQL's `format_type_be(oid)`: no modifiers, as error messages print types
    /// ("character varying", "character", "integer[]").
    pub fn format_type_be(&self) -> String {
        self.base_sql_name(false)
    }

    /// pg_type.typcategory.
    pub fn category(&self) -> char {
        use DataType::*;
        match self {
            Bool => 'B',
            Int2
            | Int4
            | Int8
            | Float4
            | Float8
            | Numeric { .. }
            | Oid
            | RegClass
            | RegProc
            | RegType
            | RegNamespace => 'N',
            Text | Varchar { .. } | Bpchar { .. } | Name => 'S',
            Char | PgNodeTree => 'Z',
            Void => 'P',
            Bytea | Uuid | Json | Jsonb => 'U',
            Date | Time { .. } | Timestamp { .. } | TimestampTz { .. } => 'D',
            Interval { .. } => 'T',
            Int2Vector | OidVector | Array(_) => 'A',
            Unknown => 'X',
            Enum(_) => 'E',
        }
    }

    /// pg_type.typispreferred.
    pub fn is_preferred(&self) -> bool {
        matches!(
            self,
            DataType::Bool
                | DataType::Text
                | DataType::Oid
                | DataType::Float8
                | DataType::TimestampTz { .. }
                | DataType::Interval { .. }
        )
    }

    /// The element type of an array type.
    pub fn element(&self) -> Option<&DataType> {
        match self {
            DataType::Array(e) => Some(e),
            DataType::Int2Vector => Some(&DataType::Int2),
            DataType::OidVector => Some(&DataType::Oid),
            _ => None,
        }
    }

    /// int2/int4/int8/float4/float8/numeric (not oid or reg*).
    pub fn is_numeric(&self) -> bool {
        matches!(
            self,
            DataType::Int2
                | DataType::Int4
                | DataType::Int8
                | DataType::Float4
                | DataType::Float8
                | DataType::Numeric { .. }
        )
    }

    pub fn is_integer(&self) -> bool {
        matches!(self, DataType::Int2 | DataType::Int4 | DataType::Int8)
    }

    /// text, varchar, bpchar, name (the 'S' category).
    pub fn is_string(&self) -> bool {
        matches!(
            self,
            DataType::Text | DataType::Varchar { .. } | DataType::Bpchar { .. } | DataType::Name
        )
    }

    /// oid and the reg* aliases (all represented as `Value::Oid`).
    pub fn is_oid_like(&self) -> bool {
        matches!(
            self,
            DataType::Oid
                | DataType::RegClass
                | DataType::RegProc
                | DataType::RegType
                | DataType::RegNamespace
        )
    }

    /// The fractional-second digits `time(p)`, `timestamp(p)`, `timestamptz(p)` or
    /// `interval(p)` keeps; `None` for other types and unconstrained ones.
    pub fn time_precision(&self) -> Option<u8> {
        match self {
            DataType::Time { precision }
            | DataType::Timestamp { precision }
            | DataType::TimestampTz { precision }
            | DataType::Interval { precision } => *precision,
            _ => None,
        }
    }

    /// The same type without modifiers (`varchar(3)` → `varchar`).
    pub fn without_typmod(&self) -> DataType {
        self.with_typmod(-1)
    }

    /// Every type name PostgreSQL accepts for the supported types, case-insensitive,
    /// with an optional `pg_catalog.` prefix and `[]` suffix / `_` array names.
    /// `modifiers` are the parenthesised numbers (`varchar(10)`, `numeric(10,2)`).
    pub fn from_sql_name(name: &str, modifiers: &[i32]) -> PgResult<DataType> {
        let orig = name.trim();
        let mut lower = orig.to_ascii_lowercase();
        // normalise internal whitespace ("double   precision")
        lower = lower.split_whitespace().collect::<Vec<_>>().join(" ");
        if let Some(elem) = lower.strip_suffix("[]") {
            let e = DataType::from_sql_name(elem.trim_end(), modifiers)?;
            return Ok(DataType::Array(Box::new(e)));
        }
        let mut n: &str = &lower;
        if let Some(rest) = n.strip_prefix("pg_catalog.") {
            n = rest;
        }
        let n = n.trim();
        // a quoted "char" (or "int4" etc.: quoted identifiers are exact names)
        let (n, quoted) = if n.len() >= 2 && n.starts_with('"') && n.ends_with('"') {
            (&n[1..n.len() - 1], true)
        } else {
            (n, false)
        };
        let not_exist = || {
            PgError::new(
                codes::UNDEFINED_OBJECT,
                format!("type \"{}\" does not exist", orig),
            )
        };
        let no_mods = |t: DataType| -> PgResult<DataType> {
            if modifiers.is_empty() {
                Ok(t)
            } else {
                Err(PgError::new(
                    codes::SYNTAX_ERROR,
                    format!(
                        "type modifier is not allowed for type \"{}\"",
                        t.type_name()
                    ),
                ))
            }
        };
        let len_mod = |tname: &str| -> PgResult<Option<u32>> {
            match modifiers {
                [] => Ok(None),
                [m] => {
                    if *m < 1 {
                        Err(PgError::new(
                            codes::INVALID_PARAMETER_VALUE,
                            format!("length for type {tname} must be at least 1"),
                        ))
                    } else if *m > MAX_VARCHAR_LEN {
                        Err(PgError::new(
                            codes::INVALID_PARAMETER_VALUE,
                            format!("length for type {tname} cannot exceed {MAX_VARCHAR_LEN}"),
                        ))
                    } else {
                        Ok(Some(*m as u32))
                    }
                }
                _ => Err(PgError::new(codes::SYNTAX_ERROR, "invalid type modifier")),
            }
        };
        // timestamp(p) / time(p) / interval(p): PostgreSQL reduces a precision past 6 to 6
        // (with a warning this layer cannot send).
        let precision_mod = || -> PgResult<Option<u8>> {
            match modifiers {
                [] => Ok(None),
                [p] if *p < 0 => Err(PgError::new(
                    codes::INVALID_PARAMETER_VALUE,
                    format!(
                        "{} precision must not be negative",
                        orig.to_ascii_uppercase()
                    ),
                )),
                [p] => Ok(Some((*p).min(MAX_TIME_PRECISION as i32) as u8)),
                _ => Err(PgError::new(codes::SYNTAX_ERROR, "invalid type modifier")),
            }
        };
        if quoted && n == "char" {
            return no_mods(DataType::Char);
        }
        let t = match n {
            "int" | "integer" | "int4" => no_mods(DataType::Int4)?,
            "smallint" | "int2" => no_mods(DataType::Int2)?,
            "bigint" | "int8" => no_mods(DataType::Int8)?,
            "real" | "float4" => no_mods(DataType::Float4)?,
            "double precision" | "float8" => no_mods(DataType::Float8)?,
            "float" => match modifiers {
                [] => DataType::Float8,
                [p] if *p < 1 => {
                    return Err(PgError::new(
                        codes::INVALID_PARAMETER_VALUE,
                        "precision for type float must be at least 1 bit",
                    ))
                }
                [p] if *p <= 24 => DataType::Float4,
                [p] if *p <= 53 => DataType::Float8,
                [_] => {
                    return Err(PgError::new(
                        codes::INVALID_PARAMETER_VALUE,
                        "precision for type float must be less than 54 bits",
                    ))
                }
                _ => return Err(PgError::new(codes::SYNTAX_ERROR, "invalid type modifier")),
            },
            "numeric" | "decimal" | "dec" => {
                let (p, s) = match modifiers {
                    [] => return Ok(DataType::NUMERIC),
                    [p] => (*p, 0),
                    [p, s] => (*p, *s),
                    _ => {
                        return Err(PgError::new(
                            codes::SYNTAX_ERROR,
                            "invalid NUMERIC type modifier",
                        ))
                    }
                };
                if !(1..=MAX_NUMERIC_PRECISION).contains(&p) {
                    return Err(PgError::new(
                        codes::INVALID_PARAMETER_VALUE,
                        format!(
                            "NUMERIC precision {p} must be between 1 and {MAX_NUMERIC_PRECISION}"
                        ),
                    ));
                }
                if !(-MAX_NUMERIC_PRECISION..=MAX_NUMERIC_PRECISION).contains(&s) {
                    return Err(PgError::new(
                        codes::INVALID_PARAMETER_VALUE,
                        format!("NUMERIC scale {s} must be between -{MAX_NUMERIC_PRECISION} and {MAX_NUMERIC_PRECISION}"),
                    ));
                }
                DataType::Numeric {
                    precision_scale: Some((p as u16, s as i16)),
                }
            }
            "text" => no_mods(DataType::Text)?,
            "varchar" | "character varying" | "char varying" => DataType::Varchar {
                max_len: len_mod("varchar")?,
            },
            "char" | "character" => DataType::Bpchar {
                len: Some(len_mod("char")?.unwrap_or(1)),
            },
            "bpchar" => DataType::Bpchar {
                len: len_mod("char")?,
            },
            "name" => no_mods(DataType::Name)?,
            "bool" | "boolean" => no_mods(DataType::Bool)?,
            "bytea" => no_mods(DataType::Bytea)?,
            "date" => no_mods(DataType::Date)?,
            "time" | "time without time zone" => DataType::Time {
                precision: precision_mod()?,
            },
            "timestamp" | "timestamp without time zone" => DataType::Timestamp {
                precision: precision_mod()?,
            },
            "timestamptz" | "timestamp with time zone" => DataType::TimestampTz {
                precision: precision_mod()?,
            },
            "interval" => DataType::Interval {
                precision: precision_mod()?,
            },
            "oid" => no_mods(DataType::Oid)?,
            "regclass" => no_mods(DataType::RegClass)?,
            "regproc" => no_mods(DataType::RegProc)?,
            "regtype" => no_mods(DataType::RegType)?,
            "regnamespace" => no_mods(DataType::RegNamespace)?,
            "pg_node_tree" => no_mods(DataType::PgNodeTree)?,
            "int2vector" => no_mods(DataType::Int2Vector)?,
            "oidvector" => no_mods(DataType::OidVector)?,
            "uuid" => no_mods(DataType::Uuid)?,
            "json" => no_mods(DataType::Json)?,
            "jsonb" => no_mods(DataType::Jsonb)?,
            "unknown" => no_mods(DataType::Unknown)?,
            other => {
                let unqualified = other.strip_prefix("public.").unwrap_or(other);
                if let Some(e) = crate::enums::by_name(unqualified) {
                    return no_mods(DataType::Enum(e));
                }
                if let Some(e) = (unqualified.strip_prefix('_')).and_then(crate::enums::by_name) {
                    return no_mods(DataType::Array(Box::new(DataType::Enum(e))));
                }
                if let Some(elem) = other.strip_prefix('_') {
                    if let Ok(e) = DataType::from_oid_name(elem) {
                        return Ok(DataType::Array(Box::new(
                            e.with_typmod(mods_typmod(&e, modifiers)),
                        )));
                    }
                }
                return Err(not_exist());
            }
        };
        Ok(t)
    }

    /// Exact pg_type.typname lookup (no aliases), for `_int4`-style array names.
    fn from_oid_name(typname: &str) -> PgResult<DataType> {
        let t = match typname {
            "bool" => DataType::Bool,
            "int2" => DataType::Int2,
            "int4" => DataType::Int4,
            "int8" => DataType::Int8,
            "float4" => DataType::Float4,
            "float8" => DataType::Float8,
            "numeric" => DataType::NUMERIC,
            "text" => DataType::Text,
            "varchar" => DataType::VARCHAR,
            "bpchar" => DataType::Bpchar { len: None },
            "name" => DataType::Name,
            "char" => DataType::Char,
            "bytea" => DataType::Bytea,
            "date" => DataType::Date,
            "time" => DataType::TIME,
            "timestamp" => DataType::TIMESTAMP,
            "timestamptz" => DataType::TIMESTAMPTZ,
            "interval" => DataType::INTERVAL,
            "oid" => DataType::Oid,
            "regclass" => DataType::RegClass,
            "regproc" => DataType::RegProc,
            "regtype" => DataType::RegType,
            "regnamespace" => DataType::RegNamespace,
            "uuid" => DataType::Uuid,
            "json" => DataType::Json,
            "jsonb" => DataType::Jsonb,
            _ => return Err(PgError::new(codes::UNDEFINED_OBJECT, "no such type")),
        };
        Ok(t)
    }
}

fn mods_typmod(t: &DataType, modifiers: &[i32]) -> i32 {
    match (t, modifiers) {
        (DataType::Varchar { .. } | DataType::Bpchar { .. }, [n]) => *n + 4,
        (DataType::Numeric { .. }, [p]) => numeric_typmod(*p as u16, 0),
        (DataType::Numeric { .. }, [p, s]) => numeric_typmod(*p as u16, *s as i16),
        (
            DataType::Time { .. } | DataType::Timestamp { .. } | DataType::TimestampTz { .. },
            [p],
        ) => (*p).clamp(0, MAX_TIME_PRECISION as i32),
        (DataType::Interval { .. }, [p]) => {
            (INTERVAL_FULL_RANGE << 16) | (*p).clamp(0, MAX_TIME_PRECISION as i32)
        }
        _ => -1,
    }
}

/// PostgreSQL's INTERVAL_FULL_RANGE: the interval typmod's range bits when no fields are
/// named.
const INTERVAL_FULL_RANGE: i32 = 0x7fff;

/// The precision a datetime typmod keeps (-1, or PostgreSQL's "full precision" 0xffff of
/// an interval with fields only: unconstrained).
fn time_precision(typmod: i32) -> Option<u8> {
    (0..=MAX_TIME_PRECISION as i32)
        .contains(&typmod)
        .then_some(typmod as u8)
}

/// numeric(p,s)'s atttypmod: the scale in the low 11 bits (negative scales too), as
/// PostgreSQL's make_numeric_typmod packs it.
fn numeric_typmod(precision: u16, scale: i16) -> i32 {
    (((precision as i32) << 16) | (scale as i32 & 0x7ff)) + 4
}

impl std::fmt::Display for DataType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.format_type())
    }
}

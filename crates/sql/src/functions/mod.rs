//! Built-in functions: name resolution to a typed function, and evaluation of the ones
//! that need nothing but their arguments. Functions that need the session or the
//! catalog (settings, `now()`, `format_type` of catalog state…) are evaluated by the
//! coordinator through `eval::EvalEnv::session_function`.

pub mod array_ops {
    pub use super::array::resolve_operator;
}
pub mod datetime;
pub mod json;

use pgerror::{codes, PgError, PgResult};
use types::numeric::{self, Numeric};
use types::{DataType, Value};

mod array;
mod bytes;
mod format;
mod math;
pub mod ordered_set;
pub mod regexp;
mod string;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum ScalarFunc {
    // Session / catalog functions (evaluated by the coordinator).
    Now,
    StatementTimestamp,
    ClockTimestamp,
    Version,
    CurrentSchema,
    CurrentSchemas,
    CurrentDatabase,
    /// current_user, user, current_role: the role privileges are checked as (SET ROLE).
    CurrentUser,
    /// session_user: SET SESSION AUTHORIZATION's role, at first the one that logged in.
    SessionUser,
    PgBackendPid,
    /// txid_current(): the transaction's start timestamp (its name in pg_locks).
    TxidCurrent,
    /// pg_cancel_backend(pid), pg_terminate_backend(pid[, timeout]): signal a session.
    PgCancelBackend,
    PgTerminateBackend,
    /// pg_stat_statements_reset([userid[, dbid[, queryid]]]).
    PgStatStatementsReset,
    /// pg_stat_reset(): the cumulative statistics of tables, indexes and the database.
    PgStatReset,
    /// pg_stat_force_next_flush(): the session's own counts into the totals now.
    PgStatForceNextFlush,
    CurrentSetting,
    SetConfig,
    FormatType,
    PgTableIsVisible,
    /// pg_partition_ancestors(rel): the relation alone (no table is a partition), as a
    /// scalar; psql's describe reads it only in `IN (SELECT pg_partition_ancestors(…) …)`.
    PgPartitionAncestors,
    /// pg_get_triggerdef(trigger[, pretty]): NULL, there are no triggers.
    PgGetTriggerDef,
    PgTypeIsVisible,
    PgFunctionIsVisible,
    PgGetUserById,
    /// acldefault(object type, owner): the privileges an object of that type has before
    /// any GRANT or REVOKE, as aclitem text (pg_dump compares an object's ACL with it).
    AclDefault,
    PgGetExpr,
    PgGetIndexDef,
    PgGetConstraintDef,
    ObjDescription,
    ColDescription,
    ShobjDescription,
    PgEncodingToChar,
    /// has_schema_privilege, has_database_privilege: always true (schemas and databases
    /// have no ACLs yet).
    HasPrivilege,
    /// has_table_privilege([role,] relation, privileges), has_sequence_privilege.
    HasTablePrivilege,
    ToRegclass,
    PgGetStatisticsObjDefColumns,
    PgRelationSize,
    PgTotalRelationSize,
    PgSizePretty,
    PgIsInRecovery,
    PgPostmasterStartTime,
    InetServerAddr,
    PgRelationIsPublishable,
    PgTablespaceLocation,
    PgDatabaseSize,
    ToRegtype,
    ToRegnamespace,
    PgGetViewDef,
    PgGetFunctionResult,
    PgGetFunctionArguments,
    /// Sequence functions (decision 0034).
    Nextval,
    Currval,
    Setval,
    Lastval,
    PgGetSerialSequence,
    /// `SELECT last_value, is_called FROM seq` (pg_dump): the last value reserved by any
    /// coordinator (the sequence's start before any was), and whether any was.
    SequenceLastValue,
    SequenceIsCalled,
    /// Text output of reg* values (regclassout, regtypeout, …): built by the binder for
    /// casts such as `oid::regtype::text`, which need the catalog.
    RegclassText,
    RegtypeText,
    RegnamespaceText,
    RegprocText,
    /// Text input of regclass (regclassin) for a value known only at run time, such as
    /// `pg_get_serial_sequence(…)::regclass`: 42P01 where no relation has that name.
    RegclassIn,
    /// pg_sleep(seconds): waits in the executor, where the statement's timeout and
    /// cancellation reach it (`EvalEnv::session_function` asks for the wait).
    PgSleep,
    // Pure functions.
    Random,
    GenRandomUuid,
    Abs,
    Lower,
    Upper,
    Length,
    Substr,
    Concat,
    NullIf,
    Greatest,
    Least,
    Round,
    Trunc,
    Floor,
    Ceil,
    Sign,
    /// div(numeric, numeric): the truncated quotient.
    Div,
    /// log(x) (base 10) and log(b, x).
    Log,
    /// btrim / ltrim / rtrim: strip the characters of the second argument (default a
    /// space) from both ends, the start or the end.
    Trim,
    LTrim,
    RTrim,
    ArrayToString,
    ArrayPosition,
    /// `array[i]`, 1-based (built by the binder for subscripts, which shifts int2vector/oidvector's 0-based ones).
    ArraySubscript,
    /// `array[lower:upper]` of a one-subscript slice (bounds clipped to the array, the
    /// result numbered from 1 as in PostgreSQL).
    ArraySlice,
    ArrayLength,
    ArrayUpper,
    ArrayLower,
    Cardinality,
    QuoteIdent,
    PgTypeof,
    Mod,
    Sqrt,
    Exp,
    Ln,
    Power,
    Left,
    Right,
    Repeat,
    Replace,
    Md5,
    // Quoting and format() (format.rs).
    QuoteLiteral,
    QuoteNullable,
    Format,
    // Array functions and operators (array.rs).
    ArrayAppend,
    ArrayPrepend,
    ArrayCat,
    ArrayRemove,
    ArrayNdims,
    ArrayDims,
    ArrayContains,
    ArrayContained,
    ArrayOverlap,
    // encode/decode (bytes.rs).
    Encode,
    Decode,
    /// sha224/sha256/sha384/sha512(bytea) → bytea, md5(bytea) → text.
    Sha224,
    Sha256,
    Sha384,
    Sha512,
    Md5Bytea,
    // Mathematical functions (math.rs).
    Pi,
    Scale,
    WidthBucket,
    Atan2,
    Cbrt,
    Sin,
    Cos,
    Tan,
    Cot,
    Asin,
    Acos,
    Atan,
    Degrees,
    Radians,
    /// Date/time functions (`datetime.rs`), evaluated with the session's time zone.
    DatePart,
    Extract,
    DateTrunc,
    /// AT TIME ZONE
    Timezone,
    Age,
    IsFinite,
    JustifyDays,
    JustifyHours,
    JustifyInterval,
    MakeDate,
    MakeTime,
    MakeTimestamp,
    MakeTimestamptz,
    MakeInterval,
    ToTimestamp,
    /// to_timestamp(text, text) and to_date(text, text): reading by a to_char template.
    ToTimestampFormatted,
    ToDate,
    /// to_char of a timestamp, timestamptz, date or interval.
    ToCharDatetime,
    /// date_bin(stride, source, origin) of timestamps or of timestamptz values.
    DateBin,
    /// to_char of an integer, numeric or float (format.rs).
    ToCharNumber,
    // String functions (string.rs).
    Chr,
    Ascii,
    Lpad,
    Rpad,
    SplitPart,
    Strpos,
    Initcap,
    Reverse,
    Translate,
    StartsWith,
    ToHex,
    OctetLength,
    BitLength,
    ConcatWs,
    /// string_to_array(s, delimiter [, null_string]); string_to_table in FROM and in a
    /// select list is its elements.
    StringToArray,
    // Regular expressions (regexp.rs).
    RegexpReplace,
    RegexpMatch,
    /// regexp_matches(s, p [, flags]) in FROM and in a select list: its rows, a list of
    /// text[] values (`Rel::Unnest`'s array).
    RegexpMatches,
    RegexpSplitToArray,
    /// regexp_split_to_table's pieces (as regexp_split_to_array, under its name).
    RegexpSplitToTable,
    RegexpCount,
    RegexpInstr,
    RegexpSubstr,
    RegexpLike,
    /// `s SIMILAR TO pattern [ESCAPE e]` (built by the binder).
    SimilarTo,
    // json and jsonb (json.rs).
    JsonField,
    JsonFieldText,
    JsonElement,
    JsonElementText,
    JsonPath,
    JsonPathText,
    JsonExtractPath,
    JsonExtractPathText,
    JsonTypeof,
    JsonArrayLength,
    JsonbField,
    JsonbFieldText,
    JsonbElement,
    JsonbElementText,
    JsonbPath,
    JsonbPathText,
    JsonbExtractPath,
    JsonbExtractPathText,
    JsonbContains,
    JsonbContained,
    JsonbExists,
    JsonbExistsAny,
    JsonbExistsAll,
    JsonbConcat,
    JsonbDeleteKey,
    JsonbDeleteKeys,
    JsonbDeleteIndex,
    JsonbDeletePath,
    JsonbSet,
    JsonbTypeof,
    JsonbArrayLength,
    JsonbStripNulls,
    JsonbPretty,
    ToJsonb,
    ToJson,
    JsonbBuildObject,
    JsonbBuildArray,
    JsonBuildObject,
    JsonBuildArray,
    /// jsonb's set-returning functions (binder/json_table.rs): one column of their rows
    /// as an array (document, function name, "key" | "value" | "value_text"), or
    /// PostgreSQL's error for a document of the wrong kind.
    JsonbSetColumn,
    /// json's (json_table.rs): the same over a json document's text, values as written.
    JsonSetColumn,
    /// percentile_cont / percentile_disc (ordered_set.rs): the final step, over the
    /// group's sorted values (their aggregate's result) and the fraction (a float8 or
    /// float8[]), PostgreSQL's direct argument, evaluated once per group.
    PercentileContFinal,
    PercentileDiscFinal,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggFunc {
    Count,
    Sum,
    Min,
    Max,
    Avg,
    BoolAnd,
    BoolOr,
    ArrayAgg,
    /// string_agg(text, delimiter): the binder passes ARRAY[value, delimiter] as the argument.
    StringAgg,
    /// jsonb_agg / json_agg: the binder passes to_jsonb(value) / to_json(value).
    JsonbAgg,
    JsonAgg,
    /// jsonb_object_agg(key, value): the binder passes ARRAY[to_jsonb(key), to_jsonb(value)].
    JsonbObjectAgg,
    /// variance / var_samp, var_pop, stddev / stddev_samp, stddev_pop.
    VarSamp,
    VarPop,
    StddevSamp,
    StddevPop,
    /// Ordered-set aggregates (`… WITHIN GROUP (ORDER BY value [DESC])`): each group's
    /// non-NULL values are collected and sorted when the group is finished
    /// (ordered_set.rs). The percentiles' aggregate results in those sorted values (NULL
    /// for none), which `ScalarFunc::PercentileContFinal`/`PercentileDiscFinal` finish
    /// with the fraction; mode's in the most frequent value.
    PercentileCont {
        desc: bool,
    },
    PercentileDisc {
        desc: bool,
    },
    Mode {
        desc: bool,
    },
}

impl AggFunc {
    /// Whether the aggregate is an ordered-set one (`WITHIN GROUP`).
    pub fn is_ordered_set(self) -> bool {
        matches!(
            self,
            AggFunc::PercentileCont { .. } | AggFunc::PercentileDisc { .. } | AggFunc::Mode { .. }
        )
    }

    /// The aggregate's SQL name.
    pub fn name(self) -> &'static str {
        match self {
            AggFunc::Count => "count",
            AggFunc::Sum => "sum",
            AggFunc::Min => "min",
            AggFunc::Max => "max",
            AggFunc::Avg => "avg",
            AggFunc::BoolAnd => "bool_and",
            AggFunc::BoolOr => "bool_or",
            AggFunc::ArrayAgg => "array_agg",
            AggFunc::StringAgg => "string_agg",
            AggFunc::JsonbAgg => "jsonb_agg",
            AggFunc::JsonAgg => "json_agg",
            AggFunc::JsonbObjectAgg => "jsonb_object_agg",
            AggFunc::VarSamp => "var_samp",
            AggFunc::VarPop => "var_pop",
            AggFunc::StddevSamp => "stddev_samp",
            AggFunc::StddevPop => "stddev_pop",
            AggFunc::PercentileCont { .. } => "percentile_cont",
            AggFunc::PercentileDisc { .. } => "percentile_disc",
            AggFunc::Mode { .. } => "mode",
        }
    }

    /// Whether NULL arguments are collected (the others skip them).
    pub fn keeps_nulls(self) -> bool {
        matches!(
            self,
            AggFunc::ArrayAgg | AggFunc::JsonbAgg | AggFunc::JsonAgg
        )
    }

    /// Whether the aggregate is one of the variances and standard deviations.
    pub fn is_variance(self) -> bool {
        matches!(
            self,
            AggFunc::VarSamp | AggFunc::VarPop | AggFunc::StddevSamp | AggFunc::StddevPop
        )
    }

    /// Of a variance or standard deviation: (of a sample, a standard deviation).
    pub fn variance_kind(self) -> (bool, bool) {
        (
            matches!(self, AggFunc::VarSamp | AggFunc::StddevSamp),
            matches!(self, AggFunc::StddevSamp | AggFunc::StddevPop),
        )
    }

    /// Whether the aggregate lists its inputs in order (ORDER BY inside the call).
    pub fn is_ordered(self) -> bool {
        matches!(
            self,
            AggFunc::ArrayAgg
                | AggFunc::StringAgg
                | AggFunc::JsonbAgg
                | AggFunc::JsonAgg
                | AggFunc::JsonbObjectAgg
        )
    }
}

/// Resolve an aggregate by name, with its result type for the argument type.
pub fn resolve_aggregate(name: &str, arg: Option<&DataType>) -> Option<(AggFunc, DataType)> {
    use DataType::*;
    let f = match name {
        "count" => AggFunc::Count,
        "sum" => AggFunc::Sum,
        "min" => AggFunc::Min,
        "max" => AggFunc::Max,
        "avg" => AggFunc::Avg,
        "bool_and" | "every" => AggFunc::BoolAnd,
        "bool_or" => AggFunc::BoolOr,
        "array_agg" => AggFunc::ArrayAgg,
        "string_agg" => AggFunc::StringAgg,
        "jsonb_agg" => AggFunc::JsonbAgg,
        "json_agg" => AggFunc::JsonAgg,
        "jsonb_object_agg" => AggFunc::JsonbObjectAgg,
        "variance" | "var_samp" => AggFunc::VarSamp,
        "var_pop" => AggFunc::VarPop,
        "stddev" | "stddev_samp" => AggFunc::StddevSamp,
        "stddev_pop" => AggFunc::StddevPop,
        "percentile_cont" => AggFunc::PercentileCont { desc: false },
        "percentile_disc" => AggFunc::PercentileDisc { desc: false },
        "mode" => AggFunc::Mode { desc: false },
        _ => return None,
    };
    let arg_ty = arg.cloned().unwrap_or(Int8);
    let ty = match f {
        AggFunc::Count => Int8,
        // PostgreSQL: sum(int2|int4) → bigint, sum(int8|numeric) → numeric, floats keep their type.
        AggFunc::Sum => match arg_ty {
            Int2 | Int4 => Int8,
            Int8 | Numeric { .. } => Numeric {
                precision_scale: None,
            },
            Float4 => Float4,
            Float8 => Float8,
            Interval { .. } => DataType::INTERVAL,
            Unknown => Float8,
            _ => return None,
        },
        AggFunc::Avg => match arg_ty {
            Float4 | Float8 => Float8,
            Interval { .. } => DataType::INTERVAL,
            _ => Numeric {
                precision_scale: None,
            },
        },
        // PostgreSQL 15 has no min/max of uuid, json or jsonb
        AggFunc::Min | AggFunc::Max if matches!(arg_ty, Uuid | Json | Jsonb) => return None,
        AggFunc::Min | AggFunc::Max => arg_ty,
        AggFunc::BoolAnd | AggFunc::BoolOr => Bool,
        AggFunc::ArrayAgg => Array(Box::new(arg_ty)),
        AggFunc::StringAgg => Text,
        AggFunc::JsonbAgg | AggFunc::JsonbObjectAgg => Jsonb,
        AggFunc::JsonAgg => Json,
        // PostgreSQL: float8 of floats, numeric of integers and numerics
        AggFunc::VarSamp | AggFunc::VarPop | AggFunc::StddevSamp | AggFunc::StddevPop => {
            match arg_ty {
                Float4 | Float8 | Unknown => Float8,
                Int2 | Int4 | Int8 | Numeric { .. } => Numeric {
                    precision_scale: None,
                },
                _ => return None,
            }
        }
        // the binder types the ordered-set aggregates (`binder/query.rs`)
        AggFunc::PercentileCont { .. } => match arg_ty {
            Interval { .. } => DataType::INTERVAL,
            _ => Float8,
        },
        AggFunc::PercentileDisc { .. } | AggFunc::Mode { .. } => arg_ty,
    };
    Some((f, ty))
}

/// Resolve a scalar function by (lower-case, schema-stripped) name and argument types.
/// Returns the function, the types its arguments must be cast to, and the result type.
pub fn resolve_scalar(
    name: &str,
    args: &[DataType],
) -> PgResult<(ScalarFunc, Vec<DataType>, DataType)> {
    use DataType::*;
    use ScalarFunc as F;
    let n = args.len();
    let same = |t: DataType| vec![t; n];
    let first = args.first().cloned().unwrap_or(Unknown);
    let text_args = || same(Text);
    let numeric_like = |t: &DataType| if *t == Unknown { Float8 } else { t.clone() };
    let float8_or_numeric = |t: &DataType| {
        if matches!(t, Numeric { .. }) {
            NUMERIC
        } else {
            Float8
        }
    };
    const NUMERIC: DataType = DataType::NUMERIC;
    let r = match (name, n) {
        ("now" | "transaction_timestamp", 0) => (F::Now, vec![], DataType::TIMESTAMPTZ),
        ("statement_timestamp", 0) => (F::StatementTimestamp, vec![], DataType::TIMESTAMPTZ),
        ("clock_timestamp", 0) => (F::ClockTimestamp, vec![], DataType::TIMESTAMPTZ),
        ("pg_sleep", 1) => (F::PgSleep, vec![Float8], DataType::Void),
        ("version", 0) => (F::Version, vec![], Text),
        ("current_schema", 0) => (F::CurrentSchema, vec![], Name),
        ("current_schemas", 1) => (F::CurrentSchemas, vec![Bool], Array(Box::new(Name))),
        ("current_database", 0) => (F::CurrentDatabase, vec![], Name),
        ("current_user" | "user" | "current_role", 0) => (F::CurrentUser, vec![], Name),
        ("session_user", 0) => (F::SessionUser, vec![], Name),
        ("pg_backend_pid", 0) => (F::PgBackendPid, vec![], Int4),
        ("txid_current", 0) => (F::TxidCurrent, vec![], Int8),
        ("pg_cancel_backend", 1) => (F::PgCancelBackend, vec![Int4], Bool),
        ("pg_terminate_backend", 1) => (F::PgTerminateBackend, vec![Int4], Bool),
        ("pg_terminate_backend", 2) => (F::PgTerminateBackend, vec![Int4, Int8], Bool),
        // PostgreSQL's returns void; Meridian has no void type, so an empty text.
        ("pg_stat_statements_reset", 0) => (F::PgStatStatementsReset, vec![], Text),
        ("pg_stat_reset", 0) => (F::PgStatReset, vec![], Text),
        ("pg_stat_force_next_flush", 0) => (F::PgStatForceNextFlush, vec![], Text),
        ("pg_stat_statements_reset", 1) => (F::PgStatStatementsReset, vec![Oid], Text),
        ("pg_stat_statements_reset", 2) => (F::PgStatStatementsReset, vec![Oid, Oid], Text),
        ("pg_stat_statements_reset", 3) => (F::PgStatStatementsReset, vec![Oid, Oid, Int8], Text),
        ("current_setting", 1) => (F::CurrentSetting, vec![Text], Text),
        ("current_setting", 2) => (F::CurrentSetting, vec![Text, Bool], Text),
        ("set_config", 3) => (F::SetConfig, vec![Text, Text, Bool], Text),
        ("format_type", 2) => (F::FormatType, vec![Oid, Int4], Text),
        ("pg_table_is_visible", 1) => (F::PgTableIsVisible, vec![Oid], Bool),
        ("pg_partition_ancestors", 1) => (F::PgPartitionAncestors, vec![Oid], Oid),
        ("pg_get_triggerdef", 1) => (F::PgGetTriggerDef, vec![Oid], Text),
        ("pg_get_triggerdef", 2) => (F::PgGetTriggerDef, vec![Oid, Bool], Text),
        ("pg_type_is_visible", 1) => (F::PgTypeIsVisible, vec![Oid], Bool),
        ("pg_function_is_visible", 1) => (F::PgFunctionIsVisible, vec![Oid], Bool),
        ("pg_get_userbyid", 1) => (F::PgGetUserById, vec![Oid], Name),
        ("acldefault", 2) => (F::AclDefault, vec![Char, Oid], Array(Box::new(Text))),
        ("pg_get_expr", 2) => (F::PgGetExpr, vec![PgNodeTree, Oid], Text),
        ("pg_get_expr", 3) => (F::PgGetExpr, vec![PgNodeTree, Oid, Bool], Text),
        ("pg_get_indexdef", 1) => (F::PgGetIndexDef, vec![Oid], Text),
        ("pg_get_indexdef", 3) => (F::PgGetIndexDef, vec![Oid, Int4, Bool], Text),
        ("pg_get_constraintdef", 1) => (F::PgGetConstraintDef, vec![Oid], Text),
        ("pg_get_constraintdef", 2) => (F::PgGetConstraintDef, vec![Oid, Bool], Text),
        ("obj_description", 1) => (F::ObjDescription, vec![Oid], Text),
        ("obj_description", 2) => (F::ObjDescription, vec![Oid, Name], Text),
        ("col_description", 2) => (F::ColDescription, vec![Oid, Int4], Text),
        ("shobj_description", 2) => (F::ShobjDescription, vec![Oid, Name], Text),
        ("pg_encoding_to_char", 1) => (F::PgEncodingToChar, vec![Int4], Name),
        ("has_table_privilege" | "has_sequence_privilege", 2) => {
            (F::HasTablePrivilege, vec![Text, Text], Bool)
        }
        ("has_table_privilege" | "has_sequence_privilege", 3) => {
            (F::HasTablePrivilege, vec![Text, Text, Text], Bool)
        }
        ("has_schema_privilege" | "has_database_privilege", 2) => {
            (F::HasPrivilege, vec![Text, Text], Bool)
        }
        ("has_schema_privilege" | "has_database_privilege", 3) => {
            (F::HasPrivilege, vec![Text, Text, Text], Bool)
        }
        ("to_regclass", 1) => (F::ToRegclass, vec![Text], RegClass),
        ("nextval", 1) => (F::Nextval, vec![RegClass], Int8),
        ("currval", 1) => (F::Currval, vec![RegClass], Int8),
        ("setval", 2) => (F::Setval, vec![RegClass, Int8], Int8),
        ("setval", 3) => (F::Setval, vec![RegClass, Int8, Bool], Int8),
        ("lastval", 0) => (F::Lastval, vec![], Int8),
        ("pg_get_serial_sequence", 2) => (F::PgGetSerialSequence, vec![Text, Text], Text),
        ("pg_get_statisticsobjdef_columns", 1) => {
            (F::PgGetStatisticsObjDefColumns, vec![Oid], Text)
        }
        ("pg_relation_size" | "pg_table_size" | "pg_indexes_size", 1) => {
            (F::PgRelationSize, vec![RegClass], Int8)
        }
        ("pg_total_relation_size", 1) => (F::PgTotalRelationSize, vec![RegClass], Int8),
        ("pg_size_pretty", 1) => (F::PgSizePretty, vec![Int8], Text),
        ("pg_is_in_recovery", 0) => (F::PgIsInRecovery, vec![], Bool),
        ("pg_postmaster_start_time", 0) => {
            (F::PgPostmasterStartTime, vec![], DataType::TIMESTAMPTZ)
        }
        ("inet_server_addr", 0) => (F::InetServerAddr, vec![], Text),
        ("pg_tablespace_location", 1) => (F::PgTablespaceLocation, vec![Oid], Text),
        ("pg_database_size", 1) if args[0] == Oid => (F::PgDatabaseSize, vec![Oid], Int8),
        ("pg_database_size", 1) => (F::PgDatabaseSize, vec![Name], Int8),
        ("pg_relation_is_publishable", 1) => (F::PgRelationIsPublishable, vec![RegClass], Bool),
        ("to_regtype", 1) => (F::ToRegtype, vec![Text], RegType),
        ("to_regnamespace", 1) => (F::ToRegnamespace, vec![Text], RegNamespace),
        ("pg_get_viewdef", 1) => (F::PgGetViewDef, vec![Oid], Text),
        ("pg_get_viewdef", 2) => (F::PgGetViewDef, vec![Oid, Bool], Text),
        ("pg_get_function_result", 1) => (F::PgGetFunctionResult, vec![Oid], Text),
        ("pg_get_function_arguments", 1) => (F::PgGetFunctionArguments, vec![Oid], Text),
        ("random", 0) => (F::Random, vec![], Float8),
        ("gen_random_uuid", 0) => (F::GenRandomUuid, vec![], Uuid),
        ("abs", 1) => {
            let t = numeric_like(&first);
            (F::Abs, vec![t.clone()], t)
        }
        ("lower", 1) => (F::Lower, text_args(), Text),
        ("upper", 1) => (F::Upper, text_args(), Text),
        ("length" | "char_length" | "character_length", 1) => (F::Length, text_args(), Int4),
        ("substr" | "substring", 2) => (F::Substr, vec![Text, Int4], Text),
        ("substr" | "substring", 3) => (F::Substr, vec![Text, Int4, Int4], Text),
        ("concat", _) => (
            F::Concat,
            args.iter()
                .map(|t| if *t == Unknown { Text } else { t.clone() })
                .collect(),
            Text,
        ),
        ("nullif", 2) => {
            let t = if first == Unknown {
                args[1].clone()
            } else {
                first.clone()
            };
            (F::NullIf, vec![t.clone(), t.clone()], t)
        }
        ("greatest" | "least", _) if n > 0 => {
            let t = args
                .iter()
                .find(|t| **t != Unknown)
                .cloned()
                .unwrap_or(Text);
            let f = if name == "greatest" {
                F::Greatest
            } else {
                F::Least
            };
            (f, same(t.clone()), t)
        }
        ("round", 1) => {
            let t = float8_or_numeric(&first);
            (F::Round, vec![t.clone()], t)
        }
        ("round", 2) => (F::Round, vec![NUMERIC, Int4], NUMERIC),
        ("trunc", 1) => {
            let t = float8_or_numeric(&first);
            (F::Trunc, vec![t.clone()], t)
        }
        ("trunc", 2) => (F::Trunc, vec![NUMERIC, Int4], NUMERIC),
        ("sign", 1) => {
            let t = float8_or_numeric(&first);
            (F::Sign, vec![t.clone()], t)
        }
        ("div", 2) => (F::Div, vec![NUMERIC, NUMERIC], NUMERIC),
        ("floor", 1) => {
            let t = float8_or_numeric(&first);
            (F::Floor, vec![t.clone()], t)
        }
        ("ceil" | "ceiling", 1) => {
            let t = float8_or_numeric(&first);
            (F::Ceil, vec![t.clone()], t)
        }
        ("btrim" | "trim", 1 | 2) => (F::Trim, text_args(), Text),
        ("ltrim", 1 | 2) => (F::LTrim, text_args(), Text),
        ("rtrim", 1 | 2) => (F::RTrim, text_args(), Text),
        ("array_to_string", 2) => (F::ArrayToString, vec![first.clone(), Text], Text),
        ("array_to_string", 3) => (F::ArrayToString, vec![first.clone(), Text, Text], Text),
        ("array_position", 2) => {
            let elem = first.element().cloned().unwrap_or(Text);
            (F::ArrayPosition, vec![first.clone(), elem], Int4)
        }
        ("array_length", 2) => (F::ArrayLength, vec![first.clone(), Int4], Int4),
        ("array_upper", 2) => (F::ArrayUpper, vec![first.clone(), Int4], Int4),
        ("array_lower", 2) => (F::ArrayLower, vec![first.clone(), Int4], Int4),
        ("cardinality", 1) => (F::Cardinality, vec![first.clone()], Int4),
        ("pg_typeof", 1) => (F::PgTypeof, vec![first.clone()], RegType),
        ("mod", 2) => {
            let t = if first == Unknown {
                Int4
            } else {
                first.clone()
            };
            (F::Mod, same(t.clone()), t)
        }
        // float8 is the preferred type for integers and unknowns; numeric arguments stay exact
        ("sqrt" | "exp" | "ln" | "log" | "log10", 1) => {
            let f = match name {
                "sqrt" => F::Sqrt,
                "exp" => F::Exp,
                "ln" => F::Ln,
                _ => F::Log,
            };
            let t = float8_or_numeric(&first);
            (f, vec![t.clone()], t)
        }
        ("log", 2) => (F::Log, vec![NUMERIC, NUMERIC], NUMERIC),
        ("power" | "pow", 2) => {
            let t = if args.iter().any(|t| matches!(t, Numeric { .. })) {
                NUMERIC
            } else {
                Float8
            };
            (F::Power, vec![t.clone(), t.clone()], t)
        }
        ("left", 2) => (F::Left, vec![Text, Int4], Text),
        ("right", 2) => (F::Right, vec![Text, Int4], Text),
        ("repeat", 2) => (F::Repeat, vec![Text, Int4], Text),
        ("replace", 3) => (F::Replace, text_args(), Text),
        ("md5", 1) if matches!(args[0], Bytea) => (F::Md5Bytea, vec![Bytea], Text),
        ("md5", 1) => (F::Md5, text_args(), Text),
        _ => {
            if let Some(found) = datetime::resolve(name, args) {
                return Ok(found);
            }
            if let Some(found) = json::resolve(name, args) {
                return found;
            }
            let found = string::resolve(name, args)
                .or_else(|| regexp::resolve(name, args))
                .or_else(|| math::resolve(name, args))
                .or_else(|| format::resolve(name, args))
                .or_else(|| bytes::resolve(name, args))
                .or_else(|| array::resolve(name, args));
            match found {
                Some(resolved) => resolved,
                None => return Err(undefined_function(name, args)),
            }
        }
    };
    Ok(r)
}

fn undefined_function(name: &str, args: &[DataType]) -> PgError {
    let shown: Vec<String> = args.iter().map(|t| t.format_type()).collect();
    PgError::new(
                codes::UNDEFINED_FUNCTION,
                format!("function {}({}) does not exist", name, shown.join(", ")),
            )
            .with_hint(
                "No function matches the given name and argument types. You might need to add explicit type casts.",
            )
}

impl ScalarFunc {
    /// Whether the coordinator evaluates this function (it needs session or catalog state).
    pub fn needs_session(self) -> bool {
        (self as u32) < (ScalarFunc::Random as u32)
    }

    /// Whether each call gives a new value (never evaluated once for many rows, never
    /// pushed down).
    pub fn is_volatile(self) -> bool {
        matches!(
            self,
            ScalarFunc::Random
                | ScalarFunc::PgSleep
                | ScalarFunc::GenRandomUuid
                | ScalarFunc::PgCancelBackend
                | ScalarFunc::PgTerminateBackend
                | ScalarFunc::PgStatStatementsReset
                | ScalarFunc::PgStatReset
                | ScalarFunc::PgStatForceNextFlush
        )
    }
}

/// Evaluate a pure function on already-cast arguments.
pub fn eval_pure(func: ScalarFunc, args: Vec<Value>) -> PgResult<Value> {
    use ScalarFunc as F;
    // Every pure function except these returns NULL on any NULL argument.
    let null_tolerant = matches!(
        func,
        F::Concat
            | F::ConcatWs
            | F::Greatest
            | F::Least
            | F::NullIf
            | F::ArrayToString
            | F::PgTypeof
            | F::QuoteNullable
            | F::Format
            | F::ArrayAppend
            | F::ArrayPrepend
            | F::ArrayCat
            | F::ArrayRemove
            | F::StringToArray
            | F::PercentileContFinal
            | F::PercentileDiscFinal
    );
    if !null_tolerant && args.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    let text = |v: &Value| v.as_str().unwrap_or("").to_string();
    let int = |v: &Value| v.as_i64().unwrap_or(0);
    Ok(match func {
        F::Random => Value::Float8(rand_f64()),
        F::GenRandomUuid => Value::Uuid(types::uuid::v4_from_random(rand::random())),
        F::Abs => match &args[0] {
            Value::Int2(v) => Value::Int2(v.checked_abs().ok_or_else(|| out_of_range("smallint"))?),
            Value::Int4(v) => Value::Int4(v.checked_abs().ok_or_else(|| out_of_range("integer"))?),
            Value::Int8(v) => Value::Int8(v.checked_abs().ok_or_else(|| out_of_range("bigint"))?),
            Value::Float4(v) => Value::Float4(v.abs()),
            Value::Float8(v) => Value::Float8(v.abs()),
            Value::Numeric(v) => Value::Numeric(v.abs()),
            other => other.clone(),
        },
        F::Lower => Value::Text(text(&args[0]).to_lowercase()),
        F::Upper => Value::Text(text(&args[0]).to_uppercase()),
        F::Length => Value::Int4(text(&args[0]).chars().count() as i32),
        F::Substr => {
            let s: Vec<char> = text(&args[0]).chars().collect();
            let start = int(&args[1]);
            let (from, to) = match args.get(2) {
                Some(len) => {
                    let len = int(len);
                    if len < 0 {
                        return Err(PgError::new(
                            codes::SUBSTRING_ERROR,
                            "negative substring length not allowed",
                        ));
                    }
                    (start, start.saturating_add(len))
                }
                None => (start, i64::MAX),
            };
            let from = (from.max(1) - 1) as usize;
            let to = (to.max(1) - 1).min(s.len() as i64) as usize;
            Value::Text(if from < to {
                s[from..to].iter().collect()
            } else {
                String::new()
            })
        }
        F::Concat => {
            let mut out = String::new();
            for a in &args {
                if !a.is_null() {
                    out.push_str(&value_to_text(a));
                }
            }
            Value::Text(out)
        }
        F::NullIf => {
            if !args[0].is_null()
                && types::ops::compare(&args[0], &args[1]) == Some(std::cmp::Ordering::Equal)
            {
                Value::Null
            } else {
                args[0].clone()
            }
        }
        F::Greatest | F::Least => {
            let want = if func == F::Greatest {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Less
            };
            let mut best = Value::Null;
            for a in args {
                if a.is_null() {
                    continue;
                }
                if best.is_null() || types::ops::compare(&a, &best) == Some(want) {
                    best = a;
                }
            }
            best
        }
        F::Round | F::Trunc | F::Floor | F::Ceil => round_like(func, &args)?,
        F::Sign => match &args[0] {
            Value::Numeric(n) => Value::Numeric(n.sign()),
            other => {
                let v = other.as_f64().unwrap_or(0.0);
                Value::Float8(if v > 0.0 {
                    1.0
                } else if v < 0.0 {
                    -1.0
                } else {
                    0.0
                })
            }
        },
        F::Div => match (&args[0], &args[1]) {
            (Value::Numeric(a), Value::Numeric(b)) => Value::Numeric(numeric::div_trunc(a, b)?),
            _ => return Err(PgError::internal("div() takes numerics")),
        },
        F::Trim | F::LTrim | F::RTrim => {
            let chars: Vec<char> = args.get(1).map_or(vec![' '], |c| text(c).chars().collect());
            let s = text(&args[0]);
            let strip = |c: char| chars.contains(&c);
            Value::Text(
                match func {
                    F::LTrim => s.trim_start_matches(strip),
                    F::RTrim => s.trim_end_matches(strip),
                    _ => s.trim_matches(strip),
                }
                .to_string(),
            )
        }
        // Elements of every dimension in order; NULLs left out, or written as the third
        // argument when there is one (and it is not NULL).
        F::ArrayToString => match (&args[0], &args[1]) {
            (Value::Array(_), sep) if !sep.is_null() => {
                let null = args.get(2).filter(|n| !n.is_null()).map(&text);
                let parts: Vec<String> = array::flat(&args[0])
                    .into_iter()
                    .filter_map(|v| match v {
                        Value::Null => null.clone(),
                        v => Some(value_to_text(v)),
                    })
                    .collect();
                Value::Text(parts.join(&text(sep)))
            }
            _ => Value::Null,
        },
        F::ArraySubscript => {
            let i = int(&args[1]);
            match &args[0] {
                Value::Array(items) if i >= 1 => {
                    items.get(i as usize - 1).cloned().unwrap_or(Value::Null)
                }
                _ => Value::Null,
            }
        }
        F::ArraySlice => match &args[0] {
            // (a multidimensional array is held as an array of arrays: corpus known
            // differences)
            Value::Array(items) if items.iter().any(|v| matches!(v, Value::Array(_))) => {
                return Err(PgError::unsupported("slices of multidimensional arrays"))
            }
            Value::Array(items) => {
                let lower = int(&args[1]).max(1);
                let upper = int(&args[2]).min(items.len() as i64);
                Value::Array(if lower <= upper {
                    items[lower as usize - 1..upper as usize].to_vec()
                } else {
                    Vec::new()
                })
            }
            _ => Value::Null,
        },
        F::ArrayPosition => match &args[0] {
            Value::Array(items) => items
                .iter()
                .position(|v| types::ops::compare(v, &args[1]) == Some(std::cmp::Ordering::Equal))
                .map(|i| Value::Int4(i as i32 + 1))
                .unwrap_or(Value::Null),
            _ => Value::Null,
        },
        F::ArrayLength | F::ArrayUpper | F::Cardinality => match &args[0] {
            Value::Array(items)
                if !items.is_empty() && (func == F::Cardinality || int(&args[1]) == 1) =>
            {
                Value::Int4(items.len() as i32)
            }
            Value::Array(_) if func == F::Cardinality => Value::Int4(0),
            _ => Value::Null,
        },
        F::ArrayLower => match &args[0] {
            Value::Array(items) if !items.is_empty() && int(&args[1]) == 1 => Value::Int4(1),
            _ => Value::Null,
        },
        F::PgTypeof => unreachable!("pg_typeof is folded by the binder"),
        F::Mod => types::ops::eval_binary(types::ops::BinaryOp::Mod, &args[0], &args[1])?,
        F::Sqrt | F::Exp | F::Ln | F::Log | F::Power if matches!(args[0], Value::Numeric(_)) => {
            numeric_function(func, &args)?
        }
        F::Sqrt => {
            let v = args[0].as_f64().unwrap_or(0.0);
            if v < 0.0 {
                return Err(PgError::new(
                    codes::INVALID_ARGUMENT_FOR_POWER,
                    "cannot take square root of a negative number",
                ));
            }
            Value::Float8(v.sqrt())
        }
        F::Exp => Value::Float8(args[0].as_f64().unwrap_or(0.0).exp()),
        F::Ln => {
            let v = args[0].as_f64().unwrap_or(0.0);
            if v <= 0.0 {
                let msg = if v == 0.0 {
                    "cannot take logarithm of zero"
                } else {
                    "cannot take logarithm of a negative number"
                };
                return Err(PgError::new(codes::INVALID_ARGUMENT_FOR_LOG, msg));
            }
            Value::Float8(v.ln())
        }
        F::Log => {
            let v = args[0].as_f64().unwrap_or(0.0);
            if v <= 0.0 {
                let msg = if v == 0.0 {
                    "cannot take logarithm of zero"
                } else {
                    "cannot take logarithm of a negative number"
                };
                return Err(PgError::new(codes::INVALID_ARGUMENT_FOR_LOG, msg));
            }
            Value::Float8(v.log10())
        }
        F::Power => types::ops::eval_binary(types::ops::BinaryOp::Pow, &args[0], &args[1])?,
        F::Left | F::Right => {
            let s: Vec<char> = text(&args[0]).chars().collect();
            let n = int(&args[1]);
            let len = s.len() as i64;
            let keep = if n >= 0 { n.min(len) } else { (len + n).max(0) } as usize;
            Value::Text(if func == F::Left {
                s[..keep].iter().collect()
            } else {
                s[s.len() - keep..].iter().collect()
            })
        }
        F::Repeat => {
            let n = int(&args[1]).max(0) as usize;
            let s = text(&args[0]);
            if s.len().saturating_mul(n) > 1 << 30 {
                return Err(PgError::new(
                    codes::PROGRAM_LIMIT_EXCEEDED,
                    "requested length too large",
                ));
            }
            Value::Text(s.repeat(n))
        }
        F::Replace => Value::Text(text(&args[0]).replace(&text(&args[1]), &text(&args[2]))),
        F::Md5 => {
            use md5::Digest;
            let digest = md5::Md5::digest(text(&args[0]).as_bytes());
            Value::Text(digest.iter().map(|b| format!("{b:02x}")).collect())
        }
        F::Pi
        | F::Scale
        | F::WidthBucket
        | F::Atan2
        | F::Cbrt
        | F::Sin
        | F::Cos
        | F::Tan
        | F::Cot
        | F::Asin
        | F::Acos
        | F::Atan
        | F::Degrees
        | F::Radians => math::eval(func, &args)?,
        F::Chr
        | F::Ascii
        | F::Lpad
        | F::Rpad
        | F::SplitPart
        | F::Strpos
        | F::Initcap
        | F::Reverse
        | F::Translate
        | F::StartsWith
        | F::ToHex
        | F::OctetLength
        | F::BitLength
        | F::ConcatWs
        | F::StringToArray
        | F::SimilarTo => string::eval(func, &args)?,
        F::RegexpReplace
        | F::RegexpMatch
        | F::RegexpMatches
        | F::RegexpSplitToArray
        | F::RegexpSplitToTable
        | F::RegexpCount
        | F::RegexpInstr
        | F::RegexpSubstr
        | F::RegexpLike => regexp::eval(func, &args)?,
        F::QuoteIdent | F::QuoteLiteral | F::QuoteNullable | F::Format | F::ToCharNumber => {
            format::eval(func, &args)?
        }
        F::Encode | F::Decode => bytes::eval(func, &args)?,
        F::Sha224 | F::Sha256 | F::Sha384 | F::Sha512 | F::Md5Bytea => {
            bytes::digest(func, &args[0])?
        }
        F::ArrayAppend
        | F::ArrayPrepend
        | F::ArrayCat
        | F::ArrayRemove
        | F::ArrayNdims
        | F::ArrayDims
        | F::ArrayContains
        | F::ArrayContained
        | F::ArrayOverlap => array::eval(func, &args)?,
        F::JsonField
        | F::JsonFieldText
        | F::JsonElement
        | F::JsonElementText
        | F::JsonPath
        | F::JsonPathText
        | F::JsonExtractPath
        | F::JsonExtractPathText
        | F::JsonTypeof
        | F::JsonArrayLength
        | F::JsonbField
        | F::JsonbFieldText
        | F::JsonbElement
        | F::JsonbElementText
        | F::JsonbPath
        | F::JsonbPathText
        | F::JsonbExtractPath
        | F::JsonbExtractPathText
        | F::JsonbContains
        | F::JsonbContained
        | F::JsonbExists
        | F::JsonbExistsAny
        | F::JsonbExistsAll
        | F::JsonbConcat
        | F::JsonbDeleteKey
        | F::JsonbDeleteKeys
        | F::JsonbDeleteIndex
        | F::JsonbDeletePath
        | F::JsonbSet
        | F::JsonbTypeof
        | F::JsonbArrayLength
        | F::JsonbStripNulls
        | F::JsonbPretty
        | F::JsonbSetColumn
        | F::JsonSetColumn => json::eval(func, &args)?,
        F::PercentileContFinal | F::PercentileDiscFinal => {
            let [values, fraction] = <[Value; 2]>::try_from(args)
                .map_err(|_| PgError::internal("a percentile takes two arguments"))?;
            ordered_set::percentile_final(values, fraction, func == F::PercentileContFinal)?
        }
        session => {
            return Err(PgError::internal(format!(
                "{session:?} must be evaluated by the session"
            )))
        }
    })
}

/// Evaluate a function that needs the session's time zone (`ScalarFunc::needs_zone`).
pub fn eval_zoned(
    func: ScalarFunc,
    args: Vec<Value>,
    zone: &types::timezone::Zone,
) -> PgResult<Value> {
    if func.builds_json() {
        json::eval_zoned(func, args, zone)
    } else {
        datetime::eval(func, args, zone)
    }
}

fn round_like(func: ScalarFunc, args: &[Value]) -> PgResult<Value> {
    let scale = args.get(1).and_then(Value::as_i64).unwrap_or(0);
    let float = |v: f64| match func {
        ScalarFunc::Floor => v.floor(),
        ScalarFunc::Ceil => v.ceil(),
        ScalarFunc::Trunc => v.trunc(),
        _ => v.round_ties_even(),
    };
    Ok(match &args[0] {
        // round(float8) is C's rint(): halves go to the even neighbour.
        Value::Float8(v) => Value::Float8(float(*v)),
        Value::Float4(v) => Value::Float4(float(*v as f64) as f32),
        Value::Numeric(d) => Value::Numeric(match func {
            ScalarFunc::Floor => d.floor()?,
            ScalarFunc::Ceil => d.ceil()?,
            ScalarFunc::Trunc => d.trunc(scale)?,
            _ => d.round(scale)?,
        }),
        other => other.clone(),
    })
}

/// sqrt, exp, ln, log and power on numerics (exact, PostgreSQL's result scales).
fn numeric_function(func: ScalarFunc, args: &[Value]) -> PgResult<Value> {
    let arg = |i: usize| match args.get(i) {
        Some(Value::Numeric(n)) => Ok(n),
        _ => Err(PgError::internal(
            "numeric function without numeric arguments",
        )),
    };
    Ok(Value::Numeric(match (func, args.len()) {
        (ScalarFunc::Sqrt, _) => numeric::sqrt(arg(0)?)?,
        (ScalarFunc::Exp, _) => numeric::exp(arg(0)?)?,
        (ScalarFunc::Ln, _) => numeric::ln(arg(0)?)?,
        (ScalarFunc::Log, 1) => numeric::log(&Numeric::from(10), arg(0)?)?,
        (ScalarFunc::Log, _) => numeric::log(arg(0)?, arg(1)?)?,
        _ => numeric::pow(arg(0)?, arg(1)?)?,
    }))
}

fn out_of_range(type_name: &str) -> PgError {
    PgError::new(
        codes::NUMERIC_VALUE_OUT_OF_RANGE,
        format!("{type_name} out of range"),
    )
}

/// Text form of a value for string building (concat, array_to_string).
pub fn value_to_text(v: &Value) -> String {
    let mut out = Vec::new();
    types::io::to_text(v, &v.natural_type(), &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// A fast, per-thread xorshift generator: `random()` needs no cryptographic quality.
fn rand_f64() -> f64 {
    use std::cell::Cell;
    thread_local! {
        static STATE: Cell<u64> = Cell::new(
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0x9e3779b97f4a7c15) | 1,
        );
    }
    STATE.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        (x >> 11) as f64 / (1u64 << 53) as f64
    })
}

//! PostgreSQL-style errors shared by every Meridian crate.
//!
//! Every failure that can reach a client carries a SQLSTATE from the start, so the
//! coordinator never has to guess a code from a message. Codes follow PostgreSQL's
//! `errcodes.txt`.

use std::fmt;

/// How bad an error is, as PostgreSQL reports it in the `S`/`V` fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// Ends the statement (and marks an open transaction failed).
    Error,
    /// Ends the session.
    Fatal,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "ERROR",
            Severity::Fatal => "FATAL",
        }
    }
}

/// A PostgreSQL error: SQLSTATE, message and the optional fields clients display.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgError {
    pub severity: Severity,
    pub code: &'static str,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
    /// 1-based character offset into the query text, as in the `P` field.
    pub position: Option<u32>,
}

pub type PgResult<T> = Result<T, PgError>;

impl PgError {
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        PgError {
            severity: Severity::Error,
            code,
            message: message.into(),
            detail: None,
            hint: None,
            position: None,
        }
    }

    pub fn fatal(code: &'static str, message: impl Into<String>) -> Self {
        PgError {
            severity: Severity::Fatal,
            ..PgError::new(code, message)
        }
    }

    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn with_position(mut self, position: u32) -> Self {
        self.position = Some(position);
        self
    }

    /// 0A000 with a message naming the missing feature ("not supported yet: foreign keys").
    pub fn unsupported(feature: impl fmt::Display) -> Self {
        PgError::new(
            codes::FEATURE_NOT_SUPPORTED,
            format!("not supported yet: {feature}"),
        )
    }

    /// XX000: a broken invariant inside Meridian; never expected.
    pub fn internal(message: impl Into<String>) -> Self {
        PgError::new(codes::INTERNAL_ERROR, message)
    }

    /// 58030: the storage layer failed to read or write.
    pub fn io(context: &str, err: impl fmt::Display) -> Self {
        PgError::new(codes::IO_ERROR, format!("{context}: {err}"))
    }
}

impl fmt::Display for PgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.severity.as_str(),
            self.code,
            self.message
        )
    }
}

impl std::error::Error for PgError {}

/// SQLSTATE codes used by Meridian (names as in PostgreSQL's errcodes.txt).
pub mod codes {
    /// Declares each SQLSTATE as a constant and lists them all in `ALL`.
    macro_rules! sqlstates {
        ($($name:ident = $code:literal;)*) => {
            $(pub const $name: &str = $code;)*
            /// Every SQLSTATE above, so a code that crossed a network can be matched back
            /// to its constant (`super::PgError::code` is `&'static str`).
            pub const ALL: &[&str] = &[$($code),*];
        };
    }

    sqlstates! {
        SUCCESSFUL_COMPLETION = "00000";
        WARNING = "01000";
        PRIVILEGE_NOT_REVOKED = "01006";
        PRIVILEGE_NOT_GRANTED = "01007";
        NO_ACTIVE_SQL_TRANSACTION = "25P01";
        ACTIVE_SQL_TRANSACTION = "25001";
        IN_FAILED_SQL_TRANSACTION = "25P02";
        READ_ONLY_SQL_TRANSACTION = "25006";
        CONNECTION_EXCEPTION = "08000";
        CONNECTION_FAILURE = "08006";
        TRANSACTION_RESOLUTION_UNKNOWN = "08007";
        PROTOCOL_VIOLATION = "08P01";
        FEATURE_NOT_SUPPORTED = "0A000";
        CARDINALITY_VIOLATION = "21000";
        DATA_EXCEPTION = "22000";
        STRING_DATA_RIGHT_TRUNCATION = "22001";
        NUMERIC_VALUE_OUT_OF_RANGE = "22003";
        NULL_VALUE_NOT_ALLOWED = "22004";
        INVALID_PRECEDING_OR_FOLLOWING_SIZE = "22013";
        INVALID_ARGUMENT_FOR_NTILE = "22014";
        INVALID_ARGUMENT_FOR_NTH_VALUE = "22016";
        INVALID_DATETIME_FORMAT = "22007";
        DATETIME_FIELD_OVERFLOW = "22008";
        INVALID_TIME_ZONE_DISPLACEMENT_VALUE = "22009";
        DIVISION_BY_ZERO = "22012";
        SUBSTRING_ERROR = "22011";
        INVALID_ROW_COUNT_IN_LIMIT = "2201W";
        INVALID_ARGUMENT_FOR_LOG = "2201E";
        INVALID_ARGUMENT_FOR_POWER = "2201F";
        INVALID_PARAMETER_VALUE = "22023";
        SEQUENCE_GENERATOR_LIMIT_EXCEEDED = "2200H";
        INVALID_REGULAR_EXPRESSION = "2201B";
        INVALID_TEXT_REPRESENTATION = "22P02";
        INVALID_BINARY_REPRESENTATION = "22P03";
        BAD_COPY_FILE_FORMAT = "22P04";
        INVALID_SAVEPOINT_SPECIFICATION = "3B001";
        CHARACTER_NOT_IN_REPERTOIRE = "22021";
        UNTRANSLATABLE_CHARACTER = "22P05";
        INVALID_ESCAPE_SEQUENCE = "22025";
        INTEGRITY_CONSTRAINT_VIOLATION = "23000";
        NOT_NULL_VIOLATION = "23502";
        FOREIGN_KEY_VIOLATION = "23503";
        UNIQUE_VIOLATION = "23505";
        CHECK_VIOLATION = "23514";
        DEPENDENT_OBJECTS_STILL_EXIST = "2BP01";
        GENERATED_ALWAYS = "428C9";
        INVALID_CURSOR_STATE = "24000";
        INVALID_TRANSACTION_STATE = "25000";
        INVALID_SQL_STATEMENT_NAME = "26000";
        INVALID_AUTHORIZATION_SPECIFICATION = "28000";
        INVALID_PASSWORD = "28P01";
        INVALID_CURSOR_NAME = "34000";
        SERIALIZATION_FAILURE = "40001";
        DEADLOCK_DETECTED = "40P01";
        SYNTAX_ERROR = "42601";
        INSUFFICIENT_PRIVILEGE = "42501";
        INVALID_GRANT_OPERATION = "0LP01";
        UNDEFINED_COLUMN = "42703";
        UNDEFINED_FUNCTION = "42883";
        UNDEFINED_TABLE = "42P01";
        UNDEFINED_PARAMETER = "42P02";
        UNDEFINED_OBJECT = "42704";
        DUPLICATE_COLUMN = "42701";
        DUPLICATE_TABLE = "42P07";
        DUPLICATE_OBJECT = "42710";
        RESERVED_NAME = "42939";
        DUPLICATE_PREPARED_STATEMENT = "42P05";
        DUPLICATE_CURSOR = "42P03";
        AMBIGUOUS_COLUMN = "42702";
        AMBIGUOUS_FUNCTION = "42725";
        DATATYPE_MISMATCH = "42804";
        INDETERMINATE_DATATYPE = "42P18";
        GROUPING_ERROR = "42803";
        INVALID_TABLE_DEFINITION = "42P16";
        INVALID_COLUMN_REFERENCE = "42P10";
        INVALID_FOREIGN_KEY = "42830";
        INVALID_PARAMETER_REFERENCE = "42P04";
        WRONG_OBJECT_TYPE = "42809";
        WINDOWING_ERROR = "42P20";
        DUPLICATE_ALIAS = "42712";
        INVALID_OBJECT_DEFINITION = "42P17";
        INVALID_NAME = "42602";
        UNDEFINED_DATABASE = "3D000";
        INVALID_CATALOG_NAME = "3D000";
        INVALID_SCHEMA_NAME = "3F000";
        PROGRAM_LIMIT_EXCEEDED = "54000";
        STATEMENT_TOO_COMPLEX = "54001";
        TOO_MANY_CONNECTIONS = "53300";
        DISK_FULL = "53100";
        OUT_OF_MEMORY = "53200";
        OBJECT_NOT_IN_PREREQUISITE_STATE = "55000";
        OBJECT_IN_USE = "55006";
        LOCK_NOT_AVAILABLE = "55P03";
        QUERY_CANCELED = "57014";
        IDLE_IN_TRANSACTION_SESSION_TIMEOUT = "25P03";
        CANT_CHANGE_RUNTIME_PARAM = "55P02";
        ADMIN_SHUTDOWN = "57P01";
        CANNOT_CONNECT_NOW = "57P03";
        IO_ERROR = "58030";
        CONFIG_FILE_ERROR = "F0000";
        INTERNAL_ERROR = "XX000";
        DATA_CORRUPTED = "XX001";
    }

    /// The constant for SQLSTATE `code`, if Meridian uses it.
    pub fn known(code: &str) -> Option<&'static str> {
        ALL.iter().copied().find(|c| *c == code)
    }
}

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
    pub const SUCCESSFUL_COMPLETION: &str = "00000";
    pub const WARNING: &str = "01000";
    pub const NO_ACTIVE_SQL_TRANSACTION: &str = "25P01";
    pub const ACTIVE_SQL_TRANSACTION: &str = "25001";
    pub const IN_FAILED_SQL_TRANSACTION: &str = "25P02";
    pub const READ_ONLY_SQL_TRANSACTION: &str = "25006";
    pub const CONNECTION_EXCEPTION: &str = "08000";
    pub const CONNECTION_FAILURE: &str = "08006";
    pub const PROTOCOL_VIOLATION: &str = "08P01";
    pub const FEATURE_NOT_SUPPORTED: &str = "0A000";
    pub const CARDINALITY_VIOLATION: &str = "21000";
    pub const DATA_EXCEPTION: &str = "22000";
    pub const STRING_DATA_RIGHT_TRUNCATION: &str = "22001";
    pub const NUMERIC_VALUE_OUT_OF_RANGE: &str = "22003";
    pub const NULL_VALUE_NOT_ALLOWED: &str = "22004";
    pub const INVALID_DATETIME_FORMAT: &str = "22007";
    pub const DATETIME_FIELD_OVERFLOW: &str = "22008";
    pub const DIVISION_BY_ZERO: &str = "22012";
    pub const SUBSTRING_ERROR: &str = "22011";
    pub const INVALID_ROW_COUNT_IN_LIMIT: &str = "2201W";
    pub const INVALID_ARGUMENT_FOR_LOG: &str = "2201E";
    pub const INVALID_ARGUMENT_FOR_POWER: &str = "2201F";
    pub const INVALID_PARAMETER_VALUE: &str = "22023";
    pub const INVALID_REGULAR_EXPRESSION: &str = "2201B";
    pub const INVALID_TEXT_REPRESENTATION: &str = "22P02";
    pub const INVALID_BINARY_REPRESENTATION: &str = "22P03";
    pub const BAD_COPY_FILE_FORMAT: &str = "22P04";
    pub const INVALID_SAVEPOINT_SPECIFICATION: &str = "3B001";
    pub const CHARACTER_NOT_IN_REPERTOIRE: &str = "22021";
    pub const INVALID_ESCAPE_SEQUENCE: &str = "22025";
    pub const INTEGRITY_CONSTRAINT_VIOLATION: &str = "23000";
    pub const NOT_NULL_VIOLATION: &str = "23502";
    pub const FOREIGN_KEY_VIOLATION: &str = "23503";
    pub const UNIQUE_VIOLATION: &str = "23505";
    pub const CHECK_VIOLATION: &str = "23514";
    pub const INVALID_CURSOR_STATE: &str = "24000";
    pub const INVALID_TRANSACTION_STATE: &str = "25000";
    pub const INVALID_SQL_STATEMENT_NAME: &str = "26000";
    pub const INVALID_AUTHORIZATION_SPECIFICATION: &str = "28000";
    pub const INVALID_PASSWORD: &str = "28P01";
    pub const INVALID_CURSOR_NAME: &str = "34000";
    pub const SERIALIZATION_FAILURE: &str = "40001";
    pub const DEADLOCK_DETECTED: &str = "40P01";
    pub const SYNTAX_ERROR: &str = "42601";
    pub const INSUFFICIENT_PRIVILEGE: &str = "42501";
    pub const UNDEFINED_COLUMN: &str = "42703";
    pub const UNDEFINED_FUNCTION: &str = "42883";
    pub const UNDEFINED_TABLE: &str = "42P01";
    pub const UNDEFINED_PARAMETER: &str = "42P02";
    pub const UNDEFINED_OBJECT: &str = "42704";
    pub const DUPLICATE_COLUMN: &str = "42701";
    pub const DUPLICATE_TABLE: &str = "42P07";
    pub const DUPLICATE_OBJECT: &str = "42710";
    pub const DUPLICATE_PREPARED_STATEMENT: &str = "42P05";
    pub const DUPLICATE_CURSOR: &str = "42P03";
    pub const AMBIGUOUS_COLUMN: &str = "42702";
    pub const AMBIGUOUS_FUNCTION: &str = "42725";
    pub const DATATYPE_MISMATCH: &str = "42804";
    pub const INDETERMINATE_DATATYPE: &str = "42P18";
    pub const GROUPING_ERROR: &str = "42803";
    pub const INVALID_TABLE_DEFINITION: &str = "42P16";
    pub const INVALID_COLUMN_REFERENCE: &str = "42P10";
    pub const INVALID_PARAMETER_REFERENCE: &str = "42P04";
    pub const WRONG_OBJECT_TYPE: &str = "42809";
    pub const INVALID_NAME: &str = "42602";
    pub const UNDEFINED_DATABASE: &str = "3D000";
    pub const INVALID_CATALOG_NAME: &str = "3D000";
    pub const INVALID_SCHEMA_NAME: &str = "3F000";
    pub const PROGRAM_LIMIT_EXCEEDED: &str = "54000";
    pub const TOO_MANY_CONNECTIONS: &str = "53300";
    pub const DISK_FULL: &str = "53100";
    pub const OUT_OF_MEMORY: &str = "53200";
    pub const OBJECT_NOT_IN_PREREQUISITE_STATE: &str = "55000";
    pub const LOCK_NOT_AVAILABLE: &str = "55P03";
    pub const QUERY_CANCELED: &str = "57014";
    pub const IDLE_IN_TRANSACTION_SESSION_TIMEOUT: &str = "25P03";
    pub const CANT_CHANGE_RUNTIME_PARAM: &str = "55P02";
    pub const ADMIN_SHUTDOWN: &str = "57P01";
    pub const CANNOT_CONNECT_NOW: &str = "57P03";
    pub const IO_ERROR: &str = "58030";
    pub const INTERNAL_ERROR: &str = "XX000";
    pub const DATA_CORRUPTED: &str = "XX001";
}
